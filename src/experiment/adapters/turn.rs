//! What one agent turn is given and how it ended, whichever adapter runs it.

use super::confined;
use std::path::PathBuf;
use std::time::Duration;

/// What one turn is given.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The prompt, written to a file.
    pub prompt_file: PathBuf,
    /// 1-based.
    pub round: u32,
    /// The run's session id (the critic's too).
    pub session: String,
    /// The run's workspace.
    pub workspace: PathBuf,
    /// Where the agent may write its transcript, in any format the host
    /// reads; the runner records the turn itself when it does not.
    pub events_file: PathBuf,
    /// Where the turn's output goes.
    pub log_file: PathBuf,
    /// The turn's wall-clock limit.
    pub timeout: Duration,
    /// Directories put first on PATH (the experiment's interpreter's).
    pub path_prefix: Vec<PathBuf>,
    /// More variables for the agent.
    pub env: Vec<(String, String)>,
    /// Start from an empty environment (PATH, LANG and TZ kept) instead of
    /// the runner's: real agents get exactly what they need, not the
    /// runner's secrets.
    pub clean_env: bool,
    /// Variables of the runner's the turn never gets, whatever else says
    /// (the model's real key, which only the proxy uses).
    pub hidden_env: Vec<String>,
    /// The turn's confinement; `None` with `--unconfined-agents`.
    pub confine: Option<confined::Reach>,
    /// Set by the run's model proxy when it has ended the run (a budget
    /// spent, a replay departed): the turn is killed at once.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEnd {
    /// The agent exited (its finish), with this code (`None`: by a signal).
    Exited(Option<i32>),
    /// The limit was reached; the agent's process group was killed.
    TimedOut,
    /// The kernel killed a process of the turn for going past its memory
    /// limit (`agent.limits.memory`).
    MemoryLimit,
    /// The agent could not be started: an infrastructure error.
    NotStarted(String),
    /// The run's model proxy ended the run (see [`Turn::stop`]); the
    /// agent's process group was killed.
    Stopped,
}

/// A turn's end and its wall time.
#[derive(Debug, Clone)]
pub struct TurnResult {
    /// How it ended.
    pub end: TurnEnd,
    /// Its wall time.
    pub duration: Duration,
    /// The last lines the agent printed (its final message, for the
    /// runner's record of the turn).
    pub output_tail: String,
}

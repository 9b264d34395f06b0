//! An agent whose finish boundary is its own Stop hook: the runner installs
//! `critic hook <agent>` in a home of the run's own (user scope, so nothing
//! lands in the workspace), runs the agent once on the task prompt, and
//! reads what the hook judged from its `--verdict-log`. The agent gets a
//! clean environment: its model's address and key, and nothing else of the
//! runner's.

use super::{command, Turn, TurnResult};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// One session to run.
pub struct Session<'a> {
    /// `claude-code`, `codex` or `openhands`: the hook protocol's name; `None` for an
    /// agent that runs the critic itself (mini-swe-agent's `CriticAgent`),
    /// given the verdict log by its adapter.
    pub agent: Option<&'a str>,
    /// The program and its arguments (the prompt among them).
    pub argv: Vec<String>,
    /// Variables the agent needs (its model's, its home's).
    pub env: Vec<(String, String)>,
    /// The hook configuration file the install writes (under the run's home).
    pub hook_file: PathBuf,
    /// Variables `critic hook install` needs to find that file.
    pub install_env: Vec<(String, String)>,
    /// More flags for the hook call.
    pub hook_args: Vec<String>,
    /// The run's directory.
    pub dir: &'a Path,
    /// The workspace.
    pub workspace: &'a Path,
    /// The arm's skill.
    pub skill: &'a Path,
    /// The `critic` binary.
    pub critic: &'a Path,
    /// More flags for every check (confinement).
    pub check_flags: &'a [String],
    /// Rejections the hook allows before it lets the agent stop.
    pub max_rejections: u32,
    /// The whole session's limit.
    pub timeout: Duration,
    /// Directories put first on PATH.
    pub path_prefix: Vec<PathBuf>,
}

/// How a session went.
pub struct Outcome {
    /// The agent's run.
    pub turn: TurnResult,
    /// Every verdict the hook gave, in order.
    pub verdicts: Vec<Value>,
    /// The hook's configuration changed while the agent ran (it could have
    /// switched the critic off).
    pub hook_changed: bool,
}

/// The most of the verdict log (and of the hook's configuration) read.
const MAX_LOG_BYTES: u64 = 256 << 20;

/// `file`'s SHA-256, `None` when it cannot be read.
fn digest(file: &Path) -> Option<String> {
    crate::sys::bounded_read::read_regular_file_nofollow(file, MAX_LOG_BYTES)
        .ok()
        .map(|b| hex::encode(Sha256::digest(b)))
}

/// The file the verdicts of a session go to.
pub fn verdict_log(dir: &Path) -> PathBuf {
    dir.join("verdicts.jsonl")
}

/// Install the hook, run the agent, read the verdicts. `Err`: the hook
/// could not be installed (an infrastructure error).
pub fn run(s: &Session) -> Result<Outcome, String> {
    let log = verdict_log(s.dir);
    let installed = match s.agent {
        Some(agent) => Some(install(s, agent, &log)?),
        None => None,
    };
    let mut env = s.env.clone();
    // The hook's checks share the compiled components of the runner's.
    if let Some(cache) = std::env::var_os("CRITIC_CACHE_DIR") {
        env.push((
            "CRITIC_CACHE_DIR".into(),
            cache.to_string_lossy().into_owned(),
        ));
    }
    let turn = Turn {
        prompt_file: s.dir.join("round-1/prompt.md"),
        round: 1,
        session: String::new(),
        workspace: s.workspace.to_path_buf(),
        events_file: s.dir.join("transcript"),
        log_file: s.dir.join("round-1/agent.log"),
        timeout: s.timeout,
        path_prefix: s.path_prefix.clone(),
        env,
        clean_env: true,
    };
    let result = command::run(&s.argv, &turn);
    // Where the agent could have put a FIFO or a link: read without
    // blocking or following; one that is not a file gives no verdicts.
    let log_bytes = crate::sys::bounded_read::read_regular_file_nofollow(&log, MAX_LOG_BYTES)
        .unwrap_or_default();
    let verdicts = String::from_utf8_lossy(&log_bytes)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    Ok(Outcome {
        turn: result,
        verdicts,
        hook_changed: installed.is_some_and(|digest| self::digest(&s.hook_file) != Some(digest)),
    })
}

/// Install `agent`'s Stop hook for the session; the digest of the file it
/// wrote.
fn install(s: &Session, agent: &str, log: &Path) -> Result<String, String> {
    let state = s.dir.join("state");
    let mut install = Command::new(s.critic);
    install
        .args(["hook", "install", agent, "--scope", "user", "--skill"])
        .arg(s.skill)
        .arg("--timeout")
        .arg(s.timeout.as_secs().clamp(60, 3600).to_string())
        .arg("--")
        .arg("--state-dir")
        .arg(&state)
        .arg("--verdict-log")
        .arg(log)
        .arg("--max-rejections")
        .arg(s.max_rejections.to_string())
        .args(&s.hook_args)
        .args(s.check_flags)
        .envs(s.install_env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null());
    let out = install
        .output()
        .map_err(|e| format!("cannot start {}: {e}", s.critic.display()))?;
    if !out.status.success() {
        return Err(format!(
            "critic hook install {agent}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    digest(&s.hook_file).ok_or_else(|| {
        format!(
            "critic hook install {agent} wrote no {}",
            s.hook_file.display()
        )
    })
}

/// Copy the newest file under `dir` whose name ends with `suffix` to `to`
/// (the agent's transcript, kept with the run); whether one was found.
pub fn keep_newest(dir: &Path, suffix: &str, to: &Path) -> bool {
    fn walk(dir: &Path, suffix: &str, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => walk(&path, suffix, found),
                Ok(t) if t.is_file() && path.to_string_lossy().ends_with(suffix) => {
                    found.push(path)
                }
                _ => {}
            }
        }
    }
    let mut found = Vec::new();
    walk(dir, suffix, &mut found);
    let newest = found
        .into_iter()
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok());
    // The agent's file, copied to the runner's: read without following a
    // link or blocking on a FIFO, written through nothing planted at `to`.
    newest.is_some_and(|p| {
        crate::sys::bounded_read::read_regular_file_nofollow(&p, MAX_LOG_BYTES)
            .and_then(|bytes| crate::sys::atomic_file::write(to, &bytes, false))
            .is_ok()
    })
}

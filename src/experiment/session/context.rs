//! What a run's parts share: the run's context and job, its turns so far,
//! why it failed, and the small steps every kind of turn takes (the
//! model's budget spent, links planted in the run's directory, the
//! critic's verdict read, the patch saved).

use crate::experiment::adapters;
use crate::experiment::adapters::confined::Reach;
use crate::experiment::arm;
use crate::experiment::db::{Round, RunKey, Status};
use crate::experiment::file::Experiment;
use crate::experiment::model_proxy::{self, ModelProxy};
use crate::grading::dataset::Instance;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How long the runner waits for one `critic check`: far more than any
/// skill's checks take, so that only a check that hangs reaches it.
pub(super) const CHECK_TIME_LIMIT: Duration = Duration::from_secs(30 * 60);

/// Why the run ends when the agent left a link, FIFO or device in the
/// run's directory, where the runner writes next.
pub(super) fn planted_in(dir: &Path) -> Option<(&'static str, String)> {
    link_within(dir).map(|link| {
        (
            "planted_links",
            format!(
                "{}: a link, FIFO or device where the runner writes",
                link.display()
            ),
        )
    })
}

/// What every run of an experiment shares.
pub struct Context<'a> {
    /// The experiment.
    pub experiment: &'a Experiment,
    /// The `critic` binary the finish boundary calls.
    pub critic: &'a Path,
    /// Flags every check gets (cache, confinement).
    pub check_flags: &'a [String],
    /// Where workspaces are made.
    pub work_dir: &'a Path,
    /// The output directory, which holds every run's directory.
    pub out: &'a Path,
    /// Whether agents' turns run confined (see [`adapters::confined`]).
    pub confine_agents: bool,
    /// What the experiment has spent, and its cap.
    pub spending: Arc<model_proxy::Spending>,
    /// An earlier output directory whose recordings answer the model calls.
    pub replay: Option<&'a Path>,
    /// Past a replay's departure, go on against the model.
    pub replay_then_live: bool,
}
impl Context<'_> {
    /// The confinement of `job`'s turns (`None`: unconfined), with the
    /// judge at `judge_socket` for a hooked agent and the run's model proxy
    /// (`model`).
    pub(super) fn reach(
        &self,
        job: &Job,
        judge_socket: Option<&Path>,
        model: Option<&Arc<ModelProxy>>,
    ) -> Result<Option<Reach>, Failed> {
        if !self.confine_agents {
            return Ok(None);
        }
        // What the agent must not read: every run's files (the gold
        // control's patch among them), the user's clones, the instances
        // with their golden patches, critic's cache (the pre-flights' logs
        // quote the golden tests; its environment is shown again, below).
        let mut covered = vec![
            self.out.to_path_buf(),
            self.experiment.repos.clone(),
            job.repo.clone(),
            self.experiment.instances.clone(),
        ];
        covered.extend(
            crate::sys::private_dir::cache_root()
                .filter(|p| !crate::sandbox::confine::in_private_dir(p)),
        );
        // Where grading's scratch copies are (a gold control's among them),
        // unless the turn gets that place empty and its own anyway.
        let scratch = [
            crate::sandbox::scratch::scratch_root(),
            std::env::temp_dir(),
        ];
        covered.extend(
            scratch
                .into_iter()
                .filter(|p| !crate::sandbox::confine::in_private_dir(p)),
        );
        // The interpreter (its environment lies in critic's cache, or
        // under the output directory) and `critic`, which a Stop hook runs.
        let seen = vec![job.python.clone(), self.critic.to_path_buf()];
        Reach::new(
            &job.dir,
            covered,
            seen,
            model.cloned(),
            &self.experiment.agent.network,
            judge_socket,
        )
        .map(|r| {
            let limits = &self.experiment.agent.limits;
            Some(r.with_limits(limits.tmp_bytes, limits.memory_bytes))
        })
        .map_err(|e| infra("confinement", e))
    }
}
/// One run to make.
pub struct Job<'a> {
    /// Which.
    pub key: RunKey,
    /// Its instance.
    pub instance: &'a Instance,
    /// Its arm.
    pub arm: &'a arm::Prepared,
    /// Its directory (emptied first).
    pub dir: PathBuf,
    /// The interpreter.
    pub python: PathBuf,
    /// The user's clone it starts from.
    pub repo: PathBuf,
    /// The grader's copy, which holds `base`.
    pub copy: PathBuf,
    /// The commit the run starts from and its patch is taken against (the
    /// instance's base commit, or its environment commit).
    pub base: String,
    /// This attempt's number, 1-based.
    pub attempt: u32,
}
/// A run's failure before it could be graded.
pub(super) struct Failed {
    pub(super) status: Status,
    pub(super) class: &'static str,
    pub(super) message: String,
}
pub(super) fn infra(class: &'static str, message: impl Into<String>) -> Failed {
    Failed {
        status: Status::InfraError,
        class,
        message: message.into(),
    }
}
/// The run's turns so far.
#[derive(Default)]
pub(super) struct Turns {
    pub(super) rounds: Vec<Round>,
    pub(super) finishes: u32,
    pub(super) budget_exhausted: bool,
    pub(super) last_verdict: Option<Value>,
    /// Why the agent's side ended the run, when it did.
    pub(super) agent_fail: Option<(&'static str, String)>,
}
/// Where a run's transcript may be, under its directory, as the runner
/// kept it (copied from the agent's directory with no link followed).
pub(super) const TRANSCRIPTS: [&str; 4] = [
    "transcript.jsonl",
    "transcript.json",
    "transcript",
    adapters::openhands::STATE_FILE,
];
/// The most of a `command` agent's transcript the runner copies.
pub(super) const MAX_TRANSCRIPT_BYTES: u64 = 256 << 20;
/// Tokens and cost of the run so far, from the agent's transcript (the
/// `claude-code`/`codex` adapters keep it as `transcript.jsonl`,
/// `mini-swe-agent` as `transcript.json`; a `command` agent may write one to
/// `transcript`): the cost reported, or
/// priced by the model's `price`.
pub(super) fn spent(exp: &Experiment, dir: &Path) -> (Option<u64>, Option<f64>) {
    let file = TRANSCRIPTS
        .iter()
        .map(|f| dir.join(f))
        .find(|f| f.is_file());
    let Some(file) = file else {
        return (None, None);
    };
    let u = crate::experiment::usage::of_file(&file);
    let priced = exp
        .model
        .as_ref()
        .and_then(|m| m.price)
        .filter(|_| u.found)
        .map(|p| (u.input as f64 * p.input_per_mtok + u.output as f64 * p.output_per_mtok) / 1e6);
    // A cost of 0 beside tokens used is an agent that could not price its
    // model (mini-swe-agent with an unknown one), not a free run.
    let reported = u
        .cost
        .filter(|c| *c > 0.0 || !u.found || u.input + u.output == 0);
    (u.tokens(), reported.or(priced).or(u.cost))
}
/// Which per-run budget `spent` breaks, if any.
pub(super) fn over_budget(
    exp: &Experiment,
    spent: (Option<u64>, Option<f64>),
) -> Option<(&'static str, String)> {
    if let (Some(max), Some(t)) = (exp.budget.tokens, spent.0) {
        if t > max {
            return Some((
                "token_budget",
                format!("{t} tokens, over budget.tokens {max}"),
            ));
        }
    }
    if let (Some(max), Some(c)) = (exp.budget.cost, spent.1) {
        if c > max {
            return Some(("cost_budget", format!("${c:.4}, over budget.cost ${max}")));
        }
    }
    None
}
/// The first thing under `dir` the runner did not make and might write or
/// read through: a symbolic link, a file with other hard links (another
/// file of the user's, linked in), a FIFO, socket or device. The
/// workspace's are the agent's own business and are not looked at: they
/// are never written through.
pub(super) fn link_within(dir: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((d, depth)) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_symlink() => return Some(path),
                Ok(t) if t.is_file() => {
                    if entry.metadata().is_ok_and(|m| m.nlink() > 1) {
                        return Some(path);
                    }
                }
                // The agent's own directory is its to shape, and so is the
                // critic's state when the agent runs unconfined.
                Ok(t) if t.is_dir() && depth < 4 => {
                    let name = entry.file_name();
                    if !["agent", "state"].iter().any(|n| name == *n) {
                        stack.push((path, depth + 1));
                    }
                }
                Ok(t) if t.is_dir() => {}
                _ => return Some(path),
            }
        }
    }
    None
}
/// Whether an exit status is a death by a signal: none at all, or a
/// launcher's `128 + signal`.
pub(super) fn killed(code: Option<i32>) -> bool {
    code.is_none_or(|c| c > 128)
}
/// What the critic found in place of its state, when `verdict` is a finish
/// it could not judge for that (a link, a FIFO, a hard link: see
/// [`crate::evaluate::state`]).
pub(super) fn state_tampered(verdict: &Value) -> Option<String> {
    let meta = &verdict["metadata"];
    (meta["cause"] == "state").then(|| {
        format!(
            "the critic's state was replaced: {}",
            meta["unjudged"].as_str().unwrap_or("?")
        )
    })
}
/// The first signal of `verdict` whose detector failed, and why.
pub(super) fn detector_error(verdict: &Value) -> Option<String> {
    verdict["signals"].as_array()?.iter().find_map(|s| {
        (s["status"] == "error").then(|| {
            format!(
                "signal `{}`: {}",
                s["name"].as_str().unwrap_or("?"),
                s["error"].as_str().unwrap_or("failed")
            )
        })
    })
}
/// Write one of the run's files, through nothing the agent may have
/// planted at its name (see [`crate::sys::atomic_file`]).
pub(super) fn put(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), String> {
    crate::sys::atomic_file::write(path, bytes.as_ref(), false)
        .map_err(|e| format!("{}: {e}", path.display()))
}
/// The workspace's diff against `base`, untracked files included.
pub(super) fn diff(workspace: &Path, base: &str) -> Result<String, String> {
    // The runner reads the agent's workspace unconfined: only through the
    // git directory it made.
    crate::workspace::check_own_git_dir(workspace).map_err(|e| e.to_string())?;
    let (_, raw) = crate::workspace::Workspace::open_with_diff(workspace, Some(base))
        .map_err(|e| e.to_string())?;
    Ok(raw.raw)
}
pub(super) fn save_patch(workspace: &Path, base: &str, to: &Path) -> Result<(), String> {
    put(to, diff(workspace, base)?)
}

/// The most bytes of a verdict read from `critic check`.
pub(crate) const MAX_VERDICT_BYTES: usize = 16 << 20;

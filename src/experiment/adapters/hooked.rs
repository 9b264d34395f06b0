//! An agent whose finish boundary is its own Stop hook: the runner installs
//! `critic hook <agent>` in a home of the run's own (user scope, so nothing
//! lands in the workspace), runs the agent once on the task prompt, and
//! reads what was judged from the verdict log. The agent gets a clean
//! environment: its model's address and key, and nothing else of the
//! runner's.
//!
//! Confined (see [`super::confined`]), the hook cannot check in the agent's
//! confinement: it asks the session's judge, a `critic serve` pinned to the
//! session that the runner starts outside and stops after, which keeps the
//! critic's state and writes the verdict log. Unconfined, the hook checks
//! itself and writes both, within the agent's reach.

use super::command;
use super::turn::{Turn, TurnResult};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
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
    /// The agent's own directory (`<run>/agent`): its home, temporary
    /// files, prompt and transcript.
    pub agent_dir: PathBuf,
    /// The session's confinement and its judge's socket; `None` unconfined.
    pub confine: Option<(super::confined::Reach, PathBuf)>,
    /// See [`Turn::hidden_env`].
    pub hidden_env: Vec<String>,
    /// See [`Turn::stop`].
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl Session<'_> {
    /// The address the agent's hook asks, when the session has a judge.
    pub fn judge_address(&self) -> Option<String> {
        self.confine.as_ref().and_then(|(r, _)| r.judge_address())
    }
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
    let judge = match &s.confine {
        Some((_, socket)) => Some(Judge::start(s, socket, &log)?),
        None => None,
    };
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
        prompt_file: s.agent_dir.join("prompt.md"),
        round: 1,
        session: String::new(),
        workspace: s.workspace.to_path_buf(),
        events_file: s.agent_dir.join("transcript"),
        log_file: s.dir.join("round-1/agent.log"),
        timeout: s.timeout,
        path_prefix: s.path_prefix.clone(),
        env,
        clean_env: true,
        hidden_env: s.hidden_env.clone(),
        confine: s.confine.as_ref().map(|(r, _)| r.clone()),
        stop: s.stop.clone(),
    };
    let result = command::run(&s.argv, &turn);
    // The judge's checks in flight end first: their verdicts go to the log.
    drop(judge);
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
    let mut install = Command::new(s.critic);
    install
        .args(["hook", "install", agent, "--scope", "user", "--skill"])
        .arg(s.skill)
        .arg("--timeout")
        .arg(hook_timeout(s).as_secs().to_string())
        .arg("--")
        .arg("--max-rejections")
        .arg(s.max_rejections.to_string());
    match s.judge_address() {
        // The judge keeps the state and the log; the hook only asks it.
        Some(judge) => install
            .arg("--server")
            .arg(judge)
            .arg("--workspace")
            .arg(s.workspace),
        None => install
            .arg("--state-dir")
            .arg(s.dir.join("state"))
            .arg("--verdict-log")
            .arg(log)
            .args(s.check_flags),
    };
    install
        .args(&s.hook_args)
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

/// The time the agent gives its hook.
fn hook_timeout(s: &Session) -> Duration {
    Duration::from_secs(s.timeout.as_secs().clamp(60, 3600))
}

/// How long the judge's checks in flight get to end once the agent has.
const JUDGE_STOP_WAIT: Duration = Duration::from_secs(30);

/// The session's judge: `critic serve` pinned to it, on a Unix socket only
/// the runner's forwarder connects to.
struct Judge {
    child: std::process::Child,
}

impl Judge {
    fn start(s: &Session, socket: &Path, log: &Path) -> Result<Judge, String> {
        let log_file = s.dir.join("judge.log");
        let stderr = std::fs::File::options()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&log_file)
            .map_err(|e| format!("{}: {e}", log_file.display()))?;
        let mut serve = Command::new(s.critic);
        serve
            .arg("serve")
            .arg("--socket")
            .arg(socket)
            .arg("--check-timeout")
            .arg(hook_timeout(s).as_secs().to_string())
            .arg("--pin-skill")
            .arg(s.skill)
            .arg("--pin-workspace")
            .arg(s.workspace)
            .arg("--pin-state-dir")
            .arg(s.dir.join("state"))
            .arg("--pin-max-rejections")
            .arg(s.max_rejections.to_string())
            .arg("--pin-events-under")
            .arg(&s.agent_dir)
            .arg("--verdict-log")
            .arg(log)
            .args(s.check_flags)
            .env(crate::workspace::OWN_GIT_DIR_VAR, "1")
            // The checks find the experiment's interpreter as the agent does.
            .env("PATH", super::confined::path_with(&s.path_prefix))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(stderr)
            .process_group(0);
        let mut child = serve
            .spawn()
            .map_err(|e| format!("cannot start {} serve: {e}", s.critic.display()))?;
        crate::sys::interrupt::remember_group(child.id() as i32);
        let started = std::time::Instant::now();
        while !socket.exists() {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!(
                    "the session's judge (critic serve) ended with {status}; see {}",
                    s.dir.join("judge.log").display()
                ));
            }
            if started.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                let _ = child.wait();
                return Err("the session's judge (critic serve) did not start in 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(Judge { child })
    }
}

impl Drop for Judge {
    /// Stop accepting, let the checks in flight end (a second signal after
    /// [`JUDGE_STOP_WAIT`] abandons them).
    fn drop(&mut self) {
        let pid = self.child.id() as i32;
        // SAFETY: kill(2) on our own child; no memory is involved.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let started = std::time::Instant::now();
        while matches!(self.child.try_wait(), Ok(None)) {
            if started.elapsed() > JUDGE_STOP_WAIT {
                // SAFETY: as above.
                unsafe { libc::kill(pid, libc::SIGTERM) };
                std::thread::sleep(Duration::from_secs(5));
                // SAFETY: as above; the whole group, its checks' processes too.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
                let _ = self.child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        crate::sys::interrupt::forget_group(pid);
    }
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

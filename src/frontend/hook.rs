//! A stop hook (`critic hook <agent>`): the agent's hook input in, an answer
//! in the agent's protocol out.
//!
//! The same for every agent: the input names the workspace, the transcript
//! and the session; the finish is judged as `critic check` judges it (by a
//! server when one is named, else in process); the verdict becomes the
//! agent's "stop" or "continue". Two promises hold whatever happens:
//!
//! - The agent is never trapped. Rejections are capped per (skill, session)
//!   by the request's `max_rejections`, counted in the critic's own state,
//!   whatever the agent says of its loop; and a hook input without a usable
//!   session id gets a session of its own (from its transcript's path), never
//!   one shared with other sessions.
//! - A failure the agent can cause (its work tree or git state broken, its
//!   transcript unreadable) does not let it stop: the finish is counted as a
//!   rejection whose follow-up names the problem (see
//!   [`crate::frontend::unjudged`]), within the same cap. So is a check the
//!   agent's slow code keeps busy: the check's time limit
//!   ([`DEFAULT_TIME_LIMIT`], counted from the hook's start) ends it before
//!   the agent's own timeout ends the hook, a server that still gives up on
//!   it is followed by a check in process, and a session another check
//!   still holds gets a rejection counted without its lock. And so is a
//!   finish whose critic keeps its skill or state within the agent's
//!   reach. Only a failure on the user's side or the host's (no skill, a
//!   bad manifest, a malformed hook input, a bad command line, a panic)
//!   lets the agent stop, and says so loudly, unless the user asked to fail
//!   closed: it never answers with the agent's "block".

use crate::agents::hook::{Answer, HookInput, HookProtocol, Reply};
use crate::evaluate::request::CheckRequest;
use crate::evaluate::state::default_root;
use crate::evaluate::verdict::Verdict;
use crate::frontend::client::{self, ClientError, ServerAddress};
use crate::frontend::unjudged;
use crate::frontend::{oneshot, project};
use crate::sys::private_dir::user_dir;
use crate::sys::real_path::{resolved, within};
use crate::sys::terminal_text::escape_terminal;
use serde_json::Value;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The default of `--max-rejections`: Claude Code's own cap on consecutive
/// blocks, so no agent is held longer than the strictest agent allows.
pub const DEFAULT_MAX_REJECTIONS: u32 = 8;

/// The largest hook input read (an agent's last message rides in it).
pub const MAX_INPUT_BYTES: usize = 64 << 20;

/// The time an agent gives its hook that `critic hook install` writes into
/// the agent's configuration unless told otherwise (`--timeout`).
pub const DEFAULT_AGENT_TIMEOUT: Duration = Duration::from_secs(600);

/// The shortest time an agent may give its hook: less leaves a check no
/// time to run.
pub const MIN_AGENT_TIMEOUT: Duration = Duration::from_secs(10);

/// The default of a hook's `--time-limit`: what
/// [`hook_time_limit`] leaves of [`DEFAULT_AGENT_TIMEOUT`].
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(540);

/// The time a hook's check may take when the agent gives the hook
/// `agent_timeout`: that less a margin (a tenth, from 5 s to 60 s) for the
/// hook's start, what follows the signals, and a check in process after a
/// server that did not answer in time. An agent that times its hook out
/// lets the agent stop (Claude Code reads it as a non-blocking error), so
/// the check must answer first.
pub fn hook_time_limit(agent_timeout: Duration) -> Duration {
    let margin = (agent_timeout / 10).clamp(Duration::from_secs(5), Duration::from_secs(60));
    agent_timeout.saturating_sub(margin)
}

/// How long a hook waits for an agent that writes its transcript in
/// batches to record the stop (Copilot CLI took up to 0.5 s here).
const TRANSCRIPT_WAIT: Duration = Duration::from_secs(10);

/// One hook call: the user's settings, to be completed from the hook input.
#[derive(Debug, Clone)]
pub struct Hook {
    /// The agent's protocol.
    pub protocol: &'static HookProtocol,
    /// The check as the command line sets it. Its `workspace`, `events` and
    /// `session` are the hook input's unless the fields below override them;
    /// its `max_rejections` should be set (see [`DEFAULT_MAX_REJECTIONS`]),
    /// and its `time_limit`, counted from the start of [`Hook::run`], should
    /// end before the agent gives up on the hook (see [`hook_time_limit`]).
    pub request: CheckRequest,
    /// The workspace, instead of the hook input's.
    pub workspace: Option<PathBuf>,
    /// The project root the agent reports in its environment (see
    /// [`HookProtocol::project_env`]).
    pub reported_project: Option<PathBuf>,
    /// The events, instead of the hook input's transcript.
    pub events: Option<PathBuf>,
    /// The session, instead of the hook input's.
    pub session: Option<String>,
    /// Answer a host failure with the agent's "continue" instead of letting
    /// it stop.
    pub fail_closed: bool,
    /// A `critic serve` to ask first.
    pub server: Option<ServerAddress>,
}

/// What a hook call came to.
#[derive(Debug)]
pub struct HookOutcome {
    /// The answer, in the agent's protocol.
    pub reply: Reply,
    /// Lines for stderr (failures, the cap, a fallback), for the user.
    pub notices: Vec<String>,
    /// The verdict, when the finish was judged.
    pub verdict: Option<Verdict>,
    /// The work tree judged, when the finish was judged.
    pub workspace: Option<PathBuf>,
}

/// Why a hook could not judge the finish.
struct Failure(String);

impl Hook {
    /// Answer the hook input `stdin`.
    pub fn run(&self, stdin: &[u8]) -> HookOutcome {
        let deadline = self.request.deadline(Instant::now());
        let mut notices = Vec::new();
        let judged = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.judge(stdin, deadline, &mut notices)
        }))
        .unwrap_or_else(|_| Err(Failure("internal error (a panic; see above)".into())));
        let (answer, verdict, workspace) = match judged {
            Ok((answer, verdict, workspace)) => (answer, verdict, workspace),
            Err(Failure(why)) => {
                let answer = if self.fail_closed {
                    Answer::Continue {
                        followup: format!(
                            "The finish critic could not check your work: {why}. \
                             Tell the user; they asked for the critic to hold you \
                             until it can (--fail-closed)."
                        ),
                    }
                } else {
                    Answer::Stop {
                        notice: Some(format!(
                            "critic: NOT CHECKED: {why}. The agent stops unchecked; fix this \
                             (or pass --fail-closed to hold the agent until it is fixed)"
                        )),
                    }
                };
                notices.push(if self.fail_closed {
                    format!(
                        "critic hook {}: {why}; holding the agent (--fail-closed)",
                        self.protocol.agent
                    )
                } else {
                    format!(
                        "critic hook {}: NOT CHECKED: {why}; the agent stops unchecked",
                        self.protocol.agent
                    )
                });
                (answer, None, None)
            }
        };
        if let (
            Answer::Stop {
                notice: Some(notice),
            },
            Some(_),
        ) = (&answer, &verdict)
        {
            notices.push(notice.clone());
        }
        HookOutcome {
            reply: (self.protocol.reply)(&answer),
            notices,
            verdict,
            workspace,
        }
    }

    fn judge(
        &self,
        stdin: &[u8],
        deadline: Option<Instant>,
        notices: &mut Vec<String>,
    ) -> Result<(Answer, Option<Verdict>, Option<PathBuf>), Failure> {
        let input = read_input(self.protocol, stdin)?;
        if let Some(why) = &input.not_a_finish {
            notices.push(format!(
                "critic hook {}: {why}; not judged",
                self.protocol.agent
            ));
            return Ok((Answer::Stop { notice: None }, None, None));
        }
        let (request, counted, elsewhere) = self.request_for(&input)?;
        let verdict = match misplaced(&request) {
            Some((problem, root)) => {
                notices.push(format!(
                    "critic hook {}: NOT CHECKED: {problem}, within the agent's reach; keep \
                     the critic's skill and state outside every workspace (the skill under \
                     ~/.config/pluggable-critic/, say, the state in its default place), then \
                     install the hook again. Until then every finish is a counted rejection",
                    self.protocol.agent
                ));
                unjudged::misplaced(&request, deadline, &root, &problem)
                    .map_err(|e| Failure(e.to_string()))?
            }
            None => match (&elsewhere, &input.workspace) {
                (Some(other), Some(cwd)) => unjudged::elsewhere(&request, deadline, cwd, other)
                    .map_err(|e| Failure(e.to_string()))?,
                _ => self.evaluate(&request, deadline, notices)?,
            },
        };
        let answer = if verdict.accepted {
            Answer::Stop {
                notice: verdict.budget_exhausted.then(|| {
                    format!(
                        "critic: {} rejections in session {:?}, the cap: the agent may stop ({})",
                        verdict.max_iterations, request.session, verdict.message
                    )
                }),
            }
        } else if !counted {
            Answer::Stop {
                notice: Some(format!(
                    "critic: {}; not blocking, since the hook input names no session and \
                     rejections could not be counted. Follow-up: {}",
                    verdict.message,
                    verdict.followup.as_deref().unwrap_or("")
                )),
            }
        } else {
            Answer::Continue {
                followup: verdict
                    .followup
                    .clone()
                    .unwrap_or_else(|| verdict.message.clone()),
            }
        };
        Ok((answer, Some(verdict), Some(request.workspace.clone())))
    }

    /// The check of this hook input; whether its rejections are counted (a
    /// session the next call of the same session finds again); and the
    /// other repository the agent's `cwd` lies in, if it does (see
    /// [`crate::frontend::project`]).
    fn request_for(
        &self,
        input: &HookInput,
    ) -> Result<(CheckRequest, bool, Option<PathBuf>), Failure> {
        let mut request = self.request.clone();
        let (session, counted) = match self.session.clone() {
            Some(session) => (session, true),
            None => session_of(input),
        };
        // Kept with the state, unless that lies where the agent works (then
        // the hook counts in the user's own state directory too, see
        // [`unjudged::misplaced`]).
        let own = || user_dir("XDG_STATE_HOME", ".local/state");
        let records = counted
            .then(|| match (&self.request.state_dir, &input.workspace) {
                (Some(state), Some(cwd)) if within(state, &crate::workspace::nearest_root(cwd)) => {
                    own()
                }
                (Some(state), _) => Some(state.clone()),
                (None, _) => own(),
            })
            .flatten()
            .map(|state| project::Records::new(&state));
        // The user's own flag: a wrong one is theirs to fix, never a
        // rejection of the agent's work.
        if let Some(dir) = self.workspace.as_deref().filter(|d| !d.is_dir()) {
            return Err(Failure(format!(
                "--workspace {}: not a directory; give the project's directory",
                dir.display()
            )));
        }
        let named = self.workspace.as_deref();
        let reported = self.reported_project.as_deref();
        let recorded = records
            .as_ref()
            .and_then(|r| r.get(self.protocol.agent, &session));
        let first = named.is_none() && reported.is_none() && recorded.is_none();
        let sources = project::Sources {
            named,
            reported,
            recorded,
            cwd: input.workspace.as_deref(),
        };
        let mut elsewhere = None;
        if let Some(found) = project::project(&sources) {
            if let (true, Some(records)) = (first, &records) {
                let root = crate::workspace::nearest_root(&found.dir);
                if let Err(e) = records.set(self.protocol.agent, &session, &root) {
                    tracing::warn!("cannot record the session's project: {e}");
                }
            }
            request.workspace = found.dir;
            elsewhere = found.elsewhere;
        }
        match (&self.events, &input.transcript) {
            (Some(events), _) => {
                request.events = Some(match self.protocol.locate_events {
                    Some(locate) if events.is_dir() => locate(input, events),
                    _ => events.clone(),
                })
            }
            (None, Some(transcript)) => {
                if let Some(marker) = &input.transcript_marker {
                    wait_for(transcript, marker, TRANSCRIPT_WAIT);
                }
                // Detected, not forced: a file that is no transcript at all
                // (or an empty one) is then a finish that could not be
                // judged, not a stream of unknown events judged as one.
                request.events = Some(transcript.clone());
            }
            (None, None) => {
                return Err(Failure(
                    "the hook input names no transcript (transcript_path); pass --events".into(),
                ))
            }
        }
        request.events_inline = None;
        request.session = session;
        request.finish_message = input.final_message.clone();
        Ok((request, counted, elsewhere))
    }

    /// Judge `request`, by `deadline`: by the server if one is named and
    /// judges it, else in process.
    fn evaluate(
        &self,
        request: &CheckRequest,
        deadline: Option<Instant>,
        notices: &mut Vec<String>,
    ) -> Result<Verdict, Failure> {
        let failed = |e: &dyn std::fmt::Display| Failure(e.to_string());
        // The time left when each check starts is its time limit.
        let timed = || {
            let mut request = request.clone();
            request.time_limit = deadline.map(|end| end.saturating_duration_since(Instant::now()));
            request
        };
        // The client may wait a little beyond the server's limit: the server
        // gets what is left after that, so the answer comes in time.
        let for_server = self.server.as_ref().and_then(|server| {
            let mut request = timed();
            match request.time_limit {
                None => Some((server, request)),
                Some(left) => left
                    .checked_sub(client::WAIT_BEYOND_LIMIT)
                    .filter(|l| !l.is_zero())
                    .map(|l| {
                        request.time_limit = Some(l);
                        (server, request)
                    }),
            }
        });
        if self.server.is_some() && for_server.is_none() {
            notices
                .push("critic: too little time left to ask the server; checking in process".into());
        }
        if let Some((server, request)) = for_server {
            match client::check(server, &request) {
                Ok(verdict) => return Ok(verdict),
                Err(ClientError::Failed(e)) => return Err(Failure(e)),
                Err(ClientError::NoServer(e)) => notices.push(format!(
                    "critic: no server answers ({e}); checking in process"
                )),
                // The server may still count this finish; checking it again
                // can only bring the cap nearer, while letting the agent
                // stop would let slow code switch the critic off.
                Err(ClientError::Unfinished(e)) => notices.push(format!(
                    "critic: the server did not judge the finish ({e}); checking in process"
                )),
            }
        }
        let request = timed();
        oneshot::check(&request)
            .or_else(|e| unjudged::locked(&request, e))
            .map_err(|e| failed(&e))
    }
}

/// What of the critic lies within the work tree `request` names (the root
/// above its directory, else the directory), where the agent can change
/// it: the problem, and that root. Paths are compared with their symbolic
/// links resolved.
fn misplaced(request: &CheckRequest) -> Option<(String, PathBuf)> {
    let root = crate::workspace::nearest_root(&request.workspace);
    let shown = |p: &Path| escape_terminal(&p.display().to_string(), false).into_owned();
    let skill = request.skill.canonicalize().ok();
    let what = if let Some(skill) = skill.filter(|s| within(s, &root)) {
        format!("the skill directory {}", shown(&skill))
    } else {
        let state = match &request.state_dir {
            Some(dir) => dir.clone(),
            None => default_root(&root)?,
        };
        if !within(&state, &root) {
            return None;
        }
        format!("the state directory {}", shown(&resolved(&state)))
    };
    Some((
        format!("{what} lies inside the workspace {}", shown(&root)),
        root,
    ))
}

/// Wait until the last part of `transcript` holds `marker`, or `limit`
/// passes (the read then judges what is there, or reports it missing).
fn wait_for(transcript: &Path, marker: &str, limit: Duration) {
    /// Enough of the file's end to hold the records of one stop.
    const TAIL: u64 = 1 << 20;
    let started = Instant::now();
    let holds = || -> std::io::Result<bool> {
        use std::os::unix::fs::OpenOptionsExt;
        // Not blocking on a FIFO planted as the transcript: anything but a
        // regular file ends the wait, and the read then says what it is.
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(transcript)?;
        if !file.metadata()?.is_file() {
            return Ok(true);
        }
        let len = file.metadata()?.len();
        file.seek(SeekFrom::Start(len.saturating_sub(TAIL)))?;
        let mut tail = Vec::new();
        file.take(TAIL).read_to_end(&mut tail)?;
        Ok(tail.windows(marker.len()).any(|w| w == marker.as_bytes()))
    };
    while started.elapsed() < limit {
        if holds().unwrap_or(false) {
            tracing::debug!(
                waited_ms = started.elapsed().as_millis() as u64,
                "transcript current"
            );
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    tracing::warn!(
        "{}: the transcript did not record this stop in time; judging it as it is",
        escape_terminal(&transcript.display().to_string(), false)
    );
}

/// The hook input, as a JSON object, through the agent's reader.
fn read_input(protocol: &HookProtocol, stdin: &[u8]) -> Result<HookInput, Failure> {
    if stdin.len() > MAX_INPUT_BYTES {
        return Err(Failure(format!(
            "hook input (stdin): larger than {} MiB",
            MAX_INPUT_BYTES >> 20
        )));
    }
    // Some agents (Cursor on Windows) open their input with a byte order mark.
    let stdin = stdin.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(stdin);
    let value: Value = serde_json::from_slice(stdin).map_err(|e| {
        Failure(format!(
            "hook input (stdin): line {}, column {}: not JSON ({})",
            e.line(),
            e.column(),
            crate::sys::json_error::describe(&e)
        ))
    })?;
    if !value.is_object() {
        return Err(Failure(
            "hook input (stdin): expected a JSON object from the agent".into(),
        ));
    }
    Ok((protocol.read_input)(&value))
}

/// The session of a hook input: its id when it is a real one; else one
/// named after its transcript (each session has its own); else a session of
/// this call alone, whose rejections cannot be counted (`false`).
fn session_of(input: &HookInput) -> (String, bool) {
    let id = input.session.as_deref().map(str::trim).filter(|id| {
        !id.is_empty()
            && ![
                "null",
                "undefined",
                "none",
                "nil",
                "nan",
                "0",
                "unknown",
                "[object object]",
            ]
            .iter()
            .any(|n| id.eq_ignore_ascii_case(n))
    });
    if let Some(id) = id {
        return (id.to_string(), true);
    }
    if let Some(transcript) = &input.transcript {
        let path = transcript
            .canonicalize()
            .unwrap_or_else(|_| transcript.clone());
        return (format!("transcript-{}", short_hash(&path)), true);
    }
    let unique = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    (format!("anonymous-{}", short_hash(unique.as_ref())), false)
}

fn short_hash(path: &std::path::Path) -> String {
    use sha2::{Digest, Sha256};
    use std::os::unix::ffi::OsStrExt;
    hex::encode(&Sha256::digest(path.as_os_str().as_bytes())[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(session: Option<&str>, transcript: Option<&str>) -> HookInput {
        HookInput {
            session: session.map(str::to_string),
            transcript: transcript.map(PathBuf::from),
            ..HookInput::default()
        }
    }

    #[test]
    fn waits_for_a_batched_transcript_to_record_the_stop() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("events.jsonl");
        std::fs::write(&file, "{\"type\":\"user.message\"}\n").unwrap();
        let writer = {
            let file = file.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(150));
                let mut text = std::fs::read_to_string(&file).unwrap();
                text.push_str(
                    "{\"type\":\"hook.start\",\"data\":{\"input\":{\"timestamp\":42}}}\n",
                );
                std::fs::write(&file, text).unwrap();
            })
        };
        let started = Instant::now();
        wait_for(&file, "\"timestamp\":42", Duration::from_secs(5));
        let waited = started.elapsed();
        writer.join().unwrap();
        assert!(
            waited >= Duration::from_millis(150) && waited < Duration::from_secs(4),
            "{waited:?}"
        );
        // A marker that never comes costs the limit, no more.
        let started = Instant::now();
        wait_for(&file, "\"timestamp\":43", Duration::from_millis(100));
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn the_check_answers_a_margin_before_the_agent_gives_up() {
        let s = Duration::from_secs;
        assert_eq!(hook_time_limit(DEFAULT_AGENT_TIMEOUT), DEFAULT_TIME_LIMIT);
        assert_eq!(hook_time_limit(s(3600)), s(3540));
        assert_eq!(hook_time_limit(s(30)), s(25));
        assert_eq!(hook_time_limit(MIN_AGENT_TIMEOUT), s(5));
    }

    #[test]
    fn missing_and_null_session_ids_never_share_a_session() {
        assert_eq!(
            session_of(&input(Some("abc-123"), None)),
            ("abc-123".into(), true)
        );
        let a = session_of(&input(Some("null"), Some("/t/a.jsonl")));
        let b = session_of(&input(Some(""), Some("/t/b.jsonl")));
        let a2 = session_of(&input(None, Some("/t/a.jsonl")));
        assert!(a.1 && b.1);
        assert_ne!(a.0, b.0);
        assert_eq!(a, a2, "one transcript, one session");
        assert!(a.0.starts_with("transcript-"));
        let x = session_of(&input(Some(" NULL "), None));
        let y = session_of(&input(Some("undefined"), None));
        assert!(!x.1 && !y.1, "cannot be counted");
        assert_ne!(x.0, y.0);
    }
}

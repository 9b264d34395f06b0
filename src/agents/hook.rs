//! Agents' stop hooks: what an agent sends its hook on stdin, and the answer
//! that lets it stop or sends it back to work, in each agent's own words.
//!
//! Each agent's folder defines its [`HookProtocol`]; [`super::HOOKS`] registers
//! them. Running a hook (finding the session, evaluating, the rejection cap,
//! failing open) is [`crate::frontend::hook`]'s, the same for every agent.

use serde_json::{json, Value};
use std::path::PathBuf;

/// One agent's stop-hook protocol.
pub struct HookProtocol {
    /// The agent's name in `critic hook <agent>`.
    pub agent: &'static str,
    /// The program, for help texts.
    pub about: &'static str,
    /// The fields of the hook's input the host uses.
    pub read_input: fn(&Value) -> HookInput,
    /// Environment variables in which the agent names its project's root
    /// to its hooks, first found first (none for an agent whose hook input
    /// `cwd` is the session's own and does not follow the agent's `cd`).
    pub project_env: &'static [&'static str],
    /// Where this session's events are in a directory the user named
    /// (`--events`), for agents whose hook input names no transcript.
    pub locate_events: Option<fn(&HookInput, &std::path::Path) -> PathBuf>,
    /// The answer in the agent's protocol.
    pub reply: fn(&Answer) -> Reply,
    /// Where `critic hook install` writes the hook.
    pub config: super::install::HookConfig,
}

impl std::fmt::Debug for HookProtocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.agent)
    }
}

/// What the host takes from a hook's input; anything may be missing.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct HookInput {
    /// The agent's session (conversation) id, as it sent it.
    pub session: Option<String>,
    /// The directory the agent works in.
    pub workspace: Option<PathBuf>,
    /// The transcript the agent keeps of the session.
    pub transcript: Option<PathBuf>,
    /// The agent's last message, which the transcript may not hold yet.
    pub final_message: Option<String>,
    /// Text the transcript holds once it records this hook call: for agents
    /// that write their transcript in batches, the hook waits for it.
    pub transcript_marker: Option<String>,
    /// Why this stop is not a finish to judge (the turn failed, the user
    /// aborted it): the hook lets the agent stop unjudged.
    pub not_a_finish: Option<String>,
}

/// What the hook tells the agent.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Let the agent stop; `notice` (a failure, the cap reached) is shown to
    /// the user where the agent has a place for it.
    Stop {
        /// For the user, not the model.
        notice: Option<String>,
    },
    /// Send the agent back to work with `followup` as its next input.
    Continue {
        /// The follow-up prompt.
        followup: String,
    },
}

/// A hook's output: stdout and the exit code (the host writes notices to
/// stderr itself).
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// What the agent reads on stdout (may be empty).
    pub stdout: String,
    /// The exit code; never one the agent reads as "block" for a stop.
    pub exit_code: u8,
}

impl Reply {
    /// Exit 0 with `value` on stdout.
    pub fn json(value: Value) -> Reply {
        Reply {
            stdout: value.to_string(),
            exit_code: 0,
        }
    }

    /// Exit 0, nothing on stdout.
    pub fn silent() -> Reply {
        Reply {
            stdout: String::new(),
            exit_code: 0,
        }
    }
}

/// The answer of the agents whose hooks read `{"decision": <block>, "reason":
/// ...}` to continue and show a `systemMessage` to the user.
pub(super) fn decision_reply(answer: &Answer, block: &str) -> Reply {
    match answer {
        Answer::Stop { notice: None } => Reply::silent(),
        Answer::Stop {
            notice: Some(notice),
        } => Reply::json(json!({ "systemMessage": notice })),
        Answer::Continue { followup } => {
            Reply::json(json!({ "decision": block, "reason": followup }))
        }
    }
}

/// The hook input of Claude Code's `Stop` hook, whose field names Codex and
/// Gemini CLI took over: `session_id`, `cwd`, `transcript_path` and (not
/// from Gemini) `last_assistant_message`.
pub(super) fn claude_style_input(input: &Value) -> HookInput {
    HookInput {
        session: string(input, "session_id"),
        workspace: path(input, "cwd"),
        transcript: path(input, "transcript_path"),
        final_message: string(input, "last_assistant_message"),
        ..HookInput::default()
    }
}

/// The string at `key`, if it is a non-empty string.
pub(super) fn string(input: &Value, key: &str) -> Option<String> {
    input
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The path at `key`, if it is a non-empty string.
pub(super) fn path(input: &Value, key: &str) -> Option<PathBuf> {
    string(input, key).map(PathBuf::from)
}

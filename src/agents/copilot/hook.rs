//! Copilot CLI's `agentStop` hook: it sends `sessionId`, `cwd`,
//! `transcriptPath` and a `timestamp` (epoch ms); `{"decision": "block",
//! "reason": ...}` on stdout with exit 0 sends the reason back as the next
//! user message. Copilot writes its session log in batches, so the log may
//! not hold the stop yet when the hook starts: it is current once it holds
//! the `hook.start` event of this call, whose input has that timestamp.

use crate::agents::hook::{decision_reply, path, string, Answer, HookInput, HookProtocol, Reply};
use crate::agents::install::{home_file, HookConfig, Shape};
use serde_json::Value;
use std::path::PathBuf;

/// Copilot CLI's stop hook.
pub(in crate::agents) static HOOK: HookProtocol = HookProtocol {
    agent: "copilot",
    about: "GitHub Copilot CLI (`agentStop` in .github/hooks/*.json or ~/.copilot/hooks/*.json)",
    read_input,
    project_env: &["COPILOT_PROJECT_DIR", "CLAUDE_PROJECT_DIR"],
    locate_events: None,
    reply,
    config: HookConfig {
        project_file: ".github/hooks/pluggable-critic.json",
        user_file: Some(copilot_home_hooks),
        shape: Shape::Listed {
            event: "agentStop",
            command_key: "bash",
            timeout_key: Some("timeoutSec"),
            extra: &[("type", "command")],
        },
        note: Some(
            "Copilot runs a project's hooks only in a folder it trusts (--trust-folder); \
             hooks installed with --scope user need no trust",
        ),
    },
};

/// `$COPILOT_HOME/hooks/pluggable-critic.json` (`~/.copilot` by default).
fn copilot_home_hooks() -> Option<PathBuf> {
    match std::env::var_os("COPILOT_HOME") {
        Some(home) if PathBuf::from(&home).is_absolute() => {
            Some(PathBuf::from(home).join("hooks/pluggable-critic.json"))
        }
        _ => home_file(".copilot/hooks/pluggable-critic.json"),
    }
}

fn read_input(input: &Value) -> HookInput {
    HookInput {
        session: string(input, "sessionId").or_else(|| string(input, "session_id")),
        workspace: path(input, "cwd"),
        transcript: path(input, "transcriptPath").or_else(|| path(input, "transcript_path")),
        final_message: None,
        transcript_marker: input
            .get("timestamp")
            .and_then(Value::as_i64)
            .map(|ms| format!("\"timestamp\":{ms}")),
        not_a_finish: None,
    }
}

fn reply(answer: &Answer) -> Reply {
    decision_reply(answer, "block")
}

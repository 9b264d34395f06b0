//! Claude Code's `Stop` hook: it sends `session_id`, `transcript_path`,
//! `cwd` and `last_assistant_message`; `{"decision": "block", "reason": ...}`
//! on stdout with exit 0 sends the reason back to the model, and a
//! `systemMessage` is shown to the user.

use crate::agents::hook::{decision_reply, path, string, Answer, HookInput, HookProtocol, Reply};
use crate::agents::install::{home_file, HookConfig, Shape};
use serde_json::Value;

/// Claude Code's stop hook.
pub(in crate::agents) static HOOK: HookProtocol = HookProtocol {
    agent: "claude-code",
    about: "Claude Code (`hooks.Stop` in .claude/settings.json)",
    read_input,
    locate_events: None,
    reply,
    config: HookConfig {
        project_file: ".claude/settings.json",
        user_file: Some(|| home_file(".claude/settings.json")),
        shape: Shape::Grouped {
            event: "Stop",
            matcher: None,
            timeout_millis: false,
        },
        note: None,
    },
};

fn read_input(input: &Value) -> HookInput {
    HookInput {
        session: string(input, "session_id"),
        workspace: path(input, "cwd"),
        transcript: path(input, "transcript_path"),
        final_message: string(input, "last_assistant_message"),
        transcript_marker: None,
        not_a_finish: None,
    }
}

fn reply(answer: &Answer) -> Reply {
    decision_reply(answer, "block")
}

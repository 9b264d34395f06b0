//! Claude Code's `Stop` hook: it sends `session_id`, `transcript_path`,
//! `cwd` and `last_assistant_message`; `{"decision": "block", "reason": ...}`
//! on stdout with exit 0 sends the reason back to the model, and a
//! `systemMessage` is shown to the user.

use crate::agents::hook::{claude_style_input, decision_reply, Answer, HookProtocol, Reply};
use crate::agents::install::{home_file, HookConfig, Shape};

/// Claude Code's stop hook.
pub(in crate::agents) static HOOK: HookProtocol = HookProtocol {
    agent: "claude-code",
    about: "Claude Code (`hooks.Stop` in .claude/settings.json)",
    read_input: claude_style_input,
    project_env: &["CLAUDE_PROJECT_DIR"],
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

fn reply(answer: &Answer) -> Reply {
    decision_reply(answer, "block")
}

//! Gemini CLI's `AfterAgent` hook: it sends `session_id`, `transcript_path`
//! and `cwd`; `{"decision": "deny", "reason": ...}` on stdout sends the
//! reason to the model as the next prompt. Gemini obeys JSON on stdout
//! whatever the exit code, but reads plain text with an exit code other
//! than 0 or 1 as a block: the host always answers in JSON with exit 0.
//! Gemini has no working cap of its own on blocks.

use crate::agents::hook::{claude_style_input, decision_reply, Answer, HookProtocol, Reply};
use crate::agents::install::{home_file, HookConfig, Shape};

/// Gemini CLI's stop hook.
pub(in crate::agents) static HOOK: HookProtocol = HookProtocol {
    agent: "gemini",
    about: "Gemini CLI (`hooks.AfterAgent` in .gemini/settings.json)",
    read_input: claude_style_input,
    project_env: &["GEMINI_PROJECT_DIR", "CLAUDE_PROJECT_DIR"],
    locate_events: None,
    reply,
    config: HookConfig {
        project_file: ".gemini/settings.json",
        user_file: Some(|| home_file(".gemini/settings.json")),
        shape: Shape::Grouped {
            event: "AfterAgent",
            matcher: None,
            timeout_millis: true,
        },
        note: Some("Gemini CLI runs a project's hooks only in a folder it trusts"),
    },
};

fn reply(answer: &Answer) -> Reply {
    match answer {
        Answer::Stop { notice: None } => Reply::json(serde_json::json!({})),
        _ => decision_reply(answer, "deny"),
    }
}

//! Codex's `Stop` hook: it sends `session_id`, `transcript_path`, `cwd` and
//! `last_assistant_message`; `{"decision": "block", "reason": ...}` on
//! stdout with exit 0 sends the reason back to the model (as a
//! `<hook_prompt>` user message). Codex rejects any output field outside its
//! schema, and has no cap of its own on blocks.

use crate::agents::hook::{claude_style_input, decision_reply, Answer, HookProtocol, Reply};
use crate::agents::install::{HookConfig, Shape};
use std::path::PathBuf;

/// Codex's stop hook.
pub(in crate::agents) static HOOK: HookProtocol = HookProtocol {
    agent: "codex",
    about: "Codex CLI (`hooks.Stop` in .codex/hooks.json)",
    read_input: claude_style_input,
    project_env: &[],
    locate_events: None,
    reply,
    config: HookConfig {
        project_file: ".codex/hooks.json",
        user_file: Some(codex_home_hooks),
        shape: Shape::Grouped {
            event: "Stop",
            matcher: None,
            timeout_millis: false,
        },
        note: Some(
            "Codex runs a hook only once you trust it: open `codex`, type /hooks and trust \
             the critic's (or run `codex exec --dangerously-bypass-hook-trust`); a project's \
             hooks also need the project trusted",
        ),
    },
};

/// `$CODEX_HOME/hooks.json` (`~/.codex` by default).
fn codex_home_hooks() -> Option<PathBuf> {
    match std::env::var_os("CODEX_HOME") {
        Some(home) if PathBuf::from(&home).is_absolute() => {
            Some(PathBuf::from(home).join("hooks.json"))
        }
        _ => crate::agents::install::home_file(".codex/hooks.json"),
    }
}

fn reply(answer: &Answer) -> Reply {
    decision_reply(answer, "block")
}

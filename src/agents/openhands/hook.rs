//! The OpenHands SDK's `stop` hook (`.openhands/hooks.json`, loaded by the
//! program that runs the conversation through `HookConfig.load`). It sends a
//! `HookEvent`: `event_type`, `session_id`, `working_dir`; no transcript. The
//! events are where the program persists them, so the hook is given that
//! directory (`--events`) and finds the session's `events/` in it.
//! `{"decision": "deny", "reason": ...}` on stdout blocks the finish and
//! sends the reason to the model as `[Stop hook feedback] ...`; the SDK has
//! no cap of its own.

use crate::agents::hook::{path, string, Answer, HookInput, HookProtocol, Reply};
use crate::agents::install::{home_file, HookConfig, Shape};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The OpenHands SDK's stop hook.
pub(in crate::agents) static HOOK: HookProtocol = HookProtocol {
    agent: "openhands",
    about: "OpenHands SDK (`stop` in .openhands/hooks.json)",
    read_input,
    project_env: &[],
    locate_events: Some(session_events),
    reply,
    config: HookConfig {
        project_file: ".openhands/hooks.json",
        user_file: Some(|| home_file(".openhands/hooks.json")),
        shape: Shape::Grouped {
            event: "Stop",
            matcher: None,
            timeout_millis: false,
        },
        note: Some(
            "the program running the conversation must load the hooks \
             (Conversation(..., hook_config=HookConfig.load(working_dir=...))), and the hook \
             needs its persistence directory: install with `-- --events <persistence_dir>`",
        ),
    },
};

fn read_input(input: &Value) -> HookInput {
    HookInput {
        session: string(input, "session_id"),
        workspace: path(input, "working_dir"),
        ..HookInput::default()
    }
}

/// The session's events in the persistence directory `dir`:
/// `<dir>/<session id without dashes>/events` as the SDK writes it, else
/// `dir` itself (an events directory named outright).
pub(in crate::agents) fn session_events(input: &HookInput, dir: &Path) -> PathBuf {
    if let Some(session) = &input.session {
        for name in [session.replace('-', ""), session.clone()] {
            let events = dir.join(&name).join("events");
            if !name.is_empty() && !name.contains('/') && name != ".." && events.is_dir() {
                return events;
            }
        }
    }
    dir.to_path_buf()
}

fn reply(answer: &Answer) -> Reply {
    match answer {
        Answer::Stop { .. } => Reply::silent(),
        Answer::Continue { followup } => {
            Reply::json(json!({ "decision": "deny", "reason": followup }))
        }
    }
}

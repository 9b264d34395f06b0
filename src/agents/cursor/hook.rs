//! Cursor's `stop` hook: it sends `conversation_id`, `status`, `loop_count`,
//! `workspace_roots` and `transcript_path` (null until the file exists).
//! A stop hook cannot block: `{"followup_message": ...}` on stdout with exit
//! 0 becomes the next user message, and Cursor stops calling the hook after
//! `loop_limit` follow-ups (5 by default). A turn that ended in an error or
//! was aborted is not a finish to judge.

use crate::agents::hook::{path, string, Answer, HookInput, HookProtocol, Reply};
use crate::agents::install::{home_file, HookConfig, Shape};
use serde_json::{json, Value};

/// Cursor's stop hook.
pub(in crate::agents) static HOOK: HookProtocol = HookProtocol {
    agent: "cursor",
    about: "Cursor (`stop` in .cursor/hooks.json)",
    read_input,
    project_env: &["CURSOR_PROJECT_DIR", "CLAUDE_PROJECT_DIR"],
    locate_events: None,
    reply,
    config: HookConfig {
        project_file: ".cursor/hooks.json",
        user_file: Some(|| home_file(".cursor/hooks.json")),
        shape: Shape::Listed {
            event: "stop",
            command_key: "command",
            timeout_key: Some("timeout"),
            extra: &[],
        },
        note: None,
    },
};

fn read_input(input: &Value) -> HookInput {
    let status = string(input, "status");
    HookInput {
        session: string(input, "conversation_id").or_else(|| string(input, "session_id")),
        workspace: input
            .get("workspace_roots")
            .and_then(Value::as_array)
            .and_then(|roots| roots.first())
            .and_then(Value::as_str)
            .map(Into::into),
        transcript: path(input, "transcript_path"),
        final_message: None,
        transcript_marker: None,
        not_a_finish: status
            .filter(|s| s != "completed")
            .map(|s| format!("the turn ended with status {s:?}")),
    }
}

fn reply(answer: &Answer) -> Reply {
    match answer {
        Answer::Stop { .. } => Reply::json(json!({})),
        Answer::Continue { followup } => Reply::json(json!({ "followup_message": followup })),
    }
}

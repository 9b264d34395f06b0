//! GitHub Copilot CLI (`@github/copilot`): its session event logs and its
//! `agentStop` hook.
//!
//! A session's log is JSONL at `~/.copilot/session-state/<id>/events.jsonl`,
//! each line `{"type", "data", "id", "timestamp", "parentId"}`: the user's
//! `user.message`, the model's `assistant.message` (its text, and its
//! `toolRequests`), `tool.execution_complete` (the result the model sees,
//! and `shellExecution.exitCode` for a command, which is the only sign of a
//! failed one), `hook.start` / `hook.end`, `session.*`. Subagents' events
//! carry an `agentId` and are left out. A stop hook's follow-up comes back
//! as a `user.message` with the hook's reason; it is a system event.

pub(super) mod hook;

pub(super) use hook::HOOK;

use super::events_error::EventsError;
use super::format::Format;
use super::lenient::OptStr;
use super::records::Records;
use critic_sdk::{Event, EventKind};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// Copilot CLI session logs.
pub(super) static FORMAT: Format = Format {
    name: "copilot",
    about: "GitHub Copilot CLI session log (~/.copilot/session-state/<id>/events.jsonl)",
    sniff,
    read_dir: None,
    normalize,
};

/// Each line is `{"type": "<area>.<event>", "data": {...}, "id": ...}`.
fn sniff(first: &str) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(rename = "type")]
        kind: Option<Value>,
        data: Option<Value>,
        id: Option<Value>,
    }
    serde_json::from_str::<Probe>(first).is_ok_and(|p| {
        p.data.as_ref().is_some_and(Value::is_object)
            && p.id.is_some()
            && p.kind
                .as_ref()
                .and_then(Value::as_str)
                .is_some_and(|k| k.contains('.'))
    })
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Line {
    #[serde(rename = "type")]
    kind: OptStr,
    timestamp: OptStr,
    #[serde(rename = "agentId")]
    agent_id: Option<Value>,
    data: Data,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Data {
    content: OptStr,
    #[serde(rename = "toolRequests")]
    tool_requests: Vec<ToolRequest>,
    #[serde(rename = "toolCallId")]
    tool_call_id: OptStr,
    result: Option<ToolResult>,
    #[serde(rename = "shellExecution")]
    shell_execution: Option<ShellExecution>,
    success: Option<Value>,
    /// `hook.end`: what the hook answered.
    output: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ToolRequest {
    #[serde(rename = "toolCallId")]
    tool_call_id: OptStr,
    name: OptStr,
    arguments: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ToolResult {
    content: OptStr,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ShellExecution {
    #[serde(rename = "exitCode")]
    exit_code: super::lenient::OptI64,
}

fn normalize(path: &Path, records: Records) -> Result<Vec<Event>, EventsError> {
    let mut events: Vec<Event> = Vec::new();
    let mut tools: HashMap<String, String> = HashMap::new();
    // The reason of the last block a stop hook answered: the user message
    // that follows with this text is the hook's, not the user's.
    let mut blocked_with: Option<String> = None;
    for parsed in super::records::parsed(path, records) {
        let (record, line) = parsed?;
        let line: Line = match line {
            Ok(line) => line,
            Err(e) => {
                let (line, column) = record.place_of(&e);
                tracing::warn!(
                    line,
                    column,
                    "not a Copilot CLI event ({}); kept as `other`",
                    crate::sys::json_error::describe(&e)
                );
                events.push(record.event(events.len(), EventKind::Other));
                continue;
            }
        };
        if line.agent_id.is_some() {
            continue;
        }
        let mut origin = record.origin(line.kind.0.unwrap_or_default(), line.timestamp.0);
        let data = line.data;
        let events = &mut events;
        match origin.class.as_str() {
            "user.message" => {
                let text = data.content.0.unwrap_or_default();
                let from_hook = blocked_with.take().is_some_and(|r| r.trim() == text.trim());
                let (kind, source) = match from_hook {
                    true => (EventKind::System, "system"),
                    false => (EventKind::Message, "user"),
                };
                origin.push(events, kind, source).text = Some(text);
            }
            "assistant.message" => {
                if let Some(text) = data.content.0.filter(|t| !t.is_empty()) {
                    origin.push(events, EventKind::Message, "agent").text = Some(text);
                }
                for request in data.tool_requests {
                    // Past the limit the stream is refused: stop making events.
                    if events.len() > super::events_error::MAX_EVENTS {
                        break;
                    }
                    let name = request.name.0.unwrap_or_default();
                    if let Some(id) = &request.tool_call_id.0 {
                        tools.insert(id.clone(), name.clone());
                    }
                    let e = origin.push(events, EventKind::Action, "agent");
                    e.tool = Some(name);
                    e.call_id = request.tool_call_id.0;
                    e.arguments = request.arguments;
                }
            }
            "tool.execution_complete" => {
                let tool = data
                    .tool_call_id
                    .0
                    .as_ref()
                    .and_then(|id| tools.get(id).cloned());
                let e = origin.push(events, EventKind::Observation, "environment");
                e.output = data.result.and_then(|r| r.content.0);
                e.exit_code = data.shell_execution.and_then(|s| s.exit_code.0);
                if e.exit_code.is_none() && data.success == Some(Value::Bool(false)) {
                    e.exit_code = Some(1);
                }
                e.tool = tool;
                e.call_id = data.tool_call_id.0;
            }
            "hook.end" => {
                let output = data.output.unwrap_or_default();
                if output.get("decision").and_then(Value::as_str) == Some("block") {
                    blocked_with = output
                        .get("reason")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                }
                origin.push(events, EventKind::System, "system");
            }
            "system.message" => {
                origin.push(events, EventKind::System, "system").text = data.content.0
            }
            "hook.start" | "session.start" | "session.shutdown" => {
                origin.push(events, EventKind::System, "system");
            }
            _ => {
                origin.push(events, EventKind::Other, "system");
            }
        }
    }
    super::record_to_events::mark_turn_ends(&mut events);
    Ok(events)
}

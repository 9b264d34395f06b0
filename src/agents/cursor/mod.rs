//! Cursor's agent: its transcripts and its `stop` hook.
//!
//! A transcript is JSONL at
//! `~/.cursor/projects/<slug>/agent-transcripts/<id>/<id>.jsonl`: one line per
//! message, `{"role": "user" | "assistant", "message": {"content": [...]}}`
//! with `text` and `tool_use` parts, and `{"type": "turn_ended", "status"}`
//! after each turn. Cursor writes no tool results: a critic sees what the
//! agent ran, never how it went. (Cursor cannot run here; this reader and
//! the hook follow Cursor's published SDK, `@cursor/sdk` 1.0.32.)

pub(super) mod hook;

pub(super) use hook::HOOK;

use super::events_error::EventsError;
use super::format::Format;
use super::lenient::OptStr;
use super::records::Records;
use critic_sdk::{Event, EventKind};
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

/// Cursor agent transcripts.
pub(super) static FORMAT: Format = Format {
    name: "cursor",
    about: "Cursor agent transcript (~/.cursor/projects/*/agent-transcripts/<id>/<id>.jsonl)",
    sniff,
    read_dir: None,
    normalize,
};

/// A message line has a `role` and a `message`; a transcript may open with
/// `{"type": "metadata"}`.
fn sniff(first: &str) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        role: Option<Value>,
        message: Option<Value>,
        #[serde(rename = "type")]
        kind: Option<Value>,
        metadata: Option<Value>,
    }
    serde_json::from_str::<Probe>(first).is_ok_and(|p| {
        let message = p.role.as_ref().is_some_and(Value::is_string)
            && p.message.as_ref().is_some_and(Value::is_object);
        let metadata =
            p.kind.as_ref().and_then(Value::as_str) == Some("metadata") && p.metadata.is_some();
        message || metadata
    })
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Line {
    role: OptStr,
    #[serde(rename = "type")]
    kind: OptStr,
    message: Option<Message>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Message {
    content: Vec<Part>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Part {
    #[serde(rename = "type")]
    kind: OptStr,
    text: OptStr,
    name: OptStr,
    input: Option<Value>,
}

fn normalize(path: &Path, records: Records) -> Result<Vec<Event>, EventsError> {
    let mut events = Vec::new();
    for parsed in super::records::parsed(path, records) {
        let (record, line) = parsed?;
        let line: Line = match line {
            Ok(line) => line,
            Err(e) => {
                let (line, column) = record.place_of(&e);
                tracing::warn!(
                    line,
                    column,
                    "not a Cursor transcript line ({}); kept as `other`",
                    crate::sys::json_error::describe(&e)
                );
                events.push(record.event(events.len(), EventKind::Other));
                continue;
            }
        };
        let mut origin = record.origin(
            line.role
                .0
                .clone()
                .or(line.kind.0.clone())
                .unwrap_or_default(),
            None,
        );
        let source = match line.role.0.as_deref() {
            Some("assistant") => "agent",
            Some("user") => "user",
            _ => {
                let kind = match line.kind.0.as_deref() {
                    Some("turn_ended") => EventKind::System,
                    _ => EventKind::Other,
                };
                origin.push(&mut events, kind, "system");
                continue;
            }
        };
        let mut text: Vec<String> = Vec::new();
        for part in line.message.map(|m| m.content).unwrap_or_default() {
            match part.kind.0.as_deref() {
                Some("text") => text.extend(part.text.0),
                Some("tool_use") => {
                    if !text.is_empty() {
                        origin.push(&mut events, EventKind::Message, source).text =
                            Some(text.join("\n"));
                        text.clear();
                    }
                    let e = origin.push(&mut events, EventKind::Action, "agent");
                    e.tool = part.name.0;
                    e.arguments = part.input;
                }
                _ => {}
            }
        }
        if !text.is_empty() {
            origin.push(&mut events, EventKind::Message, source).text = Some(text.join("\n"));
        }
    }
    super::record_to_events::mark_turn_ends(&mut events);
    Ok(events)
}

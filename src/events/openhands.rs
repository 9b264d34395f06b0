//! OpenHands SDK events (`openhands-sdk` 1.x): each event is a JSON object whose
//! `kind` names its class (`ActionEvent`, `ObservationEvent`, `MessageEvent`, ...).
//! The SDK persists a conversation as `events/event-NNNNN-<id>.json`, one file per
//! event; the zero-padded number orders them.

use super::{content_text, event, str_field, EventsError, Record};
use critic_sdk::{Event, EventKind};
use serde_json::value::RawValue;
use serde_json::Value;
use std::path::Path;

/// Read a persisted events directory (or a conversation directory holding one).
pub(super) fn read_dir(dir: &Path) -> Result<Vec<Record>, EventsError> {
    let events_dir = if dir.join("events").is_dir() {
        dir.join("events")
    } else {
        dir.to_path_buf()
    };
    let io = |source| EventsError::Io {
        path: events_dir.clone(),
        source,
    };
    let mut files: Vec<_> = std::fs::read_dir(&events_dir)
        .map_err(io)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    if files.is_empty() {
        return Err(EventsError::Empty(events_dir));
    }
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).map_err(|source| EventsError::Io {
                path: path.clone(),
                source,
            })?;
            let malformed = |e: serde_json::Error| EventsError::Malformed {
                path: path.clone(),
                line: e.line(),
                column: e.column(),
                message: super::strip_position(&e.to_string()),
            };
            let raw: Box<RawValue> = serde_json::from_str(text.trim()).map_err(malformed)?;
            let value = serde_json::from_str(raw.get()).map_err(malformed)?;
            Ok(Record {
                line: 1,
                raw,
                value,
            })
        })
        .collect()
}

/// Normalize SDK events.
pub(super) fn normalize(records: Vec<Record>) -> Vec<Event> {
    records
        .into_iter()
        .enumerate()
        .map(|(i, r)| convert(i, r))
        .collect()
}

fn convert(index: usize, record: Record) -> Event {
    let v = &record.value;
    let class = str_field(v, "kind").unwrap_or_default();
    let mut e = event(index, kind_of(&class, v), record.raw);
    e.source = str_field(v, "source");
    e.timestamp = str_field(v, "timestamp");
    e.tool = str_field(v, "tool_name");
    e.call_id = str_field(v, "tool_call_id");
    match class.as_str() {
        "MessageEvent" => {
            e.text = content_text(v.pointer("/llm_message/content"));
        }
        "SystemPromptEvent" => {
            e.text = v
                .pointer("/system_prompt/text")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        "ActionEvent" => {
            e.arguments = arguments(v);
            e.text = if e.kind == EventKind::Finish {
                v.pointer("/action/message")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            } else {
                content_text(v.get("thought")).filter(|t| !t.is_empty())
            };
        }
        "ObservationEvent" => {
            let obs = v.get("observation");
            e.output = obs.and_then(|o| content_text(o.get("content")));
            e.exit_code = obs.and_then(|o| {
                o.get("exit_code")
                    .or_else(|| o.pointer("/metadata/exit_code"))
                    .and_then(Value::as_i64)
            });
        }
        "AgentErrorEvent" => e.text = str_field(v, "error"),
        "UserRejectObservation" => e.output = str_field(v, "rejection_reason"),
        _ => {}
    }
    e.original_kind = Some(class);
    e
}

fn kind_of(class: &str, v: &Value) -> EventKind {
    match class {
        "MessageEvent" => EventKind::Message,
        "ActionEvent" => {
            if v.pointer("/action/kind").and_then(Value::as_str) == Some("FinishAction") {
                EventKind::Finish
            } else {
                EventKind::Action
            }
        }
        "ObservationEvent" | "UserRejectObservation" => EventKind::Observation,
        "AgentErrorEvent" => EventKind::Error,
        "SystemPromptEvent"
        | "ConversationStateUpdateEvent"
        | "PauseEvent"
        | "Condensation"
        | "CondensationRequest"
        | "CondensationSummaryEvent" => EventKind::System,
        _ => EventKind::Other,
    }
}

/// The validated action (minus its class tag), or the raw tool-call arguments.
fn arguments(v: &Value) -> Option<Value> {
    if let Some(Value::Object(action)) = v.get("action") {
        let mut args = action.clone();
        args.remove("kind");
        args.retain(|_, x| !x.is_null());
        return Some(Value::Object(args));
    }
    let text = v.pointer("/tool_call/arguments")?.as_str()?;
    serde_json::from_str(text).ok()
}

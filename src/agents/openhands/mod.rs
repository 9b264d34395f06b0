//! OpenHands SDK events (`openhands-sdk` 1.x): each event is a JSON object whose
//! `kind` names its class (`ActionEvent`, `ObservationEvent`, `MessageEvent`, ...).
//! The SDK persists a conversation as `events/event-NNNNN-<id>.json`, one file per
//! event; the zero-padded number orders them.
//!
//! Each event is deserialized once into [`SdkEvent`], which names only the
//! fields the normalized form uses; the rest of the JSON is skipped unparsed.

pub(super) mod hook;
pub(super) mod v0;

pub(super) use hook::HOOK;

use super::events_error::EventsError;
use super::format::Format;
use super::lenient::{OptI64, OptStr, Text};
use super::records::{Record, Records};
use crate::sys::json_error::describe;
use critic_sdk::{Event, EventKind};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::path::Path;

/// OpenHands SDK events: JSONL, a JSON array, or a persisted `events/` directory.
pub(super) static FORMAT: Format = Format {
    name: "openhands",
    about: "OpenHands SDK events: JSONL, a JSON array, or a persisted events/ directory",
    sniff,
    read_dir: Some(read_dir),
    normalize,
};

/// An SDK event names its class (`MessageEvent`, ...) in a string `kind`;
/// a V0 output record, which may also have one, carries a `history`.
fn sniff(first: &str) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        history: Option<serde::de::IgnoredAny>,
        kind: Option<Value>,
    }
    serde_json::from_str::<Probe>(first).is_ok_and(|p| {
        p.history.is_none()
            && p.kind
                .as_ref()
                .and_then(Value::as_str)
                .is_some_and(|k| k.starts_with(|c: char| c.is_ascii_uppercase()))
    })
}

/// Read a persisted events directory (or a conversation directory holding one).
fn read_dir(dir: &Path) -> Result<Vec<Record>, EventsError> {
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
        .take(super::events_error::MAX_EVENTS + 1)
        .collect();
    if files.is_empty() {
        return Err(EventsError::Empty(events_dir));
    }
    if files.len() > super::events_error::MAX_EVENTS {
        return Err(super::events_error::too_many(&events_dir, 0, "event files"));
    }
    files.sort();
    // The whole directory gets the budget of one events file, checked
    // before any is read.
    let total = files.iter().fold(0u64, |sum, path| {
        sum.saturating_add(std::fs::metadata(path).map_or(0, |m| m.len()))
    });
    if total > super::events_error::MAX_EVENTS_FILE_BYTES {
        return Err(EventsError::Shape {
            path: events_dir,
            message: format!(
                "holds more than {} MiB of events",
                super::events_error::MAX_EVENTS_FILE_BYTES >> 20
            ),
        });
    }
    files
        .into_iter()
        .map(|path| {
            let text = super::events_error::read_events_file(&path)?;
            let raw: Box<RawValue> = serde_json::from_str(text.trim())
                .map_err(|e| super::records::malformed(&path, 1, &e))?;
            Ok(Record::inline(1, raw))
        })
        .collect()
}

/// Normalize SDK events: each converts on its own.
fn normalize(path: &Path, records: Records) -> Result<Vec<Event>, EventsError> {
    super::records::parsed(path, records)
        .enumerate()
        .map(|(index, parsed)| parsed.map(|(record, event)| convert(index, record, event)))
        .collect()
}

/// The fields of an SDK event the normalized form uses.
#[derive(Deserialize, Default)]
#[serde(default)]
struct SdkEvent {
    kind: OptStr,
    source: OptStr,
    timestamp: OptStr,
    tool_name: OptStr,
    tool_call_id: OptStr,
    llm_message: Option<Content>,
    system_prompt: Option<SystemPrompt>,
    action: Option<Map<String, Value>>,
    thought: Text,
    observation: Option<Observation>,
    error: OptStr,
    rejection_reason: OptStr,
    tool_call: Option<ToolCall>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Content {
    content: Text,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct SystemPrompt {
    text: OptStr,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Observation {
    content: Text,
    exit_code: OptI64,
    metadata: Option<ObservationMetadata>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ObservationMetadata {
    exit_code: OptI64,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ToolCall {
    arguments: OptStr,
}

fn convert(index: usize, record: Record, event: Result<SdkEvent, serde_json::Error>) -> Event {
    // Leaf fields tolerate any JSON type; only a structurally foreign event
    // (say, `observation` as a string) fails here, and it is kept as `other`.
    let v = match event {
        Ok(v) => v,
        Err(e) => {
            let (line, column) = record.place_of(&e);
            tracing::warn!(
                index,
                line,
                column,
                "event does not look like an OpenHands SDK event ({}); kept as `other`",
                describe(&e)
            );
            return record.event(index, EventKind::Other);
        }
    };
    let class = v.kind.0.unwrap_or_default();
    let action_kind = v
        .action
        .as_ref()
        .and_then(|a| a.get("kind"))
        .and_then(Value::as_str);
    let mut e = record.event(index, kind_of(&class, action_kind));
    e.source = v.source.0;
    e.timestamp = v.timestamp.0;
    e.tool = v.tool_name.0;
    e.call_id = v.tool_call_id.0;
    match class.as_str() {
        "MessageEvent" => e.text = v.llm_message.and_then(|m| m.content.0),
        "SystemPromptEvent" => e.text = v.system_prompt.and_then(|p| p.text.0),
        "ActionEvent" => {
            e.text = if e.kind == EventKind::Finish {
                v.action
                    .as_ref()
                    .and_then(|a| a.get("message"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            } else {
                v.thought.0.filter(|t| !t.is_empty())
            };
            e.arguments = arguments(v.action, v.tool_call);
        }
        "ObservationEvent" => {
            if let Some(obs) = v.observation {
                e.output = obs.content.0;
                e.exit_code = obs.exit_code.0.or(obs.metadata.and_then(|m| m.exit_code.0));
            }
        }
        "AgentErrorEvent" => e.text = v.error.0,
        "UserRejectObservation" => e.output = v.rejection_reason.0,
        _ => {}
    }
    e.original_kind = Some(class);
    e
}

fn kind_of(class: &str, action_kind: Option<&str>) -> EventKind {
    match class {
        "MessageEvent" => EventKind::Message,
        "ActionEvent" => {
            if action_kind == Some("FinishAction") {
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

/// The validated action (minus its class tag and null fields), or the raw
/// tool-call arguments.
fn arguments(action: Option<Map<String, Value>>, tool_call: Option<ToolCall>) -> Option<Value> {
    if let Some(mut args) = action {
        args.remove("kind");
        args.retain(|_, x| !x.is_null());
        return Some(Value::Object(args));
    }
    let text = tool_call?.arguments.0?;
    serde_json::from_str(&text).ok()
}

//! OpenHands V0 history: the `history` list of an evaluation `output.jsonl`
//! record, or a bare history array. An event has either `action` or
//! `observation` naming its type (`run`, `edit`, `finish`, ...); observations
//! point at their action through `cause`.

use crate::agents::events_error::EventsError;
use crate::agents::format::Format;
use crate::agents::record_to_events::{event, str_field};
use crate::agents::records::{Record, Records};
use critic_sdk::{Event, EventKind};
use serde_json::value::RawValue;
use serde_json::Value;
use std::path::Path;

/// OpenHands V0 history: an `output.jsonl` record or a bare history array.
pub(in crate::agents) static FORMAT: Format = Format {
    name: "openhands-v0",
    about: "OpenHands V0 history: an output.jsonl record or a bare history array",
    sniff,
    read_dir: None,
    normalize,
};

/// A V0 stream starts with an output record (it has a `history`) or with a
/// history entry, whose `action` or `observation` is a string.
fn sniff(first: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        history: Option<serde::de::IgnoredAny>,
        action: Option<Value>,
        observation: Option<Value>,
    }
    serde_json::from_str::<Probe>(first).is_ok_and(|p| {
        p.history.is_some()
            || p.action.as_ref().is_some_and(Value::is_string)
            || p.observation.as_ref().is_some_and(Value::is_string)
    })
}

/// Normalize V0 records: either one `output.jsonl` record with `history`, or
/// history entries.
fn normalize(path: &Path, records: Records) -> Result<Vec<Event>, EventsError> {
    let records = records.collect::<Result<Vec<Record>, EventsError>>()?;
    let entries: Vec<Box<RawValue>> = match records.first() {
        Some(first) if first.json().contains("\"history\"") && is_record(first.json()) => {
            if records.len() > 1 {
                return Err(EventsError::Shape {
                    path: path.to_path_buf(),
                    message: format!(
                        "holds {} output.jsonl records (line {} and on); pass a file with one instance's record",
                        records.len(),
                        records[1].line
                    ),
                });
            }
            first
                .parse::<HistoryRecord>(path)?
                .map(|h| h.history)
                .map_err(|e| first.unexpected(path, "`history` is not a list of events", &e))?
        }
        _ => records
            .into_iter()
            .map(|r| r.into_raw(path))
            .collect::<Result<_, _>>()?,
    };
    Ok(entries
        .into_iter()
        .enumerate()
        .map(|(i, raw)| {
            let value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
            convert(i, raw, &value)
        })
        .collect())
}

/// Whether `json` is an `output.jsonl` record (an object with a `history` key)
/// rather than a history entry; the history itself is skipped unparsed.
fn is_record(json: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        history: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_str::<Probe>(json).is_ok_and(|p| p.history.is_some())
}

#[derive(serde::Deserialize)]
struct HistoryRecord {
    history: Vec<Box<RawValue>>,
}

fn convert(index: usize, raw: Box<RawValue>, v: &Value) -> Event {
    let action = str_field(v, "action");
    let observation = str_field(v, "observation");
    let kind = match (action.as_deref(), observation.as_deref()) {
        (Some("message"), _) => EventKind::Message,
        (Some("finish"), _) => EventKind::Finish,
        (Some("system"), _) | (Some("change_agent_state"), _) | (Some("recall"), _) => {
            EventKind::System
        }
        (Some(_), _) => EventKind::Action,
        (_, Some("error")) => EventKind::Error,
        (_, Some("agent_state_changed")) | (_, Some("recall")) => EventKind::System,
        (_, Some(_)) => EventKind::Observation,
        _ => EventKind::Other,
    };
    let mut e = event(index, kind, raw);
    e.original_kind = action.clone().or(observation.clone());
    e.source = str_field(v, "source");
    e.timestamp = str_field(v, "timestamp");
    let args = v.get("args");
    let extras = v.get("extras");
    match kind {
        EventKind::Message => {
            e.text = args
                .and_then(|a| str_field(a, "content"))
                .or_else(|| str_field(v, "message"));
        }
        EventKind::Finish => {
            e.text = args
                .and_then(|a| str_field(a, "final_thought").filter(|t| !t.is_empty()))
                .or_else(|| str_field(v, "message"));
        }
        EventKind::Action => {
            e.tool = v
                .pointer("/tool_call_metadata/function_name")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or(action);
            e.call_id = v.get("id").map(id_string);
            e.arguments = args.cloned();
            e.text = args
                .and_then(|a| str_field(a, "thought"))
                .filter(|t| !t.is_empty());
        }
        EventKind::Observation | EventKind::Error => {
            e.call_id = v.get("cause").map(id_string);
            e.tool = v
                .pointer("/tool_call_metadata/function_name")
                .and_then(Value::as_str)
                .map(str::to_string);
            e.output = str_field(v, "content");
            e.exit_code = extras.and_then(|x| {
                x.pointer("/metadata/exit_code")
                    .or_else(|| x.get("exit_code"))
                    .and_then(Value::as_i64)
            });
            if kind == EventKind::Error {
                e.text = e.output.clone();
            }
        }
        _ => {}
    }
    e
}

fn id_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

//! Gemini CLI (`@google/gemini-cli`): its chat recordings and its
//! `AfterAgent` hook.
//!
//! A recording is JSONL under `~/.gemini/tmp/<project>/chats/session-*.jsonl`:
//! a header (`sessionId`, `projectHash`), then records that change the
//! message list: a message (any record with an `id`; a later record with
//! the same id replaces it in place), `{"$set": {"messages": [...]}}` (a
//! new list), `{"$rewindTo": id}` (drops that message and what follows).
//! Older versions wrote one JSON document with `messages`. A `gemini`
//! message holds the model's text and its `toolCalls`, each with its result
//! (`output` or `error`); a command's exit code is only in its output text
//! (`Exit Code: N`).

pub(super) mod hook;

pub(super) use hook::HOOK;

use super::events_error::EventsError;
use super::format::Format;
use super::record_to_events::Origin;
use super::records::Records;
use critic_sdk::{Event, EventKind};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::path::Path;

/// Gemini CLI chat recordings.
pub(super) static FORMAT: Format = Format {
    name: "gemini",
    about: "Gemini CLI chat recording (~/.gemini/tmp/<project>/chats/session-*.jsonl)",
    sniff,
    read_dir: None,
    normalize,
};

/// A recording opens with its header, which names the project's hash.
fn sniff(first: &str) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(rename = "projectHash")]
        project_hash: Option<Value>,
        #[serde(rename = "sessionId")]
        session_id: Option<Value>,
    }
    serde_json::from_str::<Probe>(first)
        .is_ok_and(|p| p.project_hash.is_some() && p.session_id.is_some())
}

/// The id of the context message Gemini CLI opens every chat with.
const SESSION_CONTEXT_ID: &str = "d04923d38bb0f6017037e74183378ef4";

fn normalize(path: &Path, records: Records) -> Result<Vec<Event>, EventsError> {
    let mut messages = Messages::default();
    for record in records {
        let record = record?;
        let value: Value = record
            .parse(path)?
            .map_err(|e| record.unexpected(path, "not a JSON value", &e))?;
        let list = value
            .get("$set")
            .and_then(|s| s.get("messages"))
            .or_else(|| value.get("messages"));
        if let Some(list) = list {
            // Read from the value, the error has no place of its own: the
            // record's line is the place.
            let list: Vec<Box<RawValue>> =
                serde_json::from_value(list.clone()).map_err(|e| EventsError::Unexpected {
                    path: path.to_path_buf(),
                    line: record.line,
                    column: 0,
                    what: "`messages` is not a list".into(),
                    message: crate::sys::json_error::describe(&e),
                })?;
            messages = Messages::default();
            for raw in list {
                if let Some(id) = id_of(&raw) {
                    messages.put(id, raw);
                }
            }
        } else if let Some(id) = value.get("$rewindTo").and_then(Value::as_str) {
            messages.rewind_to(id);
        } else if let Some(id) = value.get("id").and_then(Value::as_str) {
            messages.put(id.to_string(), record.into_raw(path)?);
        }
    }
    let mut events = Vec::new();
    for (id, raw) in messages.list {
        // Past the limit the stream is refused (`checked`): stop making events.
        if events.len() > super::events_error::MAX_EVENTS {
            break;
        }
        convert(&mut events, id, raw);
    }
    super::record_to_events::mark_turn_ends(&mut events);
    Ok(events)
}

/// The message list as the recording's records leave it.
#[derive(Default)]
struct Messages {
    list: Vec<(String, Box<RawValue>)>,
    /// Each id's place in `list`.
    at: std::collections::HashMap<String, usize>,
}

impl Messages {
    /// Add a message, or replace the one with its id in place.
    fn put(&mut self, id: String, raw: Box<RawValue>) {
        match self.at.get(&id) {
            Some(&i) => self.list[i].1 = raw,
            None => {
                self.at.insert(id.clone(), self.list.len());
                self.list.push((id, raw));
            }
        }
    }

    /// Drop message `id` and every one after it.
    fn rewind_to(&mut self, id: &str) {
        if let Some(&i) = self.at.get(id) {
            for (gone, _) in self.list.drain(i..) {
                self.at.remove(&gone);
            }
        }
    }
}

fn id_of(raw: &RawValue) -> Option<String> {
    #[derive(Deserialize)]
    struct Id {
        id: Option<String>,
    }
    serde_json::from_str::<Id>(raw.get()).ok()?.id
}

/// The fields of a message the normalized form uses.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Message {
    #[serde(rename = "type")]
    kind: Option<String>,
    timestamp: Option<String>,
    content: Value,
    #[serde(rename = "toolCalls")]
    tool_calls: Vec<ToolCall>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ToolCall {
    id: Option<String>,
    name: Option<String>,
    args: Option<Value>,
    result: Value,
    status: Option<String>,
}

fn convert(events: &mut Vec<Event>, id: String, raw: Box<RawValue>) {
    let message: Message = serde_json::from_str(raw.get()).unwrap_or_default();
    let class = message.kind.clone().unwrap_or_default();
    // Messages are replaced in place, so none is a record of the file's:
    // each keeps its JSON.
    let mut origin = Origin {
        raw: Some(raw),
        span: None,
        class: class.clone(),
        timestamp: message.timestamp,
    };
    let text = super::record_to_events::text_of(&message.content);
    match class.as_str() {
        "user" if id == SESSION_CONTEXT_ID || text.starts_with("<session_context>") => {
            origin.push(events, EventKind::System, "system").text = Some(text);
        }
        // A user message of tool results repeats what the calls recorded.
        "user" if text.is_empty() => {}
        "user" => origin.push(events, EventKind::Message, "user").text = Some(text),
        "gemini" => {
            if !text.is_empty() {
                origin.push(events, EventKind::Message, "agent").text = Some(text);
            }
            for call in message.tool_calls {
                if events.len() > super::events_error::MAX_EVENTS {
                    break;
                }
                let name = call.name.unwrap_or_default();
                let action = origin.push(events, EventKind::Action, "agent");
                action.tool = Some(name.clone());
                action.call_id = call.id.clone();
                action.arguments = call.args;
                let (output, failed) = result_of(&call.result);
                let observation = origin.push(events, EventKind::Observation, "environment");
                let failed = failed || call.status.as_deref() == Some("error");
                observation.exit_code = match name.as_str() {
                    "run_shell_command" => exit_code(&output).or(failed.then_some(1)),
                    _ => None,
                };
                observation.tool = Some(name);
                observation.call_id = call.id;
                observation.output = Some(output);
            }
        }
        "error" => origin.push(events, EventKind::Error, "system").text = Some(text),
        _ => origin.push(events, EventKind::System, "system").text = Some(text),
    }
}

/// A tool call's result text, and whether it is an error.
fn result_of(result: &Value) -> (String, bool) {
    let parts = result.as_array().map(Vec::as_slice).unwrap_or_default();
    let mut failed = false;
    let text: Vec<String> = parts
        .iter()
        .filter_map(|p| p.get("functionResponse")?.get("response"))
        .filter_map(|r| match (r.get("output"), r.get("error")) {
            (Some(out), _) => Some(out.as_str().map_or_else(|| out.to_string(), str::to_string)),
            (None, Some(err)) => {
                failed = true;
                Some(err.as_str().map_or_else(|| err.to_string(), str::to_string))
            }
            _ => None,
        })
        .collect();
    (text.join("\n"), failed)
}

/// `Exit Code: N` in a shell tool's output.
fn exit_code(output: &str) -> Option<i64> {
    output
        .lines()
        .find_map(|l| l.trim().strip_prefix("Exit Code: "))
        .and_then(|n| n.trim().parse().ok())
        .or_else(|| output.contains("Output:").then_some(0))
}

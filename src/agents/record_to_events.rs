//! What every reader uses to turn an agent's records into normalized
//! events: where an event comes from ([`Origin`]), its text, the finishes
//! a turn's end marks.

use critic_sdk::{Event, EventKind, RawSpan};
use serde_json::value::RawValue;
use serde_json::Value;

/// A blank event of `kind` carrying `raw`; adapters fill in what they know.
pub(crate) fn event(index: usize, kind: EventKind, raw: Box<RawValue>) -> Event {
    Event {
        raw: Some(raw),
        ..Event::new(index, kind)
    }
}

/// Where the events of one transcript record come from: for readers whose
/// records each become several events (a reply's text and its calls).
pub(crate) struct Origin {
    /// The record's JSON, unless only its place is kept. Only the first
    /// event of the record gets a copy: a record of many calls must not
    /// cost its size once per call.
    pub raw: Option<Box<RawValue>>,
    /// Its place in its file.
    pub span: Option<RawSpan>,
    /// Its type in the agent's format.
    pub class: String,
    /// Its timestamp.
    pub timestamp: Option<String>,
}

impl Origin {
    /// A new event of this record at the end of `events`.
    pub fn push<'a>(
        &mut self,
        events: &'a mut Vec<Event>,
        kind: EventKind,
        source: &str,
    ) -> &'a mut Event {
        let mut e = Event {
            raw: self.raw.take(),
            raw_span: self.span,
            ..Event::new(events.len(), kind)
        };
        e.original_kind = Some(self.class.clone());
        e.source = Some(source.to_string());
        e.timestamp = self.timestamp.clone();
        events.push(e);
        events.last_mut().expect("just pushed")
    }
}

/// Mark as finishes the agent's messages that ended its turn: those the
/// agent did nothing after (no call, no result) before a message of anyone
/// else or the end of the stream. For agents whose transcripts record a
/// stop as nothing more than a last reply (Claude Code, Codex, ...).
pub(crate) fn mark_turn_ends(events: &mut [Event]) {
    let mut turn_goes_on = false;
    for e in events.iter_mut().rev() {
        match e.kind {
            EventKind::Action | EventKind::Observation => turn_goes_on = true,
            EventKind::Message if e.source.as_deref() == Some("agent") => {
                if !turn_goes_on {
                    e.kind = EventKind::Finish;
                }
                turn_goes_on = true;
            }
            EventKind::Message | EventKind::System | EventKind::Finish => turn_goes_on = false,
            EventKind::Error | EventKind::Other => {}
        }
    }
}

/// A message's text: a string, or the `text` of its parts, joined.
pub(crate) fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

pub(crate) fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

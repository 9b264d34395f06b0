//! The host's own normalized events, as `critic events --output json`
//! prints them: a JSON array (or JSONL) of events with `index` and `kind`.
//!
//! No agent writes this format. It is what a program without a transcript
//! of its own hands the host: `critic experiment`'s `command` adapter
//! records each turn in it (the prompt it sent, the program's exit as the
//! finish), and a transcript converted once with `critic events` reads back
//! unchanged. Indices are renumbered in stream order.

use super::events_error::EventsError;
use super::format::Format;
use super::records::Records;
use critic_sdk::{Event, EventKind};
use serde::Deserialize;
use std::path::Path;

/// Normalized events.
pub(super) static FORMAT: Format = Format {
    name: "critic",
    about: "the host's normalized events (`critic events --output json`, or one per line)",
    sniff,
    read_dir: None,
    normalize,
};

/// A record with an integer `index` and one of the normalized kinds.
fn sniff(first: &str) -> bool {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(rename = "index")]
        _index: usize,
        #[serde(rename = "kind")]
        _kind: critic_sdk::EventKind,
    }
    serde_json::from_str::<Probe>(first).is_ok()
}

fn normalize(path: &Path, records: Records) -> Result<Vec<Event>, EventsError> {
    let mut events = Vec::new();
    // Parsed as JSON first, so a line that is not JSON is malformed before
    // it can be a record that is not an event.
    for parsed in super::records::parsed::<serde_json::Value>(path, records) {
        let (record, value) = parsed?;
        let event = match value.and_then(serde_json::from_value::<Event>) {
            Ok(mut event) => {
                event.index = events.len();
                event
            }
            // Kept, as every reader keeps what it does not know.
            Err(e) => {
                let (line, column) = record.place_of(&e);
                tracing::warn!(line, column, "not a normalized event; kept as `other`");
                record.event(events.len(), EventKind::Other)
            }
        };
        events.push(event);
    }
    Ok(events)
}

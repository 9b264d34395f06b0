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

#[cfg(test)]
mod tests {
    use crate::agents::{parse, EventsFormat};
    use critic_sdk::EventKind;
    use std::path::Path;

    #[test]
    fn reads_what_critic_events_prints_and_renumbers() {
        let text = r#"[{"index": 7, "kind": "message", "source": "user", "text": "fix it"},
                       {"index": 9, "kind": "finish", "source": "agent", "text": "done", "exit_code": 0}]"#;
        let events = parse(Path::new("t.json"), text, None).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].kind, EventKind::Finish);
        assert_eq!((events[0].index, events[1].index), (0, 1));
        assert_eq!(events[1].text.as_deref(), Some("done"));
    }

    #[test]
    fn a_record_that_is_not_an_event_is_kept_and_a_broken_line_is_an_error() {
        let format: EventsFormat = "critic".parse().unwrap();
        let text = "{\"index\": 0, \"kind\": \"message\"}\n{\"index\": 1, \"kind\": \"bogus\"}\n";
        let events = parse(Path::new("t.jsonl"), text, Some(format)).unwrap();
        assert_eq!(events[1].kind, EventKind::Other);
        let e = parse(
            Path::new("t.jsonl"),
            "{\"index\": 0, \"kind\": \"message\"}\n{oops\n",
            Some(format),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("t.jsonl:2"), "{e}");
    }
}

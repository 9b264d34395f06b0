//! The event stream as detectors fetch it through the `events` and
//! `event-raw` host functions.
//!
//! A finish's events are shared by every signal of a check. They are encoded
//! for detectors at most once (on the first fetch) and without each event's
//! original JSON, which a detector asks for per event.

use critic_sdk::Event;
use std::fs::File;
use std::sync::{Arc, OnceLock};

/// One finish's events, shared by every detector call of a check.
#[derive(Debug)]
pub struct EventFeed {
    events: Arc<[Event]>,
    lean: OnceLock<Arc<str>>,
    /// Where events that keep only a `raw_span` have their JSON.
    transcript: Option<Arc<File>>,
}

impl EventFeed {
    /// A feed over `events`.
    pub fn new(events: Arc<[Event]>) -> EventFeed {
        EventFeed::with_transcript(events, None)
    }

    /// A feed over `events` read from `transcript`, where those that keep
    /// only their place have their JSON.
    pub fn with_transcript(events: Arc<[Event]>, transcript: Option<Arc<File>>) -> EventFeed {
        EventFeed {
            events,
            lean: OnceLock::new(),
            transcript,
        }
    }

    /// The events as a JSON array without `raw`, encoded on first use
    /// (large streams in chunks, one thread per core).
    pub fn lean_json(&self) -> Arc<str> {
        self.lean.get_or_init(|| encode(&self.events)).clone()
    }

    /// How many events there are.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Events `start..end` (clamped to the stream) as a JSON array without
    /// `raw`, like [`EventFeed::lean_json`] for the whole stream.
    pub fn lean_range(&self, start: usize, end: usize) -> String {
        let end = end.min(self.events.len());
        let lean: Vec<_> = self.events[start.min(end)..end]
            .iter()
            .map(Event::lean)
            .collect();
        serde_json::to_string(&lean).unwrap_or_else(|_| "[]".to_string())
    }

    /// The original JSON of event `index`: kept, or read back from the
    /// transcript (`None` if the agent has since rewritten that part).
    pub fn raw(&self, index: usize) -> Option<String> {
        let event = self.events.get(index)?;
        match (&event.raw, event.raw_span, &self.transcript) {
            (Some(raw), _, _) => Some(raw.get().to_string()),
            (None, Some(span), Some(file)) => crate::agents::read_back(file, span),
            _ => None,
        }
    }
}

/// Events per chunk below which one thread encodes everything.
const CHUNK: usize = 2048;

fn encode(events: &[Event]) -> Arc<str> {
    // Encoding strings and `Value`s into a String cannot fail.
    let encode_chunk = |chunk: &[Event]| {
        let lean: Vec<_> = chunk.iter().map(Event::lean).collect();
        serde_json::to_string(&lean).unwrap_or_else(|_| "[]".to_string())
    };
    let threads = match events.len() / CHUNK {
        0 | 1 => 1,
        chunks => crate::sys::parallel::cores().min(chunks),
    };
    if threads == 1 {
        return encode_chunk(events).into();
    }
    let parts: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = events
            .chunks(events.len().div_ceil(threads))
            .map(|chunk| s.spawn(move || encode_chunk(chunk)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    // Each part is `[...]`; splice their insides into one array.
    let mut out = String::with_capacity(parts.iter().map(String::len).sum::<usize>());
    out.push('[');
    for part in parts
        .iter()
        .map(|p| &p[1..p.len() - 1])
        .filter(|p| !p.is_empty())
    {
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(part);
    }
    out.push(']');
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use critic_sdk::EventKind;
    use serde_json::value::RawValue;
    use serde_json::{json, Value};

    #[test]
    fn lean_json_is_the_events_without_raw() {
        let events: Vec<Event> = vec![Event {
            index: 0,
            kind: EventKind::Action,
            original_kind: Some("ActionEvent".into()),
            source: Some("agent".into()),
            tool: Some("terminal".into()),
            call_id: Some("c1".into()),
            arguments: Some(json!({"command": "pytest"})),
            text: Some("thinking".into()),
            output: Some("out".into()),
            exit_code: Some(2),
            timestamp: Some("t".into()),
            raw: Some(RawValue::from_string(r#"{"kind":"ActionEvent"}"#.into()).unwrap()),
            raw_span: None,
        }];
        let mut expected = serde_json::to_value(&events).unwrap();
        expected[0].as_object_mut().unwrap().remove("raw");
        let feed = EventFeed::new(events.into());
        let lean: Value = serde_json::from_str(&feed.lean_json()).unwrap();
        assert_eq!(
            lean, expected,
            "LeanEvent must list every Event field but raw"
        );
        assert_eq!(feed.raw(0).as_deref(), Some(r#"{"kind":"ActionEvent"}"#));
        assert_eq!(feed.raw(1), None);
    }

    #[test]
    fn chunked_encoding_equals_one_pass() {
        let events: Vec<Event> = (0..5000)
            .map(|index| Event {
                text: Some(format!("m{index}")),
                ..Event::new(index, EventKind::Message)
            })
            .collect();
        let chunked = encode(&events);
        let lean: Vec<_> = events.iter().map(Event::lean).collect();
        assert_eq!(&*chunked, serde_json::to_string(&lean).unwrap());
    }

    #[test]
    fn a_large_transcripts_events_read_their_json_back_from_the_file() {
        let lines = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fuzz-corpus/events/claude-code.jsonl"),
        )
        .unwrap();
        // Blank and indented lines: places are of the trimmed records.
        let text = format!("\n  {}", lines.replace('\n', "\n\n"));
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
        let inline = crate::agents::load(f.path(), None).unwrap();
        let lazy = crate::agents::load_with(f.path(), None, Some(0)).unwrap();
        let file = lazy.raw_file.expect("the file stays open");
        assert_eq!(inline.len(), lazy.events.len());
        let feed = EventFeed::with_transcript(lazy.events.clone().into(), Some(file.clone()));
        for (a, b) in inline.iter().zip(&lazy.events) {
            assert!(b.raw.is_none() && b.raw_span.is_some());
            assert_eq!(a.text, b.text);
            assert_eq!(
                feed.raw(b.index).as_deref(),
                a.raw.as_ref().map(|r| r.get())
            );
        }
        // A file rewritten since gives no JSON where it had some, never
        // something else taken for it.
        std::fs::write(f.path(), "x".repeat(text.len())).unwrap();
        assert_eq!(feed.raw(0), None);
        // Small files keep their JSON.
        let small = crate::agents::load_with(f.path(), None, Some(u64::MAX));
        assert!(small.is_err(), "the rewritten file is no transcript");
    }
}

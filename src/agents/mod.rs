//! Agents' transcripts, read from their native formats into [`Event`]s.
//!
//! Each agent is one folder holding its readers and the sniffing that
//! recognizes its files; [`FORMATS`] registers them. Detection asks each
//! registered format in turn, so nothing here knows any format's fields.
//! Event kinds a reader does not know are kept as [`EventKind::Other`] with
//! their original JSON, never dropped.

mod claude_code;
mod codex;
mod copilot;
mod critic;
mod cursor;
mod events_error;
mod format;
mod gemini;
pub mod hook;
pub mod install;
mod lenient;
mod mini_swe_agent;
mod openhands;
mod record_to_events;
mod records;
pub mod session_id;
mod swe_agent;

use critic_sdk::Event;
pub(crate) use events_error::too_many;
pub use events_error::{EventsError, MAX_EVENTS, MAX_EVENTS_FILE_BYTES};
pub use format::Format;
pub(crate) use records::{read_back, Record, Records};
use std::fmt;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

/// Every transcript format the host reads, asked in this order when a
/// stream's format is detected.
pub static FORMATS: &[&Format] = &[
    &swe_agent::FORMAT,
    &gemini::FORMAT,
    &openhands::FORMAT,
    &openhands::v0::FORMAT,
    &claude_code::FORMAT,
    &codex::FORMAT,
    &copilot::FORMAT,
    &cursor::FORMAT,
    &mini_swe_agent::FORMAT,
    // Last: its records' `index` and `kind` could be fields of another's.
    &critic::FORMAT,
];

/// Every agent with a stop hook the host answers.
pub static HOOKS: &[&hook::HookProtocol] = &[
    &claude_code::HOOK,
    &codex::HOOK,
    &copilot::HOOK,
    &gemini::HOOK,
    &cursor::HOOK,
    &openhands::HOOK,
];

/// The protocol of `agent`, by its name in `critic hook <agent>`.
pub fn hook_protocol(agent: &str) -> Option<&'static hook::HookProtocol> {
    HOOKS.iter().copied().find(|h| h.agent == agent)
}

/// Every hooked agent's name, comma-separated (for messages).
pub fn hooked_agents_described() -> String {
    HOOKS
        .iter()
        .map(|h| format!("  {}: {}", h.agent, h.about))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A transcript format chosen by name (`--events-format`, a request's
/// `events_format`).
#[derive(Clone, Copy)]
pub struct EventsFormat(&'static Format);

impl EventsFormat {
    /// Every registered format's name, comma-separated (for messages).
    pub fn names() -> String {
        FORMATS
            .iter()
            .map(|f| f.name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Every registered format with what it reads, for messages.
    pub fn described() -> String {
        FORMATS
            .iter()
            .map(|f| format!("{} ({})", f.name, f.about))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl std::str::FromStr for EventsFormat {
    type Err = String;
    fn from_str(name: &str) -> Result<Self, String> {
        FORMATS
            .iter()
            .find(|f| f.name == name)
            .map(|f| EventsFormat(f))
            .ok_or_else(|| {
                format!(
                    "unknown events format {name:?}; expected one of: {}",
                    EventsFormat::names()
                )
            })
    }
}

impl PartialEq for EventsFormat {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for EventsFormat {}

impl fmt::Debug for EventsFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}

impl fmt::Display for EventsFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}

impl serde::Serialize for EventsFormat {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.0.name)
    }
}

impl<'de> serde::Deserialize<'de> for EventsFormat {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// The records of `records`, an error in place of the one past
/// [`MAX_EVENTS`].
fn capped<'a>(path: &'a Path, records: Records<'a>) -> Records<'a> {
    Box::new(records.enumerate().map(move |(i, record)| match record {
        Ok(r) if i >= MAX_EVENTS => Err(too_many(path, r.line, "records")),
        other => other,
    }))
}

/// A transcript read for a check: its events and, for a large one, the
/// open file its events' original JSON is read back from (see
/// [`records`]'s module documentation).
pub struct Transcript {
    /// The normalized events.
    pub events: Vec<Event>,
    /// Where events that carry only a [`RawSpan`] have their JSON.
    pub raw_file: Option<Arc<File>>,
}

/// The size from which a transcript's events keep only the place of their
/// original JSON, not the JSON: every transcript read for a check. Events
/// that share a record then share its place, and none holds a copy.
pub const RAW_SPANS_FROM: u64 = 0;

/// Read and normalize an event stream: a file, or a directory an agent
/// persists its events in. Every event keeps its original JSON.
pub fn load(path: &Path, format: Option<EventsFormat>) -> Result<Vec<Event>, EventsError> {
    Ok(load_with(path, format, None)?.events)
}

/// [`load`] for a check: the events of a transcript of at least
/// [`RAW_SPANS_FROM`] bytes keep only where their JSON is in the file.
pub fn load_transcript(
    path: &Path,
    format: Option<EventsFormat>,
) -> Result<Transcript, EventsError> {
    load_with(path, format, Some(RAW_SPANS_FROM))
}

pub(crate) fn load_with(
    path: &Path,
    format: Option<EventsFormat>,
    spans_from: Option<u64>,
) -> Result<Transcript, EventsError> {
    let meta = std::fs::metadata(path).map_err(|source| EventsError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if meta.is_dir() {
        let (format, read_dir) = match format {
            Some(f) => match f.0.read_dir {
                Some(read_dir) => (f.0, read_dir),
                None => {
                    return Err(EventsError::Shape {
                        path: path.to_path_buf(),
                        message: format!("is a directory; {f} events are read from a file"),
                    })
                }
            },
            None => FORMATS
                .iter()
                .find_map(|f| f.read_dir.map(|read| (*f, read)))
                .ok_or_else(|| EventsError::Unknown {
                    path: path.to_path_buf(),
                    formats: EventsFormat::described(),
                })?,
        };
        let records = read_dir(path)?;
        return Ok(Transcript {
            events: checked(
                path,
                (format.normalize)(path, capped(path, Box::new(records.into_iter().map(Ok))))?,
            )?,
            raw_file: None,
        });
    }
    let (records, raw_file) = records::from_file(path, spans_from)?;
    Ok(Transcript {
        events: normalize(path, records, format)?,
        raw_file,
    })
}

/// Normalize an event stream held in memory; `label` names it in errors.
pub fn parse(
    label: &Path,
    text: &str,
    format: Option<EventsFormat>,
) -> Result<Vec<Event>, EventsError> {
    let records = records::from_text(label, text)?;
    normalize(label, Box::new(records.into_iter().map(Ok)), format)
}

/// `records` in `format`, or in the format their first record is in.
fn normalize(
    path: &Path,
    records: Records<'_>,
    format: Option<EventsFormat>,
) -> Result<Vec<Event>, EventsError> {
    let mut records = records.peekable();
    let format = match format {
        Some(f) => f.0,
        None => match records.peek() {
            None => return Err(EventsError::Empty(path.to_path_buf())),
            Some(Err(_)) => {
                return Err(records
                    .next()
                    .and_then(Result::err)
                    .expect("peeked an error"))
            }
            Some(Ok(first)) => detect(path, first)?,
        },
    };
    tracing::debug!(format = format.name, "reading events");
    checked(
        path,
        (format.normalize)(path, capped(path, Box::new(records)))?,
    )
}

/// `events`, unless there are more than [`MAX_EVENTS`].
fn checked(path: &Path, events: Vec<Event>) -> Result<Vec<Event>, EventsError> {
    if events.len() > MAX_EVENTS {
        return Err(too_many(path, 0, "events"));
    }
    Ok(events)
}

/// The first registered format that recognizes the stream's first record.
fn detect(path: &Path, first: &Record) -> Result<&'static Format, EventsError> {
    FORMATS
        .iter()
        .copied()
        .find(|f| (f.sniff)(first.json()))
        .ok_or_else(|| EventsError::Unknown {
            path: path.to_path_buf(),
            formats: EventsFormat::described(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    #[test]
    fn a_compressed_codex_rollout_reads_as_the_plain_one() {
        let plain =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-corpus/events/codex.jsonl");
        let text = std::fs::read(&plain).unwrap();
        let compressed = tempfile::NamedTempFile::new().unwrap();
        let level = ruzstd::encoding::CompressionLevel::Fastest;
        std::fs::write(
            compressed.path(),
            ruzstd::encoding::compress_to_vec(&text[..], level),
        )
        .unwrap();
        let json = |events: Vec<Event>| serde_json::to_string(&events).unwrap();
        let read = load_transcript(compressed.path(), None).unwrap();
        assert!(read.raw_file.is_none());
        assert_eq!(json(read.events), json(load(&plain, None).unwrap()));
    }

    #[test]
    fn a_stream_of_too_many_records_is_refused_in_every_shape() {
        let dir = tempfile::tempdir().unwrap();
        let lines = "{}\n".repeat(MAX_EVENTS + 1);
        let too_many = |e: EventsError| match e {
            EventsError::TooMany { place, what, .. } => (place, what),
            other => panic!("{other}"),
        };
        let jsonl = dir.path().join("many.jsonl");
        std::fs::write(&jsonl, &lines).unwrap();
        let at_the_last = ("line 500001".to_string(), "records");
        for format in ["codex", "claude-code"] {
            let Err(e) = load_transcript(&jsonl, Some(format.parse().unwrap())) else {
                panic!("{format}: read");
            };
            assert_eq!(too_many(e), at_the_last, "{format}");
        }
        let compressed = dir.path().join("many.jsonl.zst");
        let packed = ruzstd::encoding::compress_to_vec(
            lines.as_bytes(),
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        assert!(packed.len() < 100_000, "{}", packed.len());
        std::fs::write(&compressed, packed).unwrap();
        let codex = Some("codex".parse().unwrap());
        assert_eq!(too_many(load(&compressed, codex).unwrap_err()), at_the_last);
        let array = format!("[{}{{}}]", "{},".repeat(MAX_EVENTS));
        let e = parse(Path::new("inline"), &array, codex).unwrap_err();
        assert_eq!(too_many(e), ("line 1".to_string(), "records"));
        assert_eq!(
            too_many(parse(Path::new("inline"), &lines, codex).unwrap_err()),
            at_the_last
        );
        // At the limit, all is read.
        let at_limit = "{}\n".repeat(MAX_EVENTS);
        assert_eq!(
            parse(Path::new("inline"), &at_limit, codex).unwrap().len(),
            MAX_EVENTS
        );
        // Few records of many tiny blocks make no more events.
        let calls = r#"{"type":"tool_use","id":"t","name":"Bash","input":{}},"#.repeat(9_000);
        let line = format!(
            r#"{{"type":"assistant","message":{{"role":"assistant","content":[{}{{"type":"text","text":"x"}}]}}}}"#,
            calls
        );
        let e = parse(
            Path::new("inline"),
            &format!("{line}\n").repeat(MAX_EVENTS / 9_000 + 1),
            Some("claude-code".parse().unwrap()),
        )
        .unwrap_err();
        assert_eq!(too_many(e).1, "events");
    }

    #[test]
    fn a_broken_record_of_a_document_is_not_placed_at_line_0() {
        let deep = format!("[{}{}]", "[".repeat(200), "]".repeat(200));
        let e = parse(
            Path::new("doc.json"),
            &deep,
            Some("gemini".parse().unwrap()),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("doc.json: malformed JSON in a record of the document"),
            "{e}"
        );
    }

    #[test]
    fn devices_and_fifos_are_refused_not_read_forever() {
        let dir = tempfile::tempdir().unwrap();
        let events = dir.path().join("events");
        std::fs::create_dir(&events).unwrap();
        std::os::unix::fs::symlink("/dev/zero", events.join("event-00001.json")).unwrap();
        let e = load(dir.path(), None).unwrap_err().to_string();
        assert!(
            e.contains("event-00001.json") && e.contains("not a regular file"),
            "{e}"
        );
        let fifo = dir.path().join("fifo.jsonl");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let e = load(&fifo, None).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
    }

    #[test]
    fn an_events_directory_has_the_budget_of_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let events = dir.path().join("events");
        std::fs::create_dir(&events).unwrap();
        for i in 0..2 {
            // Sparse: the size counts, no disk is used.
            let f = std::fs::File::create(events.join(format!("event-{i:05}.json"))).unwrap();
            f.set_len(MAX_EVENTS_FILE_BYTES / 2 + 1).unwrap();
        }
        let e = load(dir.path(), None).unwrap_err().to_string();
        assert!(e.contains("holds more than 1024 MiB of events"), "{e}");
    }

    #[test]
    fn malformed_jsonl_names_the_line() {
        let f = write("{\"kind\":\"MessageEvent\"}\n{\"kind\": oops}\n");
        let e = load(f.path(), None).unwrap_err();
        match e {
            EventsError::Malformed { line, column, .. } => assert_eq!((line, column), (2, 10)),
            other => panic!("{other}"),
        }
    }

    #[test]
    fn a_broken_line_read_for_a_check_is_malformed_in_every_format() {
        // Lines read for a check are checked by their reader's parse: each
        // must name the line, deep in a stream that parses in parallel too.
        for (lines, broken) in [(1, "{\"type\": oops}"), (6000, "{\"type\":\"user\"} x")] {
            let mut text = "{\"type\":\"user\",\"kind\":\"MessageEvent\"}\n".repeat(lines);
            text.push_str(broken);
            text.push('\n');
            let f = write(&text);
            for format in FORMATS.iter().filter(|f| !f.name.ends_with("swe-agent")) {
                let e = load_transcript(f.path(), Some(EventsFormat(format)));
                match e {
                    Err(EventsError::Malformed { line, .. }) => {
                        assert_eq!(line, lines + 1, "{}", format.name)
                    }
                    Err(other) => panic!("{}: {other}", format.name),
                    Ok(_) => panic!("{}: a broken line was read", format.name),
                }
            }
        }
    }

    #[test]
    fn empty_and_unknown_files_are_explained() {
        let f = write("  \n");
        assert!(matches!(load(f.path(), None), Err(EventsError::Empty(_))));
        let f = write("{\"hello\": 1}\n");
        let e = load(f.path(), None).unwrap_err().to_string();
        assert!(e.contains("--events-format"), "{e}");
    }

    #[test]
    fn missing_file_is_an_io_error_with_the_path() {
        let e = load(Path::new("/nonexistent/events.jsonl"), None)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("/nonexistent/events.jsonl: cannot read events"),
            "{e}"
        );
    }

    #[test]
    fn reads_what_critic_events_prints_and_renumbers() {
        let text = r#"[{"index": 7, "kind": "message", "source": "user", "text": "fix it"},
                       {"index": 9, "kind": "finish", "source": "agent", "text": "done", "exit_code": 0}]"#;
        let events = parse(Path::new("t.json"), text, None).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].kind, critic_sdk::EventKind::Finish);
        assert_eq!((events[0].index, events[1].index), (0, 1));
        assert_eq!(events[1].text.as_deref(), Some("done"));
    }

    #[test]
    fn a_record_that_is_not_an_event_is_kept_and_a_broken_line_is_an_error() {
        let format: EventsFormat = "critic".parse().unwrap();
        let text = "{\"index\": 0, \"kind\": \"message\"}\n{\"index\": 1, \"kind\": \"bogus\"}\n";
        let events = parse(Path::new("t.jsonl"), text, Some(format)).unwrap();
        assert_eq!(events[1].kind, critic_sdk::EventKind::Other);
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

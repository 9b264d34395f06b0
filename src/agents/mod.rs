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
mod gemini;
pub mod hook;
pub mod install;
mod lenient;
mod mini_swe_agent;
mod openhands;
mod records;
pub mod session_id;
mod swe_agent;

use critic_sdk::{Event, EventKind, RawSpan};
pub(crate) use records::{read_back, Record, Records};
use serde_json::value::RawValue;
use serde_json::Value;
use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One transcript format an agent writes: its name, how to recognize its
/// files, and how to read them.
pub struct Format {
    /// The name users pass as `--events-format`.
    pub name: &'static str,
    /// What it is, for help texts.
    pub about: &'static str,
    /// Whether a stream whose first record is this one is in this format.
    sniff: fn(first: &str) -> bool,
    /// Reads a directory the agent persists its events in, if it does.
    read_dir: Option<ReadDir>,
    /// Turns the records of a stream into normalized events.
    normalize: fn(&Path, Records<'_>) -> Result<Vec<Event>, EventsError>,
}

/// Reads the records of an events directory.
type ReadDir = fn(&Path) -> Result<Vec<Record>, EventsError>;

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

/// Why an event stream could not be read.
#[derive(Debug, thiserror::Error)]
pub enum EventsError {
    /// The file or directory could not be read.
    #[error("{path}: cannot read events: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Nothing in it.
    #[error("{0}: the events file is empty; pass the agent's event stream (JSONL, JSON array, or an events/ directory)")]
    Empty(PathBuf),
    /// Not JSON where JSON was expected.
    #[error("{}", located(path, *line, *column, "malformed JSON", message))]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line; 0 for a record of a JSON document, whose place
        /// in the file is not kept.
        line: usize,
        /// 1-based column.
        column: usize,
        /// serde_json's words, which quote nothing of the file.
        message: String,
    },
    /// JSON, but not what the format holds at that place.
    #[error("{}", located(path, *line, *column, what, message))]
    Unexpected {
        /// The file.
        path: PathBuf,
        /// 1-based line; 0 for a record of a JSON document.
        line: usize,
        /// 1-based column; 0 when not known.
        column: usize,
        /// What the format needs there.
        what: String,
        /// What was expected instead, in serde's words without the value
        /// found (see [`crate::sys::json_error`]).
        message: String,
    },
    /// Valid JSON in an unexpected shape.
    #[error("{path}: {message}")]
    Shape {
        /// The file.
        path: PathBuf,
        /// What was expected.
        message: String,
    },
    /// More records or events than the host reads from one stream.
    #[error("{path}: {place}: more than {limit} {what}; the host reads at most {limit} from one stream (a day-long session holds tens of thousands)", limit = MAX_EVENTS)]
    TooMany {
        /// The file.
        path: PathBuf,
        /// Where the limit was passed.
        place: String,
        /// `records` or `events`.
        what: &'static str,
    },
    /// The format could not be detected.
    #[error("{0}: cannot tell the event format; pass --events-format, one of: {described}", described = EventsFormat::described())]
    Unknown(PathBuf),
}

/// The largest events file the host reads (a 10 MB stream holds about
/// 10,000 events; this leaves room for a day-long session).
pub const MAX_EVENTS_FILE_BYTES: u64 = 1 << 30;

/// The message of an error at a place of an events file: `what` went
/// wrong, in `message`'s words. The file's own text is never part of it:
/// a request may name a secret as its events.
fn located(path: &Path, line: usize, column: usize, what: &str, message: &str) -> String {
    let path = path.display();
    match (line, column) {
        (0, 0) => format!("{path}: {what} in a record of the document: {message}"),
        (0, _) => {
            format!("{path}: {what} in a record of the document (its column {column}): {message}")
        }
        (_, 0) => format!("{path}:{line}: {what}: {message}"),
        _ => format!("{path}:{line}:{column}: {what}: {message}"),
    }
}

/// The most records (JSONL lines, array items, files of an events
/// directory) the host reads from one stream, and the most events it makes
/// of them. Every event costs a few hundred bytes of memory however small
/// its record, so without a count a file of empty records (`{}` lines), or
/// a small compressed one, would take hundreds of times its size.
pub const MAX_EVENTS: usize = 500_000;

/// The records of `records`, an error in place of the one past
/// [`MAX_EVENTS`].
fn capped<'a>(path: &'a Path, records: Records<'a>) -> Records<'a> {
    Box::new(records.enumerate().map(move |(i, record)| match record {
        Ok(r) if i >= MAX_EVENTS => Err(too_many(path, r.line, "records")),
        other => other,
    }))
}

/// [`EventsError::TooMany`] at `line` (0: the stream as a whole).
pub(crate) fn too_many(path: &Path, line: usize, what: &'static str) -> EventsError {
    EventsError::TooMany {
        path: path.to_path_buf(),
        place: if line == 0 {
            "whole stream".into()
        } else {
            format!("line {line}")
        },
        what,
    }
}

/// Read one events file: a regular file (not a FIFO or device the agent
/// planted, which would block or never end) of at most
/// [`MAX_EVENTS_FILE_BYTES`], whatever its size claims while it is read.
pub(crate) fn read_events_file(path: &Path) -> Result<String, EventsError> {
    let io = |source| EventsError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes =
        crate::sys::bounded_read::read_regular_file(path, MAX_EVENTS_FILE_BYTES).map_err(io)?;
    String::from_utf8(bytes)
        .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
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
                .ok_or_else(|| EventsError::Unknown(path.to_path_buf()))?,
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

/// `convert(index, item)` for every item, on up to one thread per core (in
/// chunks big enough to be worth a thread), results in order. Events parse
/// independently of each other, so large streams split across the cores.
pub(crate) fn parallel_map<T, U, F>(items: Vec<T>, convert: F) -> Vec<U>
where
    T: Send,
    U: Send,
    F: Fn(usize, T) -> U + Sync,
{
    const MIN_CHUNK: usize = 2048;
    let threads = match items.len() / MIN_CHUNK {
        0 | 1 => 1,
        chunks => crate::sys::parallel::cores().min(chunks),
    };
    if threads == 1 {
        return items
            .into_iter()
            .enumerate()
            .map(|(i, r)| convert(i, r))
            .collect();
    }
    let chunk = items.len().div_ceil(threads);
    let mut chunks: Vec<Vec<T>> = Vec::with_capacity(threads);
    let mut rest = items;
    while rest.len() > chunk {
        let tail = rest.split_off(chunk);
        chunks.push(rest);
        rest = tail;
    }
    chunks.push(rest);
    std::thread::scope(|s| {
        let convert = &convert;
        let handles: Vec<_> = chunks
            .into_iter()
            .enumerate()
            .map(|(c, records)| {
                s.spawn(move || {
                    records
                        .into_iter()
                        .enumerate()
                        .map(|(i, r)| convert(c * chunk + i, r))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// The first registered format that recognizes the stream's first record.
fn detect(path: &Path, first: &Record) -> Result<&'static Format, EventsError> {
    FORMATS
        .iter()
        .copied()
        .find(|f| (f.sniff)(first.json()))
        .ok_or_else(|| EventsError::Unknown(path.to_path_buf()))
}

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

/// The one record of a format that is one JSON document (a trajectory).
pub(crate) fn one_document(path: &Path, records: Records) -> Result<Record, EventsError> {
    let records = records.collect::<Result<Vec<Record>, EventsError>>()?;
    <[Record; 1]>::try_from(records)
        .map(|[record]| record)
        .map_err(|r| EventsError::Shape {
            path: path.to_path_buf(),
            message: format!(
                "holds {} documents; a trajectory is one JSON document",
                r.len()
            ),
        })
}

pub(crate) fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
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
}

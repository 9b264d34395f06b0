//! [`EventsError`]: why a transcript could not be read, each error placed
//! in its file; and the limits every reader holds to.

use std::path::{Path, PathBuf};

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
        /// found (see `sys::json_error`).
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
    #[error("{path}: cannot tell the event format; pass --events-format, one of: {formats}")]
    Unknown {
        /// The file.
        path: PathBuf,
        /// The formats there are, with what each reads.
        formats: String,
    },
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

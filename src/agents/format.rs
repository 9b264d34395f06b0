//! [`Format`]: one transcript format an agent writes (how to recognize it,
//! how to read it), and a whole-file format's one document.

use super::events_error::EventsError;
use super::records::{Record, Records};
use critic_sdk::Event;
use std::path::Path;

/// One transcript format an agent writes: its name, how to recognize its
/// files, and how to read them.
pub struct Format {
    /// The name users pass as `--events-format`.
    pub name: &'static str,
    /// What it is, for help texts.
    pub about: &'static str,
    /// Whether a stream whose first record is this one is in this format.
    pub(super) sniff: fn(first: &str) -> bool,
    /// Reads a directory the agent persists its events in, if it does.
    pub(super) read_dir: Option<ReadDir>,
    /// Turns the records of a stream into normalized events.
    pub(super) normalize: fn(&Path, Records<'_>) -> Result<Vec<Event>, EventsError>,
}

/// Reads the records of an events directory.
pub(super) type ReadDir = fn(&Path) -> Result<Vec<Record>, EventsError>;

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

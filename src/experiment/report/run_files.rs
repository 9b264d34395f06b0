//! A run's files as its page reads them: beneath its directory with no
//! link followed, without blocking, and in part when large.

use crate::sandbox::beneath::Beneath;
use crate::sys::bounded_read::{read_part, Part};
use serde::Serialize;
use std::path::Path;

/// A run's directory, its files reached with no link followed anywhere
/// beneath it (`None`: there is none, or not as a plain directory).
pub(super) type RunFiles = Option<Beneath>;

/// The regular file `rel` of the run's directory: `None` when there is
/// none, why when it cannot be opened.
pub(super) fn open(files: &RunFiles, rel: &str) -> Option<Result<std::fs::File, String>> {
    let dir = files.as_ref()?;
    match dir.open_file(Path::new(rel)) {
        Ok(file) => Some(Ok(file)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => Some(Err(format!("{rel} cannot be shown: {e}"))),
    }
}


/// How much of the end of a log is shown.
pub(super) const LOG_SHOWN: u64 = 32 << 10;

/// The text of a file in the run's directory, in part: `None` when there
/// is none, a sentence when it cannot be read.
pub(super) fn part(files: &RunFiles, rel: &str, max: u64, which: Part) -> Option<Result<Shown, String>> {
    Some(open(files, rel)?.and_then(|file| {
        read_part(file, max, which)
            .map(|(bytes, size)| Shown::new(&bytes, size, which))
            .map_err(|e| format!("{rel} cannot be shown: {e}"))
    }))
}

/// Text as shown, and a sentence on what of it was left out, if anything.
#[derive(Serialize)]
pub(super) struct Shown {
    pub text: String,
    pub note: Option<String>,
    #[serde(skip)]
    pub left_out: u64,
}

impl Shown {
    pub(super) fn new(bytes: &[u8], size: u64, which: Part) -> Shown {
        // Checked whole first: the checker reads words at a time, the lossy
        // decoder a byte at a time, and nearly every log is valid UTF-8.
        let mut text = match std::str::from_utf8(bytes) {
            Ok(text) => text.to_string(),
            Err(_) => String::from_utf8_lossy(bytes).into_owned(),
        };
        let left_out = size.saturating_sub(bytes.len() as u64);
        if left_out > 0 && which == Part::Tail {
            // Start at a line, not inside one.
            if let Some(i) = text.find('\n') {
                text.drain(..=i);
            }
        }
        let place = match which {
            Part::Head => "after this",
            Part::Tail => "before this",
        };
        Shown {
            text,
            note: (left_out > 0)
                .then(|| format!("{} KiB {place} not shown.", left_out.div_ceil(1024))),
            left_out,
        }
    }

    pub(super) fn of_text(text: &str, max: u64, which: Part) -> Shown {
        let bytes = text.as_bytes();
        let cut = match which {
            Part::Head => &bytes[..bytes.len().min(max as usize)],
            Part::Tail => &bytes[bytes.len().saturating_sub(max as usize)..],
        };
        Shown::new(cut, bytes.len() as u64, which)
    }
}

pub(super) fn json_file(files: &RunFiles, rel: &str, max: u64) -> Option<Result<Vec<u8>, String>> {
    let dir = files.as_ref()?;
    match dir.read(Path::new(rel), max) {
        Ok(bytes) => Some(Ok(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => Some(Err(format!("{rel} cannot be read: {e}"))),
    }
}

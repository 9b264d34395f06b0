//! The inputs of one check, read the same way by every front-end: the
//! events a request names, the patch file it gives, where its state lives.

use crate::agents;
use crate::evaluate::error::Error;
use crate::evaluate::request::{CheckRequest, EventsSource};
use crate::workspace::{PatchError, RawDiff, TestClassifier, Workspace};
use critic_sdk::{EventKind, PatchOrigin};
use std::path::{Path, PathBuf};

/// The request's events, read and normalized, with its `finish_message`
/// added as the finish when the stream lags behind it.
pub(crate) fn load_events(request: &CheckRequest) -> Result<agents::Transcript, Error> {
    let inline = Path::new("events_inline");
    let in_memory = |events| agents::Transcript {
        events,
        raw_file: None,
    };
    let mut transcript = match request.events_source().map_err(Error::Request)? {
        EventsSource::Path(path) => agents::load_transcript(path, request.events_format)?,
        EventsSource::Text(text) => in_memory(agents::parse(inline, text, request.events_format)?),
        EventsSource::Json(value) => in_memory(agents::parse(
            inline,
            &value.to_string(),
            request.events_format,
        )?),
    };
    if let Some(message) = &request.finish_message {
        add_finish(&mut transcript.events, message);
    }
    Ok(transcript)
}

/// Add `message` as the stream's finish, unless the stream's last finish
/// already says it (the hook and the transcript agree).
fn add_finish(events: &mut Vec<critic_sdk::Event>, message: &str) {
    let last = events.iter().rev().find(|e| e.kind == EventKind::Finish);
    if last.is_some_and(|e| e.text.as_deref().map(str::trim) == Some(message.trim())) {
        return;
    }
    let mut finish = critic_sdk::Event::new(events.len(), EventKind::Finish);
    finish.source = Some("agent".into());
    finish.original_kind = Some("hook final message".into());
    finish.text = Some(message.to_string());
    events.push(finish);
}

/// Where the state of a check on `ws` lives: `--state-dir`, else the user's
/// state directory keyed by the workspace (outside it, where the agent,
/// confined to its workspace, cannot rewrite the count).
pub(crate) fn state_root(request: &CheckRequest, ws: &Workspace) -> Result<PathBuf, Error> {
    let root = match &request.state_dir {
        Some(dir) => dir.clone(),
        None => crate::evaluate::state::default_root(&ws.root).ok_or_else(|| {
            Error::Usage(
                "no place for the critic's state: set XDG_STATE_HOME or HOME, or pass --state-dir"
                    .into(),
            )
        })?,
    };
    crate::sys::private_dir::ensure(&root)
        .map_err(|e| Error::Usage(format!("state directory {e}")))?;
    Ok(root)
}

/// The canonical root of `ws`, which a finish names.
pub(crate) fn workspace_root(ws: &Workspace) -> Result<PathBuf, Error> {
    Ok(ws.root.canonicalize().map_err(|source| PatchError::Io {
        path: ws.root.clone(),
        source,
    })?)
}

/// The work tree a request names and the diff in its patch file `file`,
/// against the request's `base` (else HEAD).
pub(crate) fn patch_file_diff(
    request: &CheckRequest,
    file: &Path,
) -> Result<(Workspace, RawDiff), Error> {
    let ws = Workspace::open(&request.workspace)?;
    let base = match &request.base {
        Some(rev) => ws.resolve(rev)?,
        None => ws.head.clone(),
    };
    let diff = read_patch_file(file, base)?;
    Ok((ws, diff))
}

/// The classifier of a skill's `test_patterns`, errors naming its manifest.
pub(crate) fn test_classifier(
    patterns: &[String],
    manifest: &Path,
) -> Result<TestClassifier, Error> {
    TestClassifier::new(patterns)
        .map_err(|e| Error::Usage(format!("{}: test_patterns: {e}", manifest.display())))
}

/// A request's patch file (`patch`), against `base`.
fn read_patch_file(path: &Path, base: String) -> Result<RawDiff, Error> {
    let io = |source| PatchError::Io {
        path: path.to_path_buf(),
        source,
    };
    // Not a FIFO, which would block, nor a file larger than any stream.
    let bytes = crate::sys::bounded_read::read_regular_file(path, agents::MAX_EVENTS_FILE_BYTES)
        .map_err(io)?;
    let raw = String::from_utf8(bytes)
        .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
    Ok(RawDiff {
        base,
        raw,
        origin: PatchOrigin::File,
        source_name: path.display().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finish(text: &str) -> critic_sdk::Event {
        let mut e = critic_sdk::Event::new(0, EventKind::Finish);
        e.text = Some(text.into());
        e
    }

    #[test]
    fn a_lagging_transcript_gets_the_hooks_final_message() {
        let mut events = vec![finish("earlier turn done")];
        add_finish(&mut events, "all tests pass");
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].index, 1);
        assert_eq!(events[1].text.as_deref(), Some("all tests pass"));
        // A stream that already ends with it is left alone.
        add_finish(&mut events, " all tests pass\n");
        assert_eq!(events.len(), 2);
        let mut empty = Vec::new();
        add_finish(&mut empty, "done");
        assert_eq!(empty[0].kind, EventKind::Finish);
    }
}

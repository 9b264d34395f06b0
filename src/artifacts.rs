//! Files detectors hand the agent (the `artifacts` of a detector's output).
//!
//! They go under `.critic/feedback/<skill>/` in the workspace, the one place
//! the host writes there, and `/.critic/` is added to the repository's
//! `info/exclude` so they never enter the patch. Detectors themselves never
//! get write access: they return the content, the host checks the path and
//! writes it atomically.

use crate::git;
use critic_sdk::Artifact;
use std::path::{Path, PathBuf};

/// The directory, relative to the workspace root, artifacts go under.
pub const FEEDBACK_DIR: &str = ".critic/feedback";

/// The line added to `info/exclude`.
const EXCLUDE_LINE: &str = "/.critic/";

/// Why artifacts could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// A path that would leave the feedback directory.
    #[error("signal {signal:?}: artifact path {path:?} refused: use a relative path without `..`")]
    BadPath {
        /// The signal.
        signal: String,
        /// The path.
        path: String,
    },
    /// A file system failure.
    #[error("{path}: cannot write artifact: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// git could not say where `info/exclude` is.
    #[error(transparent)]
    Git(#[from] git::GitError),
}

/// Write `artifacts` of `signal` for `skill` into the workspace at `root`;
/// returns the workspace-relative paths written.
pub fn write(
    root: &Path,
    skill: &str,
    signal: &str,
    artifacts: &[Artifact],
) -> Result<Vec<String>, ArtifactError> {
    if artifacts.is_empty() {
        return Ok(Vec::new());
    }
    let dir = Path::new(FEEDBACK_DIR).join(skill);
    let mut paths = Vec::with_capacity(artifacts.len());
    for a in artifacts {
        let rel = crate::sandbox::relative(&a.path).map_err(|_| ArtifactError::BadPath {
            signal: signal.to_string(),
            path: a.path.clone(),
        })?;
        let rel = dir.join(rel);
        write_atomic(&root.join(&rel), a.content.as_bytes())?;
        paths.push(rel.display().to_string());
    }
    exclude(root)?;
    Ok(paths)
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ArtifactError + '_ {
    move |source| ArtifactError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ArtifactError> {
    crate::atomic_file::write(path, bytes, false).map_err(io(path))
}

/// Make sure `info/exclude` of the repository at `root` ignores `/.critic/`.
fn exclude(root: &Path) -> Result<(), ArtifactError> {
    let mut cmd = git::command(root);
    cmd.args([
        "rev-parse",
        "--path-format=absolute",
        "--git-path",
        "info/exclude",
    ]);
    let out = git::run(cmd)?;
    let path = PathBuf::from(String::from_utf8_lossy(&out).trim());
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io(&path)(e)),
    };
    if text.lines().any(|l| l.trim() == EXCLUDE_LINE) {
        return Ok(());
    }
    let mut new = text;
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    new.push_str("# feedback files of PluggableCritic skills\n");
    new.push_str(EXCLUDE_LINE);
    new.push('\n');
    write_atomic(&path, new.as_bytes())
}

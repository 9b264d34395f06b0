//! Files detectors hand the agent (the `artifacts` of a detector's output).
//!
//! They go under `.critic/feedback/<skill>/` in the workspace, the one place
//! the host writes there, beside a `.critic/.gitignore` that ignores all of
//! `.critic/`, so they never enter the patch. Detectors themselves never get
//! write access: they return the content, the host checks the path and
//! writes it atomically. The agent owns the workspace and may have planted
//! symlinks: every write walks from the workspace root without following any
//! (see [`crate::sandbox::beneath`]).

use crate::sandbox::beneath::Beneath;
use critic_sdk::Artifact;
use std::path::{Path, PathBuf};

/// The directory, relative to the workspace root, artifacts go under.
pub const FEEDBACK_DIR: &str = ".critic/feedback";

/// `.critic/.gitignore`: everything under `.critic/`, itself included.
const IGNORE_FILE: (&str, &str) = (
    ".critic/.gitignore",
    "# feedback files of PluggableCritic skills, kept out of the patch\n*\n",
);

/// Why artifacts could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// A path that would leave the feedback directory.
    #[error(
        "signal {signal:?}: artifact path {path:?} refused: use a relative path without `..` \
         or a `.git` component"
    )]
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
    let workspace = Beneath::open(root).map_err(io(root))?;
    let (ignore, text) = IGNORE_FILE;
    let current = workspace.read(Path::new(ignore), text.len() as u64).ok();
    if current.as_deref() != Some(text.as_bytes()) {
        workspace
            .write_atomic(Path::new(ignore), text.as_bytes())
            .map_err(io(&root.join(ignore)))?;
    }
    let mut paths = Vec::with_capacity(artifacts.len());
    for a in artifacts {
        let bad = || ArtifactError::BadPath {
            signal: signal.to_string(),
            path: a.path.clone(),
        };
        let rel = crate::sandbox::scratch::relative(&a.path).map_err(|_| bad())?;
        // A `.git` directory or file among the feedback would be a repository
        // of the skill's making: any git command run there (a shell prompt,
        // the agent) would obey its config.
        if rel.iter().any(|c| c.eq_ignore_ascii_case(".git")) {
            return Err(bad());
        }
        let rel = dir.join(rel);
        workspace
            .write_atomic(&rel, a.content.as_bytes())
            .map_err(io(&root.join(&rel)))?;
        paths.push(rel.display().to_string());
    }
    Ok(paths)
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ArtifactError + '_ {
    move |source| ArtifactError::Io {
        path: path.to_path_buf(),
        source,
    }
}

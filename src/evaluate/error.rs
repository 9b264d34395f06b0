//! [`Error`]: every error a check reports, wrapping the errors of the layers
//! below (manifest, events, patch, state, detectors, feedback files,
//! builds); each names the file or input at fault.

use std::path::PathBuf;

/// Every error the host reports; each names the file or input at fault.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A bad `critic.yaml`.
    #[error(transparent)]
    Manifest(#[from] crate::skill::ManifestError),
    /// A bad events file.
    #[error(transparent)]
    Events(#[from] crate::agents::EventsError),
    /// The workspace or patch could not be read.
    #[error(transparent)]
    Patch(#[from] crate::workspace::PatchError),
    /// State could not be read or written.
    #[error(transparent)]
    State(#[from] crate::evaluate::state::StateError),
    /// A detector could not be loaded.
    #[error("{manifest}:{line}: signal {signal:?}: {source}")]
    Detector {
        /// The manifest declaring it.
        manifest: PathBuf,
        /// Line of the signal.
        line: usize,
        /// Signal name.
        signal: String,
        /// Why.
        source: crate::detector::wasm::DetectorError,
    },
    /// Feedback files could not be written.
    #[error(transparent)]
    Artifacts(#[from] crate::host::artifacts::ArtifactError),
    /// A skill's detectors could not be built.
    #[error(transparent)]
    Build(#[from] crate::skill::BuildError),
    /// A failure in the host itself.
    #[error("internal error: {0}")]
    Internal(String),
    /// A request that names no valid check (a missing or conflicting field).
    #[error("{0}")]
    Request(String),
    /// Anything else with a ready message (bad flags, failed builds...).
    #[error("{0}")]
    Usage(String),
}

//! PluggableCritic: a host for verify-and-feedback critics at a coding agent's
//! finish boundary.
//!
//! A *skill* (a directory with `critic.yaml` and WebAssembly detectors) is
//! loaded by [`manifest::load`], its detectors by [`runtime::Runtime`], and
//! [`harness::SkillCritic`] judges a [`critic::Finish`] (the agent's events from
//! [`events::load`] plus the patch from [`patch::Workspace`]) into a
//! [`verdict::Verdict`]. Programs can also implement [`critic::Critic`]
//! themselves.

pub mod artifacts;
pub mod atomic_file;
pub mod build;
pub mod cache;
pub mod capabilities;
pub mod check;
pub mod critic;
pub mod demo;

pub mod detector;
pub mod events;
pub mod git;
pub mod harness;
pub mod manifest;
pub mod native;
pub mod new_file_diff;
pub mod parallel;
pub mod patch;
pub mod runtime;
pub mod sandbox;
pub mod scaffold;

pub mod state;
pub mod verdict;
pub mod yaml;

use std::path::PathBuf;

/// Every error the host reports; each names the file or input at fault.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A bad `critic.yaml`.
    #[error(transparent)]
    Manifest(#[from] manifest::ManifestError),
    /// A bad events file.
    #[error(transparent)]
    Events(#[from] events::EventsError),
    /// The workspace or patch could not be read.
    #[error(transparent)]
    Patch(#[from] patch::PatchError),
    /// State could not be read or written.
    #[error(transparent)]
    State(#[from] state::StateError),
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
        source: runtime::DetectorError,
    },
    /// Feedback files could not be written.
    #[error(transparent)]
    Artifacts(#[from] artifacts::ArtifactError),
    /// A failure in the host itself.
    #[error("internal error: {0}")]
    Internal(String),
    /// Anything else with a ready message (bad flags, failed builds...).
    #[error("{0}")]
    Usage(String),
}

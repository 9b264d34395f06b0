//! PluggableCritic: a host for verify-and-feedback critics at a coding agent's
//! finish boundary.
//!
//! A *skill* (a directory with `critic.yaml` and WebAssembly detectors) is
//! loaded by [`manifest::load`], its detectors by [`runtime::Runtime`], and
//! [`harness::SkillCritic`] judges a [`critic::Finish`] (the agent's events from
//! [`events::load`] plus the patch from [`patch::Workspace`]) into a
//! [`verdict::Verdict`]. Programs can also implement [`critic::Critic`]
//! themselves.
//!
//! A long-lived host builds the critic once, on a pooled runtime (instances
//! then reuse memory reserved up front), and evaluates each finish:
//!
//! ```no_run
//! use pluggable_critic::critic::{decide, Finish};
//! use pluggable_critic::harness::{HarnessOptions, SkillCritic};
//! use pluggable_critic::patch::{TestClassifier, Workspace};
//! use pluggable_critic::{events, manifest, runtime::Runtime, state::StateStore};
//! use std::path::Path;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let skill = manifest::load(Path::new("skills/ran-tests"))?;
//! let classifier = TestClassifier::new(&skill.manifest.test_patterns)?;
//! let runtime = Runtime::pooled(Some(Path::new("/tmp/critic-cache")), 16)?;
//! let state = StateStore::new("/tmp/critic-state");
//! let critic = SkillCritic::new(skill, &runtime, state, &HarnessOptions::default())?;
//!
//! let ws = Workspace::open(Path::new("path/to/repo"))?;
//! let finish = Finish {
//!     events: events::load(Path::new("events.jsonl"), None)?.into(),
//!     patch: ws.worktree_patch(&ws.head, &classifier)?,
//!     workspace: ws.root.canonicalize()?,
//!     session: "run-1".into(),
//! };
//! let verdict = decide(&critic, &finish)?;
//! if let Some(followup) = &verdict.followup {
//!     println!("next user turn: {followup}");
//! }
//! # Ok(())
//! # }
//! ```

pub mod artifacts;
pub mod atomic_file;
pub mod beneath;
pub mod build;
pub mod cache;
pub mod capabilities;
pub mod check;
pub mod confine;
pub mod critic;
mod deadline_clock;
pub mod demo;
pub mod detector;
pub mod events;
pub mod git;
pub mod harness;
pub mod interrupt;
pub mod manifest;
pub mod native;
pub mod new_file_diff;
pub mod parallel;
pub mod patch;
pub mod private_dir;
mod remove_tree;
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

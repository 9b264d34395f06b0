//! PluggableCritic: a host for verify-and-feedback critics at a coding agent's
//! finish boundary.
//!
//! A *skill* (a directory with `critic.yaml` and WebAssembly detectors) judges
//! a [`Finish`] (the agent's events and the working tree's patch) into a
//! [`Verdict`]: accept, or reject with the follow-up prompt the agent gets as
//! its next turn.
//!
//! This crate's public API is what a program that judges finishes needs:
//!
//! * [`Service`] keeps skills and detector runtimes warm across many checks,
//!   each named by a [`CheckRequest`] (with [`HostSettings`] for the host's
//!   limits), and reloads a skill when it changes on disk;
//! * [`Critic`] is the trait of anything that judges a [`Finish`]; a
//!   [`SkillCritic`] is one skill's, scoring its signals and keeping its
//!   rounds per session in a [`StateStore`]; [`decide`] and
//!   [`with_followup`] run one;
//! * [`load_skill`], [`Runtime`], [`load_events`] (an agent's transcript as
//!   [`Event`]s, in any [`EventsFormat`]), [`Workspace`] and
//!   [`TestClassifier`] (the work tree's [`Patch`]) are the parts a
//!   [`Finish`] is made from;
//! * [`Error`] is every error a check reports;
//! * [`manifest`], [`state`], [`patch`] and [`detectors`] name the types
//!   these hand out (a skill's signals, a session's rounds, a patch's
//!   errors, a detector call's report).
//!
//! [`cli`] is the `critic` binary's command line. The layers below it are
//! private to the crate; `docs/architecture.md` draws them.
//!
//! A program judges finishes through a [`Service`]:
//!
//! ```no_run
//! use pluggable_critic::{CheckRequest, HostSettings, Service};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let service = Service::new(HostSettings::default())?;
//! let mut request = CheckRequest::new("skills/ran-tests", "events.jsonl");
//! request.workspace = "path/to/repo".into();
//! request.session = "run-1".into();
//! let verdict = service.check(&request)?;
//! if let Some(followup) = &verdict.followup {
//!     println!("next user turn: {followup}");
//! }
//! # Ok(())
//! # }
//! ```

// Every type the public API hands out can be named by its users.
#![cfg_attr(not(feature = "internals"), warn(unnameable_types))]

pub mod cli;

/// The layers below the command line: private to the crate, except with the
/// `internals` feature, which the crate's own integration tests, fuzz tests
/// and benchmarks turn on to reach the parts they measure. Nothing outside
/// this repository should rely on it.
macro_rules! layers {
    ($($name:ident),* $(,)?) => {$(
        #[cfg(feature = "internals")]
        #[doc(hidden)]
        pub mod $name;
        #[cfg(not(feature = "internals"))]
        pub(crate) mod $name;
    )*};
}

layers!(
    agents,
    detector,
    evaluate,
    experiment,
    frontend,
    grading,
    host,
    mpe,
    report_html,
    sandbox,
    skill,
    sys,
    workspace,
);

pub use agents::{load as load_events, EventsError, EventsFormat};
pub use critic_sdk::{Event, EventKind, Patch};
pub use detector::wasm::Runtime;
pub use evaluate::error::Error;
pub use evaluate::request::{CheckRequest, EventsSource, HostSettings};
pub use evaluate::scorer::SkillCritic;
pub use evaluate::state::StateStore;
pub use evaluate::verdict::{SignalResult, SignalStatus, Verdict};
pub use evaluate::{decide, with_followup, Critic, Finish};
pub use frontend::service::Service;
pub use skill::{load as load_skill, Skill};
pub use workspace::{TestClassifier, Workspace};

/// A skill's manifest as loaded: its signals, their limits and what each
/// may call, and why a skill cannot be loaded or built.
pub mod manifest {
    pub use crate::host::llm::{LlmClient, LlmConfig};
    pub use crate::host::{Capability, Grants};
    pub use crate::skill::yaml::{Issue, Position};
    pub use crate::skill::{
        BuildError, FollowupStyle, Limits, Manifest, ManifestError, OnError, Signal, SignalKind,
    };
}

/// The round state a skill keeps per session.
pub mod state {
    pub use crate::evaluate::state::{HarnessState, Session, SessionRecord, StateError};
}

/// The work tree's patch, and why git or a pattern could not give it.
pub mod patch {
    pub use crate::workspace::git::GitError;
    pub use crate::workspace::{PatchError, PatternError, PendingDiff, RawDiff};
}

/// Detectors as a [`Runtime`] runs them: one call's context, limits and
/// report, the events it reads, the host calls it may make, and why one
/// failed.
pub mod detectors {
    pub use crate::detector::feed::EventFeed;
    pub use crate::detector::wasm::cache::CacheOutcome;
    pub use crate::detector::wasm::{
        CallContext, CallLimits, CallReport, DetectorError, WasmDetector,
    };
    pub use crate::host::artifacts::ArtifactError;
    pub use crate::host::log::{Level, LogBuffer, LogLine};
    pub use crate::host::run::Runner;
}

//! Subclass mode: the [`Critic`] trait a program implements (or gets from a
//! skill through [`crate::evaluate::scorer::SkillCritic`]) to judge a finish.

pub mod redact;
pub mod scorer;
pub mod state;
pub mod verdict;

use crate::evaluate::verdict::Verdict;
use crate::Error;
use critic_sdk::{Event, Patch};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The follow-up used when a critic rejects without saying why.
pub const GENERIC_FOLLOWUP: &str =
    "The critic did not accept your work yet. Review the task, check your changes against it, and finish again.";

/// Everything known at the agent's finish.
#[derive(Debug, Clone)]
pub struct Finish {
    /// The agent's normalized events (shared with detector calls; build it
    /// from a `Vec<Event>` with `.into()`).
    pub events: Arc<[Event]>,
    /// The working-tree patch (or the one given with `--patch`).
    pub patch: Patch,
    /// The work tree's root (canonical).
    pub workspace: PathBuf,
    /// Session id; state is kept per session.
    pub session: String,
    /// The transcript file, open, when the events keep only where their
    /// original JSON is in it (a large one; see `agents::RAW_SPANS_FROM`).
    pub transcript: Option<Arc<std::fs::File>>,
}

impl Finish {
    /// Base commit plus workspace: state recorded for another instance is reset.
    pub fn instance_key(&self) -> String {
        instance_key(&self.patch.base, &self.workspace)
    }
}

/// [`Finish::instance_key`] of a finish against `base` in `workspace`
/// (canonical), before the finish itself exists.
pub fn instance_key(base: &str, workspace: &Path) -> String {
    format!("{base}@{}", workspace.display())
}

/// A verify-and-feedback critic at the finish boundary.
pub trait Critic {
    /// Judge one finish.
    fn evaluate(&self, finish: &Finish) -> Result<Verdict, Error>;

    /// The agent's next user turn after a rejection. Override to compose
    /// feedback from the verdict's metadata; the default is the verdict's own
    /// follow-up, or [`GENERIC_FOLLOWUP`].
    fn followup(&self, verdict: &Verdict) -> String {
        verdict
            .followup
            .clone()
            .unwrap_or_else(|| GENERIC_FOLLOWUP.to_string())
    }
}

/// Evaluate and, on rejection, fill in the critic's follow-up.
pub fn decide(critic: &dyn Critic, finish: &Finish) -> Result<Verdict, Error> {
    Ok(with_followup(critic, critic.evaluate(finish)?))
}

/// `verdict` of `critic`, its follow-up composed by [`Critic::followup`]
/// when it rejects: what [`decide`] does after evaluating.
pub fn with_followup(critic: &dyn Critic, mut verdict: Verdict) -> Verdict {
    verdict.followup = (!verdict.accepted).then(|| critic.followup(&verdict));
    verdict
}

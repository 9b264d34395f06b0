//! The [`Critic`] trait a program implements to judge a finish, what a
//! finish gives it, and how its verdict gets a follow-up.

use crate::evaluate::error::Error;
use crate::evaluate::redact;
use crate::evaluate::verdict::Verdict;
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
    /// follow-up, or a generic one.
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
/// when it rejects: what [`decide`] does after evaluating. Every front-end
/// gets its follow-up here, so here it loses what looks like a secret
/// (see `evaluate::redact`), whichever critic composed it: a [`SkillCritic`]'s has
/// lost them already, a program's own may quote anything.
///
/// [`SkillCritic`]: crate::SkillCritic
pub fn with_followup(critic: &dyn Critic, mut verdict: Verdict) -> Verdict {
    verdict.followup = (!verdict.accepted).then(|| {
        let followup = critic.followup(&verdict);
        let found = redact::redact(&followup);
        match found.count {
            0 => followup,
            _ => format!("{}\n\n{}", found.text, redact::NOTICE),
        }
    });
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A critic that rejects, its follow-up quoting its verdict's metadata.
    struct Quoting;

    impl Critic for Quoting {
        fn evaluate(&self, _: &Finish) -> Result<Verdict, Error> {
            unreachable!("only its follow-up is asked for")
        }

        fn followup(&self, verdict: &Verdict) -> String {
            format!("The run printed: {}", verdict.metadata["output"])
        }
    }

    #[test]
    fn a_programs_own_follow_up_loses_its_secrets_too() {
        let verdict: Verdict = serde_json::from_value(serde_json::json!({
            "accepted": false, "score": 0.0, "threshold": 0.5, "message": "rejected",
            "iteration": 1, "max_iterations": 3, "budget_exhausted": false,
            "skill": {"name": "s", "version": "1"}, "session": "x", "signals": [],
            "metadata": {"output": "token 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"},
        }))
        .unwrap();
        let followup = with_followup(&Quoting, verdict).followup.unwrap();
        assert_eq!(
            followup,
            format!(
                "The run printed: \"token [REDACTED: GitHub token]\"\n\n{}",
                redact::NOTICE
            )
        );
    }
}

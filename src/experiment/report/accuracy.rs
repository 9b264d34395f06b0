//! The critic's own accuracy: at each finish it judged, did it accept or
//! reject a patch that resolves the instance? Counted over the finishes
//! whose patch was graded (`rounds.resolved`), leaving out acceptances the
//! skill's budget forced and verdicts a failing detector decided: neither
//! is the critic's judgment.

use crate::experiment::db::{Round, Run, RunKey};
use crate::experiment::stats::{self, Rate};
use serde::Serialize;
use std::collections::BTreeMap;

/// The four outcomes of a judged finish.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Accepted, and the patch resolves.
    pub accepted_resolved: u32,
    /// Accepted, and the patch does not resolve: a wrong fix let through.
    pub accepted_unresolved: u32,
    /// Rejected, and the patch resolves: a correct fix pushed away.
    pub rejected_resolved: u32,
    /// Rejected, and the patch does not resolve.
    pub rejected_unresolved: u32,
}

impl Counts {
    fn add(&mut self, accepted: bool, resolved: bool) {
        *match (accepted, resolved) {
            (true, true) => &mut self.accepted_resolved,
            (true, false) => &mut self.accepted_unresolved,
            (false, true) => &mut self.rejected_resolved,
            (false, false) => &mut self.rejected_unresolved,
        } += 1;
    }

    /// Of the finishes whose patch resolves, the share rejected.
    pub(super) fn rejected_of_resolving(&self) -> Rate {
        stats::wilson(
            self.rejected_resolved,
            self.rejected_resolved + self.accepted_resolved,
        )
    }

    /// Of the finishes whose patch does not resolve, the share accepted.
    pub(super) fn accepted_of_unresolved(&self) -> Rate {
        stats::wilson(
            self.accepted_unresolved,
            self.accepted_unresolved + self.rejected_unresolved,
        )
    }

    fn total(&self) -> u32 {
        self.accepted_resolved
            + self.accepted_unresolved
            + self.rejected_resolved
            + self.rejected_unresolved
    }
}

/// One arm's critic accuracy.
#[derive(Debug, Clone, Serialize)]
pub struct CriticAccuracy {
    /// Over every graded finish.
    #[serde(flatten)]
    pub counts: Counts,
    /// Of the finishes whose patch resolves, the share the critic rejected
    /// (95% Wilson interval).
    pub rejected_of_resolving: Rate,
    /// Of the finishes whose patch does not resolve, the share it accepted.
    pub accepted_of_unresolved: Rate,
    /// The same counts per round, round 1 first.
    pub per_round: Vec<Counts>,
    /// Each counted finish: its run, round, and whether it was accepted
    /// and resolves (for the report's links).
    #[serde(skip)]
    pub finishes: Vec<(RunKey, u32, bool, bool)>,
}

/// The accuracy of each arm's critic over `runs` (results only) and their
/// `rounds`; `None` for an arm with no graded finish.
pub fn of(runs: &[Run], rounds: &BTreeMap<RunKey, Vec<Round>>) -> BTreeMap<String, CriticAccuracy> {
    type Tally = (Counts, Vec<Counts>, Vec<(RunKey, u32, bool, bool)>);
    let mut by_arm: BTreeMap<String, Tally> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.status.is_result()) {
        for r in rounds.get(&run.key).into_iter().flatten() {
            let accepted = match r.verdict.as_str() {
                "accepted" => true,
                "rejected" => false,
                _ => continue,
            };
            let Some(resolved) = r.resolved else { continue };
            if r.budget_exhausted || r.critic_error.is_some() {
                continue;
            }
            let (all, per_round, finishes) = by_arm.entry(run.key.arm.clone()).or_default();
            all.add(accepted, resolved);
            finishes.push((run.key.clone(), r.round, accepted, resolved));
            let k = r.round.max(1) as usize;
            if per_round.len() < k {
                per_round.resize(k, Counts::default());
            }
            per_round[k - 1].add(accepted, resolved);
        }
    }
    by_arm
        .into_iter()
        .filter(|(_, (all, _, _))| all.total() > 0)
        .map(|(arm, (counts, per_round, finishes))| {
            (
                arm,
                CriticAccuracy {
                    rejected_of_resolving: counts.rejected_of_resolving(),
                    accepted_of_unresolved: counts.accepted_of_unresolved(),
                    counts,
                    per_round,
                    finishes,
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::db::Status;

    fn round(k: u32, verdict: &str, resolved: Option<bool>) -> Round {
        Round {
            round: k,
            turn_exit: Some(0),
            turn_s: 1.0,
            verdict: verdict.into(),
            budget_exhausted: false,
            followup: None,
            critic_error: None,
            resolved,
        }
    }

    #[test]
    fn finishes_are_counted_by_verdict_and_grade_per_round() {
        let key = RunKey {
            instance_id: "i".into(),
            arm: "a".into(),
            sample: 0,
        };
        let run = Run {
            key: key.clone(),
            status: Status::Ok,
            error_class: None,
            error: None,
            resolved: Some(true),
            f2p: None,
            grade_problem: None,
            finishes: 3,
            rounds: 3,
            budget_exhausted: true,
            outcome_test: None,
            tokens: None,
            cost: None,
            usage_source: None,
            model_calls: None,
            duration_s: 1.0,
            attempts: 1,
            model_patch: String::new(),
        };
        let mut forced = round(3, "accepted", Some(false));
        forced.budget_exhausted = true;
        let rounds = BTreeMap::from([(
            key,
            vec![
                round(1, "rejected", Some(true)),
                round(2, "rejected", None),
                forced,
            ],
        )]);
        let got = of(std::slice::from_ref(&run), &rounds);
        let c = &got["a"];
        assert_eq!(
            c.counts,
            Counts {
                rejected_resolved: 1,
                ..Counts::default()
            }
        );
        assert_eq!(c.rejected_of_resolving.k, 1);
        assert_eq!(c.per_round.len(), 1);
        let mut infra = run;
        infra.status = Status::InfraError;
        assert!(of(&[infra], &rounds).is_empty());
    }
}

//! The critic's own accuracy: at each finish it judged, did it accept or
//! reject a patch that resolves the instance? Counted over the finishes
//! whose patch was graded (`rounds.resolved`), leaving out acceptances the
//! skill's budget forced and verdicts a failing detector decided: neither
//! is the critic's judgment.

use super::charts::{self, Line};
use super::ArmSummary;
use crate::experiment::db::{Round, Run, RunKey};
use crate::experiment::stats::{self, Rate};
use crate::report_html::escape;
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
    fn rejected_of_resolving(&self) -> Rate {
        stats::wilson(
            self.rejected_resolved,
            self.rejected_resolved + self.accepted_resolved,
        )
    }

    /// Of the finishes whose patch does not resolve, the share accepted.
    fn accepted_of_unresolved(&self) -> Rate {
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

/// The four outcomes: their anchors' names, accepted, resolves.
const CLASSES: [(&str, bool, bool); 4] = [
    ("accepted-resolved", true, true),
    ("accepted-unresolved", true, false),
    ("rejected-resolved", false, true),
    ("rejected-unresolved", false, false),
];

/// The accuracy table (each count linked to the finishes it counts, each
/// finish to its round on its run's page) and its charts per round, as
/// HTML; empty when no arm has a graded finish.
pub fn html(arms: &[ArmSummary], href: impl Fn(&RunKey) -> String) -> String {
    let with: Vec<(usize, &ArmSummary, &CriticAccuracy)> = arms
        .iter()
        .enumerate()
        .filter_map(|(i, a)| a.critic.as_ref().map(|c| (i, a, c)))
        .collect();
    if with.is_empty() {
        return String::new();
    }
    let pct = |r: &Rate| {
        if r.n == 0 {
            "–".to_string()
        } else {
            format!(
                "{:.0}% [{:.0}, {:.0}] ({}/{})",
                r.rate * 100.0,
                r.low * 100.0,
                r.high * 100.0,
                r.k,
                r.n
            )
        }
    };
    let mut rows = String::new();
    let mut lists = String::new();
    for (i, a, c) in &with {
        let n = &c.counts;
        let counts = [
            n.accepted_resolved,
            n.accepted_unresolved,
            n.rejected_resolved,
            n.rejected_unresolved,
        ];
        let cells: String = CLASSES
            .iter()
            .zip(counts)
            .map(|((name, _, _), k)| format!("<td><a href=\"#critic-{i}-{name}\">{k}</a></td>"))
            .collect();
        rows.push_str(&format!(
            "<tr><td>{}</td>{cells}<td><a href=\"#critic-{i}-rejected-resolved\">{}</a></td>\
             <td><a href=\"#critic-{i}-accepted-unresolved\">{}</a></td></tr>",
            escape(&a.arm),
            pct(&c.rejected_of_resolving),
            pct(&c.accepted_of_unresolved),
        ));
        for (name, accepted, resolves) in CLASSES {
            let links: Vec<String> = c
                .finishes
                .iter()
                .filter(|(_, _, a, r)| (*a, *r) == (accepted, resolves))
                .map(|(key, round, _, _)| {
                    format!(
                        "<a href=\"{}#round-{round}\">{} / {}, round {round}</a>",
                        escape(&href(key)),
                        escape(&key.instance_id),
                        key.sample
                    )
                })
                .collect();
            lists.push_str(&format!(
                "<p id=\"critic-{i}-{name}\" class=\"behind\"><strong>{}: {}</strong> ({}): {}</p>",
                escape(&a.arm),
                name.replace('-', ", "),
                links.len(),
                if links.is_empty() {
                    "none".to_string()
                } else {
                    links.join(" ")
                }
            ));
        }
    }
    let line = |rate: fn(&Counts) -> Rate| -> Vec<Line> {
        with.iter()
            .map(|(i, a, c)| Line {
                name: a.arm.clone(),
                colour: *i,
                points: c
                    .per_round
                    .iter()
                    .map(|k| {
                        let r = rate(k);
                        (r.n > 0).then_some((r.rate, r.low, r.high))
                    })
                    .collect(),
            })
            .collect()
    };
    format!(
        "<h2 id=\"critic-accuracy\">The critic's own accuracy</h2>\
         <p>Each finish's judged patch graded on the golden tests: how often the critic accepted \
         or rejected a patch that resolves the instance. Left out: acceptances the skill's budget \
         forced, and verdicts of a failing detector.</p>\
         <div class=\"scroll\"><table id=\"critic\"><tr><th>arm</th><th>accepted, resolves</th>\
         <th>accepted, does not resolve</th><th>rejected, resolves</th>\
         <th>rejected, does not resolve</th><th>correct fixes rejected</th>\
         <th>wrong fixes accepted</th></tr>{rows}</table></div>\
         <figure id=\"rejected-resolving\">{}{}</figure>\
         <figure id=\"accepted-unresolved\">{}{}</figure>\
         <h3>The finishes behind each count</h3>{lists}",
        charts::lines(
            "Correct fixes the critic rejected, per round (95% CI)",
            "round",
            "rejected",
            &line(Counts::rejected_of_resolving)
        ),
        caption(&with, "rejected-resolved", "accepted-resolved", "resolving"),
        charts::lines(
            "Wrong fixes the critic accepted, per round (95% CI)",
            "round",
            "accepted",
            &line(Counts::accepted_of_unresolved)
        ),
        caption(
            &with,
            "accepted-unresolved",
            "rejected-unresolved",
            "unresolved"
        ),
    )
}

/// Under a chart: per arm, the `what` finishes behind its line, those
/// of class `part` (counted) and of class `rest`, each linked to its list.
fn caption(
    arms: &[(usize, &ArmSummary, &CriticAccuracy)],
    part: &str,
    rest: &str,
    what: &str,
) -> String {
    let verb = |class: &str| class.split('-').next().unwrap_or_default().to_string();
    let arms: Vec<String> = arms
        .iter()
        .map(|(i, a, _)| {
            format!(
                "{}: the {what} finishes it <a href=\"#critic-{i}-{part}\">{}</a> and \
                 <a href=\"#critic-{i}-{rest}\">{}</a>",
                escape(&a.arm),
                verb(part),
                verb(rest)
            )
        })
        .collect();
    format!("<p class=\"from\">From {}.</p>", arms.join("; "))
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

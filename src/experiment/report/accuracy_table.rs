//! The critic's accuracy on the report: a table whose every count links to
//! the finishes it counts, and its charts per round.

use super::accuracy::{Counts, CriticAccuracy};
use super::charts::{self, Line};
use super::summary::ArmSummary;
use crate::experiment::db::RunKey;
use crate::experiment::stats::Rate;
use super::templates::{joined, safe, Behind, Figure, Span, Table};
use serde::Serialize;

/// The four outcomes: their anchors' names, accepted, resolves.
const CLASSES: [(&str, bool, bool); 4] = [
    ("accepted-resolved", true, true),
    ("accepted-unresolved", true, false),
    ("rejected-resolved", false, true),
    ("rejected-unresolved", false, false),
];

/// The critic's accuracy as the report shows it.
#[derive(Debug, Serialize)]
pub(super) struct Accuracy {
    table: Table,
    figures: Vec<Figure>,
    lists: Vec<Behind>,
}

/// The accuracy table (each count linked to the finishes it counts, each
/// finish to its round on its run's page) and its charts per round;
/// `None` when no arm has a graded finish.
pub(super) fn accuracy(arms: &[ArmSummary], href: impl Fn(&RunKey) -> String) -> Option<Accuracy> {
    let with: Vec<(usize, &ArmSummary, &CriticAccuracy)> = arms
        .iter()
        .enumerate()
        .filter_map(|(i, a)| a.critic.as_ref().map(|c| (i, a, c)))
        .collect();
    if with.is_empty() {
        return None;
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
    let mut rows = Vec::new();
    let mut lists = Vec::new();
    for (i, a, c) in &with {
        let n = &c.counts;
        let counts = [
            n.accepted_resolved,
            n.accepted_unresolved,
            n.rejected_resolved,
            n.rejected_unresolved,
        ];
        let mut row = vec![Span::text(a.arm.clone())];
        row.extend(
            CLASSES
                .iter()
                .zip(counts)
                .map(|((name, _, _), k)| Span::link(format!("#critic-{i}-{name}"), k.to_string())),
        );
        row.push(Span::link(
            format!("#critic-{i}-rejected-resolved"),
            pct(&c.rejected_of_resolving),
        ));
        row.push(Span::link(
            format!("#critic-{i}-accepted-unresolved"),
            pct(&c.accepted_of_unresolved),
        ));
        rows.push(row);
        for (name, accepted, resolves) in CLASSES {
            let links = c
                .finishes
                .iter()
                .filter(|(_, _, a, r)| (*a, *r) == (accepted, resolves))
                .map(|(key, round, _, _)| {
                    vec![Span::link(
                        format!("{}#round-{round}", href(key)),
                        format!("{} / {}, round {round}", key.instance_id, key.sample),
                    )]
                })
                .collect();
            lists.push(Behind::new(
                format!("critic-{i}-{name}"),
                format!("{}: {}", a.arm, name.replace('-', ", ")),
                links,
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
    let header = [
        "arm",
        "accepted, resolves",
        "accepted, does not resolve",
        "rejected, resolves",
        "rejected, does not resolve",
        "correct fixes rejected",
        "wrong fixes accepted",
    ];
    Some(Accuracy {
        table: Table {
            id: "critic".into(),
            header: header.iter().map(|h| h.to_string()).collect(),
            rows,
        },
        figures: vec![
            Figure {
                id: "rejected-resolving",
                svg: safe(charts::lines(
                    "Correct fixes the critic rejected, per round (95% CI)",
                    "round",
                    "rejected",
                    &line(Counts::rejected_of_resolving),
                )),
                from: caption(&with, "rejected-resolved", "accepted-resolved", "resolving"),
            },
            Figure {
                id: "accepted-unresolved",
                svg: safe(charts::lines(
                    "Wrong fixes the critic accepted, per round (95% CI)",
                    "round",
                    "accepted",
                    &line(Counts::accepted_of_unresolved),
                )),
                from: caption(
                    &with,
                    "accepted-unresolved",
                    "rejected-unresolved",
                    "unresolved",
                ),
            },
        ],
        lists,
    })
}

/// Under a chart: per arm, the `what` finishes behind its line, those
/// of class `part` (counted) and of class `rest`, each linked to its list.
fn caption(
    arms: &[(usize, &ArmSummary, &CriticAccuracy)],
    part: &str,
    rest: &str,
    what: &str,
) -> Vec<Span> {
    let verb = |class: &str| class.split('-').next().unwrap_or_default().to_string();
    let arms = arms
        .iter()
        .map(|(i, a, _)| {
            vec![
                Span::text(format!("{}: the {what} finishes it ", a.arm)),
                Span::link(format!("#critic-{i}-{part}"), verb(part)),
                Span::text(" and "),
                Span::link(format!("#critic-{i}-{rest}"), verb(rest)),
            ]
        })
        .collect();
    let mut out = vec![Span::text("From ")];
    out.extend(joined(arms, "; "));
    out.push(Span::text("."));
    out
}

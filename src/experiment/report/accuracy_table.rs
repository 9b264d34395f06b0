//! The critic's accuracy on the report: a table whose every count links to
//! the finishes it counts, and its charts per round.

use super::accuracy::{Counts, CriticAccuracy};
use super::charts::{self, Line};
use super::summary::ArmSummary;
use crate::experiment::db::RunKey;
use crate::experiment::stats::Rate;
use crate::report_html::escape;

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
pub(super) fn html(arms: &[ArmSummary], href: impl Fn(&RunKey) -> String) -> String {
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

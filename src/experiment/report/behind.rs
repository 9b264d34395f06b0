//! The runs behind each number of the report: per arm, the runs counted in
//! each count of the main table (results, resolved, F→P, agent failures,
//! infrastructure errors, budget exhausted); the pairs behind the paired
//! table; the runs of each failure class and MPE class. Each table cell
//! links to its list, each list item to a run's page.

use super::summary::{pairs, Summary};
use crate::experiment::db::{Run, RunKey, Status};
use super::templates::{Behind, Span, Table};
use serde::Serialize;

/// A count of the main table: its column, its anchor's name, and which
/// runs of an arm it holds.
struct Count {
    column: usize,
    name: &'static str,
    holds: fn(&Run) -> bool,
}

const COUNTS: [Count; 6] = [
    Count {
        column: 1,
        name: "results",
        holds: |r| r.status.is_result(),
    },
    Count {
        column: 2,
        name: "resolved",
        holds: |r| r.status.is_result() && r.resolved == Some(true),
    },
    Count {
        column: 3,
        name: "f2p",
        holds: |r| {
            r.status.is_result() && r.f2p.is_some_and(|f| f.fails_on_base && f.passes_on_golden)
        },
    },
    Count {
        column: 4,
        name: "agent_fail",
        holds: |r| r.status == Status::AgentFail,
    },
    Count {
        column: 5,
        name: "infra_error",
        holds: |r| !r.status.is_result(),
    },
    Count {
        column: 6,
        name: "budget_exhausted",
        holds: |r| r.status.is_result() && r.budget_exhausted,
    },
];

/// The other numbers of the main table, and the runs they are computed
/// from: mean rounds, pass@k and coupling from the results; tokens and cost
/// per resolved run from the resolved ones.
const FROM: [(usize, &str); 5] = [
    (7, "results"),
    (8, "results"),
    (9, "results"),
    (10, "resolved"),
    (11, "resolved"),
];

/// The anchor of the list of arm `i`'s runs counted as `what` (a name of
/// [`COUNTS`]).
pub fn anchor(i: usize, what: &str) -> String {
    format!("behind-{i}-{what}")
}

/// The paired table's columns and the lists they link to: the pairs (for
/// the pairs, Δ and p), and each side's wins.
const PAIRED: [(usize, &str); 5] = [
    (2, "pairs"),
    (3, "baseline-only"),
    (4, "arm-only"),
    (5, "pairs"),
    (6, "pairs"),
];

/// A class of pairs: its anchor's name, its title, and which pairs it
/// holds by (baseline resolved, arm resolved).
type PairClass = (&'static str, &'static str, fn(bool, bool) -> bool);

const PAIR_CLASSES: [PairClass; 3] = [
    ("pairs", "pairs", |_, _| true),
    ("baseline-only", "resolved by the baseline only", |b, a| {
        b && !a
    }),
    ("arm-only", "resolved by the arm only", |b, a| !b && a),
];

/// `rows` (header first, cells as text) as table `id`, each body cell a
/// link to the anchor `target(i, column)` gives (`i` counts the rows under
/// the header from 0).
pub fn linked(
    rows: &[Vec<String>],
    id: &str,
    target: impl Fn(usize, usize) -> Option<String>,
) -> Table {
    let (header, body) = rows.split_first().map_or((&[][..], &[][..]), |(h, b)| (&h[..], b));
    Table {
        id: id.to_string(),
        header: header.to_vec(),
        rows: body
            .iter()
            .enumerate()
            .map(|(i, cells)| {
                cells
                    .iter()
                    .enumerate()
                    .map(|(col, cell)| match target(i, col) {
                        Some(to) => Span::link(format!("#{to}"), cell.clone()),
                        None => Span::text(cell.clone()),
                    })
                    .collect()
            })
            .collect(),
    }
}

/// The main table (its rows, header first, cells as text), each number a
/// link to the runs it comes from.
pub fn linked_table(main: &[Vec<String>]) -> Table {
    linked(main, "arms", |i, col| {
        COUNTS
            .iter()
            .find(|c| c.column == col)
            .map(|c| c.name)
            .or_else(|| FROM.iter().find(|(c, _)| *c == col).map(|(_, n)| *n))
            .map(|name| anchor(i, name))
    })
}

/// The paired table, each number a link to its pairs.
pub fn linked_paired(paired: &[Vec<String>]) -> Table {
    linked(paired, "paired", |i, col| {
        PAIRED
            .iter()
            .find(|(c, _)| *c == col)
            .map(|(_, name)| format!("paired-{i}-{name}"))
    })
}

/// A link to `key`'s page, named by its instance and sample.
pub fn run_link(key: &RunKey, href: &impl Fn(&RunKey) -> String) -> Vec<Span> {
    vec![Span::link(
        href(key),
        format!("{} / {}", key.instance_id, key.sample),
    )]
}

/// A heading of the lists behind the numbers, and its lists.
#[derive(Debug, Serialize)]
pub struct Section {
    title: String,
    lists: Vec<Behind>,
}

/// The lists the report's tables link to: per arm and count, per pair
/// class, per failure class and per MPE class.
pub fn sections(s: &Summary, runs: &[Run], href: impl Fn(&RunKey) -> String) -> Vec<Section> {
    let mut out = Vec::new();
    for (i, a) in s.arms.iter().enumerate() {
        let of_arm: Vec<&Run> = runs.iter().filter(|r| r.key.arm == a.arm).collect();
        let lists = COUNTS
            .iter()
            .map(|Count { name, holds, .. }| {
                let links = of_arm
                    .iter()
                    .filter(|r| holds(r))
                    .map(|r| run_link(&r.key, &href))
                    .collect();
                Behind::new(anchor(i, name), *name, links)
            })
            .collect();
        out.push(Section {
            title: a.arm.clone(),
            lists,
        });
    }
    if let Some(baseline) = &s.baseline {
        out.extend(paired_sections(s, runs, baseline, &href));
    }
    if !s.failures.is_empty() {
        let lists = s
            .failures
            .iter()
            .enumerate()
            .map(|(j, f)| {
                let links = runs
                    .iter()
                    .filter(|r| {
                        r.status.name() == f.status && r.error_class.as_ref() == Some(&f.class)
                    })
                    .map(|r| run_link(&r.key, &href))
                    .collect();
                Behind::new(
                    format!("failure-{j}"),
                    format!("{} ({})", f.status, f.class),
                    links,
                )
            })
            .collect();
        out.push(Section {
            title: "Failures by class".into(),
            lists,
        });
    }
    if !s.mpe.is_empty() {
        let mut lists = Vec::new();
        for (i, (arm, classes)) in s.mpe.iter().enumerate() {
            for (class, keys) in classes {
                let links = keys.iter().map(|k| run_link(k, &href)).collect();
                lists.push(Behind::new(
                    mpe_anchor(i, class),
                    format!("{arm}: {class}"),
                    links,
                ));
            }
        }
        out.push(Section {
            title: "MPE classes".into(),
            lists,
        });
    }
    out
}

/// The anchor of the list of the `i`th MPE arm's runs of `class`.
pub fn mpe_anchor(i: usize, class: &str) -> String {
    format!("mpe-{i}-{class}")
}

/// The pairs behind each row of the paired table: every pair, and those
/// only the baseline or only the arm resolved, each with both runs.
fn paired_sections(
    s: &Summary,
    runs: &[Run],
    baseline: &str,
    href: &impl Fn(&RunKey) -> String,
) -> Vec<Section> {
    s.paired
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let pairs = pairs(runs, baseline, &p.arm);
            let link = |(base, arm): &(&Run, &Run)| {
                vec![
                    Span::text(format!(
                        "{} / {}: ",
                        base.key.instance_id, base.key.sample
                    )),
                    Span::link(href(&base.key), baseline),
                    Span::text(" "),
                    Span::link(href(&arm.key), p.arm.clone()),
                ]
            };
            let resolved = |r: &Run| r.resolved == Some(true);
            let lists = PAIR_CLASSES
                .iter()
                .map(|(name, title, holds)| {
                    let links = pairs
                        .iter()
                        .filter(|(b, a)| holds(resolved(b), resolved(a)))
                        .map(link)
                        .collect();
                    Behind::new(format!("paired-{i}-{name}"), *title, links)
                })
                .collect();
            Section {
                title: format!("{} against {baseline}", p.arm),
                lists,
            }
        })
        .collect()
}

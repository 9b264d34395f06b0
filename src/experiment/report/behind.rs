//! The runs behind each number of the report: per arm, the runs counted in
//! each count of the main table (results, resolved, F→P, agent failures,
//! infrastructure errors, budget exhausted); the pairs behind the paired
//! table; the runs of each failure class and MPE class. Each table cell
//! links to its list, each list item to a run's page.

use super::summary::{pairs, Summary};
use crate::experiment::db::{Run, RunKey, Status};
use crate::report_html::escape;

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

/// `rows` (header first, cells as text) as an HTML table `id`, each body
/// cell a link to the anchor `target(i, column)` gives (`i` counts the rows
/// under the header from 0).
pub fn linked(
    rows: &[Vec<String>],
    id: &str,
    target: impl Fn(usize, usize) -> Option<String>,
) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .enumerate()
        .map(|(row, cells)| {
            cells
                .iter()
                .enumerate()
                .map(
                    |(col, cell)| match row.checked_sub(1).and_then(|i| target(i, col)) {
                        Some(to) => format!("<a href=\"#{to}\">{}</a>", escape(cell)),
                        None => escape(cell),
                    },
                )
                .collect()
        })
        .collect();
    super::tables::html_table_raw(&rows, id)
}

/// The main table (its rows, header first, cells as text) as HTML, each
/// number a link to the runs it comes from.
pub fn linked_table(main: &[Vec<String>]) -> String {
    linked(main, "arms", |i, col| {
        COUNTS
            .iter()
            .find(|c| c.column == col)
            .map(|c| c.name)
            .or_else(|| FROM.iter().find(|(c, _)| *c == col).map(|(_, n)| *n))
            .map(|name| anchor(i, name))
    })
}

/// The paired table as HTML, each number a link to its pairs.
pub fn linked_paired(paired: &[Vec<String>]) -> String {
    linked(paired, "paired", |i, col| {
        PAIRED
            .iter()
            .find(|(c, _)| *c == col)
            .map(|(_, name)| format!("paired-{i}-{name}"))
    })
}

/// A list of what is behind a number: `id`, its title, its items (links).
pub fn list(id: &str, title: &str, items: &[String]) -> String {
    format!(
        "<p id=\"{id}\" class=\"behind\"><strong>{}</strong> ({}): {}</p>",
        escape(title),
        items.len(),
        if items.is_empty() {
            "none".to_string()
        } else {
            items.join(" ")
        }
    )
}

/// A link to `key`'s page, named by its instance and sample.
pub fn run_link(key: &RunKey, href: &impl Fn(&RunKey) -> String) -> String {
    format!(
        "<a href=\"{}\">{} / {}</a>",
        escape(&href(key)),
        escape(&key.instance_id),
        key.sample
    )
}

/// The lists the report's tables link to: per arm and count, per pair
/// class, per failure class and per MPE class.
pub fn html(s: &Summary, runs: &[Run], href: impl Fn(&RunKey) -> String) -> String {
    let mut out = String::from(
        "<h2 id=\"behind\">The runs behind each number</h2><p>Each number of the tables above \
         links here; each run opens its page.</p>",
    );
    for (i, a) in s.arms.iter().enumerate() {
        out.push_str(&format!("<h3>{}</h3>", escape(&a.arm)));
        let of_arm: Vec<&Run> = runs.iter().filter(|r| r.key.arm == a.arm).collect();
        for Count { name, holds, .. } in COUNTS {
            let links: Vec<String> = of_arm
                .iter()
                .filter(|r| holds(r))
                .map(|r| run_link(&r.key, &href))
                .collect();
            out.push_str(&list(&anchor(i, name), name, &links));
        }
    }
    if let Some(baseline) = &s.baseline {
        out.push_str(&paired_lists(s, runs, baseline, &href));
    }
    if !s.failures.is_empty() {
        out.push_str("<h3>Failures by class</h3>");
        for (j, f) in s.failures.iter().enumerate() {
            let links: Vec<String> = runs
                .iter()
                .filter(|r| r.status.name() == f.status && r.error_class.as_ref() == Some(&f.class))
                .map(|r| run_link(&r.key, &href))
                .collect();
            let title = format!("{} ({})", f.status, f.class);
            out.push_str(&list(&format!("failure-{j}"), &title, &links));
        }
    }
    if !s.mpe.is_empty() {
        out.push_str("<h3>MPE classes</h3>");
        for (i, (arm, classes)) in s.mpe.iter().enumerate() {
            for (class, keys) in classes {
                let links: Vec<String> = keys.iter().map(|k| run_link(k, &href)).collect();
                let title = format!("{arm}: {class}");
                out.push_str(&list(&mpe_anchor(i, class), &title, &links));
            }
        }
    }
    out
}

/// The anchor of the list of the `i`th MPE arm's runs of `class`.
pub fn mpe_anchor(i: usize, class: &str) -> String {
    format!("mpe-{i}-{class}")
}

/// The pairs behind each row of the paired table: every pair, and those
/// only the baseline or only the arm resolved, each with both runs.
fn paired_lists(
    s: &Summary,
    runs: &[Run],
    baseline: &str,
    href: &impl Fn(&RunKey) -> String,
) -> String {
    let mut out = String::new();
    for (i, p) in s.paired.iter().enumerate() {
        out.push_str(&format!(
            "<h3>{} against {}</h3>",
            escape(&p.arm),
            escape(baseline)
        ));
        let pairs = pairs(runs, baseline, &p.arm);
        let link = |(base, arm): &(&Run, &Run)| {
            format!(
                "{} / {}: <a href=\"{}\">{}</a> <a href=\"{}\">{}</a>",
                escape(&base.key.instance_id),
                base.key.sample,
                escape(&href(&base.key)),
                escape(baseline),
                escape(&href(&arm.key)),
                escape(&p.arm)
            )
        };
        let resolved = |r: &Run| r.resolved == Some(true);
        for (name, title, holds) in PAIR_CLASSES {
            let links: Vec<String> = pairs
                .iter()
                .filter(|(b, a)| holds(resolved(b), resolved(a)))
                .map(link)
                .collect();
            out.push_str(&list(&format!("paired-{i}-{name}"), title, &links));
        }
    }
    out
}

//! The runs behind each number of the report's main table: per arm, the
//! runs counted in each count (results, resolved, F→P, agent failures,
//! infrastructure errors, budget exhausted), each a link to its page, and
//! every number of the table linked to the list it comes from.

use super::Summary;
use crate::experiment::db::{Run, Status};
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

/// The anchor of the list of arm `i`'s runs counted as `what`.
fn anchor(i: usize, what: &str) -> String {
    format!("behind-{i}-{what}")
}

/// `main` (the main table's rows, header first, cells as text) as HTML,
/// each count's cell a link to the runs it counts.
pub fn linked_table(main: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = main
        .iter()
        .enumerate()
        .map(|(row, cells)| {
            cells
                .iter()
                .enumerate()
                .map(|(col, cell)| {
                    let text = escape(cell);
                    let list = COUNTS
                        .iter()
                        .find(|c| c.column == col)
                        .map(|c| c.name)
                        .or_else(|| FROM.iter().find(|(c, _)| *c == col).map(|(_, n)| *n));
                    match list {
                        Some(name) if row > 0 => {
                            format!("<a href=\"#{}\">{text}</a>", anchor(row - 1, name))
                        }
                        _ => text,
                    }
                })
                .collect()
        })
        .collect();
    super::tables::html_table_raw(&rows, "arms")
}

/// The lists the main table links to, one per arm and count.
pub fn html(s: &Summary, runs: &[Run], href: impl Fn(&Run) -> String) -> String {
    let mut out = String::from(
        "<h2 id=\"behind\">The runs behind each number</h2><p>Each count of the table above \
         links here; each run opens its page.</p>",
    );
    for (i, a) in s.arms.iter().enumerate() {
        out.push_str(&format!("<h3>{}</h3>", escape(&a.arm)));
        let of_arm: Vec<&Run> = runs.iter().filter(|r| r.key.arm == a.arm).collect();
        for Count {
            name: what, holds, ..
        } in COUNTS
        {
            let links: Vec<String> = of_arm
                .iter()
                .filter(|r| holds(r))
                .map(|r| {
                    format!(
                        "<a href=\"{}\">{} / {}</a>",
                        escape(&href(r)),
                        escape(&r.key.instance_id),
                        r.key.sample
                    )
                })
                .collect();
            out.push_str(&format!(
                "<p id=\"{}\" class=\"behind\"><strong>{what}</strong> ({}): {}</p>",
                anchor(i, what),
                links.len(),
                if links.is_empty() {
                    "none".to_string()
                } else {
                    links.join(" ")
                }
            ));
        }
    }
    out
}

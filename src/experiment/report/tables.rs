//! The report's tables as rows of cells, rendered as Markdown (for
//! `critic experiment report --format markdown` and the run's closing lines)
//! or as HTML tables for the page.

use super::summary::Summary;
use crate::experiment::stats::Rate;

pub(super) fn pct(r: &Rate) -> String {
    if r.n == 0 {
        return "– (0/0)".into();
    }
    format!(
        "{:.1}% [{:.1}, {:.1}] ({}/{})",
        100.0 * r.rate,
        100.0 * r.low,
        100.0 * r.high,
        r.k,
        r.n
    )
}

pub(super) fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map_or("–".into(), f)
}

/// The tables, as rows of cells: the main one, and the paired one.
pub(super) fn tables(s: &Summary) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let mut main = vec![[
        "arm",
        "runs",
        "resolved (95% CI)",
        "F→P (95% CI)",
        "agent_fail",
        "infra_error",
        "budget exhausted",
        "mean rounds",
        "pass@k",
        "coupling",
        "tokens / resolved",
        "cost / resolved",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect::<Vec<_>>()];
    for a in &s.arms {
        main.push(vec![
            a.arm.clone(),
            a.runs.to_string(),
            pct(&a.resolved),
            opt(a.f2p.as_ref(), pct),
            a.agent_fail.to_string(),
            a.infra_errors.to_string(),
            a.budget_exhausted.to_string(),
            format!("{:.2}", a.mean_rounds),
            a.pass_at_k
                .iter()
                .enumerate()
                .map(|(k, p)| match p {
                    Some((m, lo, hi)) => format!("@{}: {m:.3} [{lo:.3}, {hi:.3}]", k + 1),
                    None => format!("@{}: –", k + 1),
                })
                .collect::<Vec<_>>()
                .join(", "),
            opt(a.coupling, |c| format!("{c:.2}")),
            opt(a.tokens_per_resolved, |t| format!("{t:.0}")),
            opt(a.cost_per_resolved, |c| format!("${c:.4}")),
        ]);
    }
    let mut paired = vec![[
        "arm",
        "baseline",
        "pairs",
        "baseline only",
        "arm only",
        "Δ resolved",
        "McNemar p",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect::<Vec<_>>()];
    for p in &s.paired {
        paired.push(vec![
            p.arm.clone(),
            p.baseline.clone(),
            p.pairs.to_string(),
            p.baseline_only.to_string(),
            p.arm_only.to_string(),
            format!("{:+.1} pp", 100.0 * p.delta),
            format!("{:.4}", p.p_value),
        ]);
    }
    (main, paired)
}

/// MPE classes per arm, as rows (header first; only the header when
/// nothing was classed).
pub(super) fn mpe_table(s: &Summary) -> Vec<Vec<String>> {
    let classes = [
        "rigorous",
        "lax",
        "misaligned",
        "no_test",
        "harness_error",
        "no_pool",
        "error",
    ];
    let mut rows = vec![std::iter::once("arm".to_string())
        .chain(classes.iter().map(|c| c.to_string()))
        .collect::<Vec<_>>()];
    for (arm, counts) in &s.mpe {
        rows.push(
            std::iter::once(arm.clone())
                .chain(
                    classes
                        .iter()
                        .map(|c| counts.get(*c).map_or(0, Vec::len).to_string()),
                )
                .collect(),
        );
    }
    rows
}

/// The tables as Markdown.
pub fn markdown(s: &Summary) -> String {
    let render = |rows: &[Vec<String>]| {
        let mut out = String::new();
        for (i, row) in rows.iter().enumerate() {
            out.push_str(&format!(
                "| {} |\n",
                row.iter()
                    .map(|c| c.replace('|', "\\|"))
                    .collect::<Vec<_>>()
                    .join(" | ")
            ));
            if i == 0 {
                out.push_str(&format!("|{}\n", " --- |".repeat(row.len())));
            }
        }
        out
    };
    let (main, paired) = tables(s);
    let mut out = format!("## {}\n\n{}", s.name, render(&main));
    if paired.len() > 1 {
        out.push_str(&format!(
            "\nPaired against `{}`:\n\n{}",
            s.baseline.as_deref().unwrap_or("?"),
            render(&paired)
        ));
    }
    let mpe = mpe_table(s);
    if mpe.len() > 1 {
        out.push_str(&format!(
            "\nMPE classes of the runs' own tests:\n\n{}",
            render(&mpe)
        ));
    }
    for b in &s.broken {
        out.push_str(&format!(
            "\nBroken instance `{}` (not run): {}\n",
            b.instance_id, b.reason
        ));
    }
    for f in &s.failures {
        out.push_str(&format!(
            "\n{} ({}): {} run(s); first, {}: {}\n",
            f.status, f.class, f.runs, f.first_run, f.first_message
        ));
    }
    if !s.infra_errors.is_empty() {
        out.push_str("\nInfrastructure errors (not results): ");
        let listed: Vec<String> = s
            .infra_errors
            .iter()
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        out.push_str(&listed.join(", "));
        out.push('\n');
    }
    out
}

//! An experiment's report: `OUT/summary.json` and a self-contained
//! `OUT/report.html` (tables, and charts plotters draws as inline SVG), or
//! the same tables as Markdown. Rates carry 95% Wilson intervals; each arm
//! is compared with a baseline arm on the same (instance, sample) pairs by
//! McNemar's exact test. Infrastructure errors are counted and listed,
//! never folded into a rate.

use crate::experiment::db::{Broken, Run, Status};
use crate::experiment::stats::{self, Rate};
use plotters::prelude::*;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One arm's numbers.
#[derive(Debug, Clone, Serialize)]
pub struct ArmSummary {
    /// The arm.
    pub arm: String,
    /// Runs that are results (`ok` and `agent_fail`).
    pub runs: u32,
    /// Of them, `agent_fail`.
    pub agent_fail: u32,
    /// Runs that are not results.
    pub infra_errors: u32,
    /// Resolved among the results.
    pub resolved: Rate,
    /// Fail-to-pass among the results that wrote a test (`None`: none did).
    pub f2p: Option<Rate>,
    /// Accepted only because the skill's budget ran out.
    pub budget_exhausted: u32,
    /// Mean agent turns per run.
    pub mean_rounds: f64,
    /// Tokens reported by the agents' transcripts (runs that report them).
    pub tokens: Option<u64>,
    /// Cost reported or priced, USD.
    pub cost: Option<f64>,
    /// Cost per resolved run.
    pub cost_per_resolved: Option<f64>,
    /// Tokens per resolved run.
    pub tokens_per_resolved: Option<f64>,
    /// The coupling factor of the run's test and fix failing together.
    pub coupling: Option<f64>,
    /// pass@k for k = 1..samples: the mean over the instances with at least
    /// k results, and its 95% bootstrap interval.
    pub pass_at_k: Vec<Option<(f64, f64, f64)>>,
    /// Share of runs resolved within k rounds, k = 1, 2, ...
    pub resolved_within: Vec<Rate>,
}

/// An arm against the baseline on the same (instance, sample) pairs.
#[derive(Debug, Clone, Serialize)]
pub struct Paired {
    /// The arm.
    pub arm: String,
    /// The baseline.
    pub baseline: String,
    /// Pairs where both are results.
    pub pairs: u32,
    /// Resolved by the baseline only.
    pub baseline_only: u32,
    /// Resolved by the arm only.
    pub arm_only: u32,
    /// Resolved rate difference (arm - baseline) on the pairs.
    pub delta: f64,
    /// McNemar's exact two-sided p-value.
    pub p_value: f64,
}

/// The report's numbers.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// The experiment.
    pub name: String,
    /// Per arm, in the experiment file's order; controls (`@gold`,
    /// `@empty`) last.
    pub arms: Vec<ArmSummary>,
    /// The baseline of [`Summary::paired`].
    pub baseline: Option<String>,
    /// Each other arm against the baseline.
    pub paired: Vec<Paired>,
    /// Infrastructure errors by class.
    pub infra_errors: BTreeMap<String, u32>,
    /// Every class of failure (infrastructure errors and agent failures),
    /// with how many runs and the first one's message.
    pub failures: Vec<FailureClass>,
    /// Instances whose golden patch did not resolve them: not run.
    pub broken: Vec<Broken>,
    /// MPE classes of the runs' own tests per arm (`evaluate.mpe`).
    pub mpe: BTreeMap<String, BTreeMap<String, u32>>,
}

/// One class of failure.
#[derive(Debug, Clone, Serialize)]
pub struct FailureClass {
    /// `infra_error` or `agent_fail`.
    pub status: String,
    /// Its class (`grade`, `turn_budget`, ...).
    pub class: String,
    /// How many runs.
    pub runs: u32,
    /// The first run of the class (`instance / arm / sample`).
    pub first_run: String,
    /// Its message.
    pub first_message: String,
}

fn failure_classes(runs: &[Run]) -> Vec<FailureClass> {
    let mut classes: Vec<FailureClass> = Vec::new();
    for r in runs.iter().filter(|r| r.status != Status::Ok) {
        let Some(class) = &r.error_class else {
            continue;
        };
        match classes
            .iter_mut()
            .find(|c| c.status == r.status.name() && &c.class == class)
        {
            Some(c) => c.runs += 1,
            None => classes.push(FailureClass {
                status: r.status.name().into(),
                class: class.clone(),
                runs: 1,
                first_run: r.key.to_string(),
                first_message: r.error.clone().unwrap_or_default(),
            }),
        }
    }
    classes.sort_by(|a, b| (&a.status, &a.class).cmp(&(&b.status, &b.class)));
    classes
}

fn is_result(r: &Run) -> bool {
    r.status != Status::InfraError
}

/// The numbers of `runs`, arms in `order` (others after, by name),
/// compared with `baseline` (default: the first arm).
pub fn summarize(name: &str, runs: &[Run], order: &[String], baseline: Option<&str>) -> Summary {
    let mut arms: Vec<String> = order.to_vec();
    let mut extra: Vec<String> = runs
        .iter()
        .map(|r| r.key.arm.clone())
        .filter(|a| !arms.contains(a))
        .collect();
    extra.sort();
    extra.dedup();
    arms.extend(extra);
    let samples = runs.iter().map(|r| r.key.sample + 1).max().unwrap_or(1);
    let max_rounds = runs.iter().map(|r| r.rounds).max().unwrap_or(1).max(1);
    let summaries: Vec<ArmSummary> = arms
        .iter()
        .filter(|a| runs.iter().any(|r| &r.key.arm == *a))
        .map(|arm| {
            let all: Vec<&Run> = runs.iter().filter(|r| &r.key.arm == arm).collect();
            let results: Vec<&Run> = all.iter().copied().filter(|r| is_result(r)).collect();
            let n = results.len() as u32;
            let resolved = results.iter().filter(|r| r.resolved == Some(true)).count() as u32;
            let with_test: Vec<&&Run> = results.iter().filter(|r| r.f2p.is_some()).collect();
            let f2p_ok = with_test
                .iter()
                .filter(|r| r.f2p.is_some_and(|f| f.fails_on_base && f.passes_on_golden))
                .count() as u32;
            let tokens: Option<u64> = results.iter().filter_map(|r| r.tokens).reduce(|a, b| a + b);
            let cost: Option<f64> = results.iter().filter_map(|r| r.cost).reduce(|a, b| a + b);
            let couples: Vec<(bool, bool)> = with_test
                .iter()
                .map(|r| {
                    let f = r.f2p.expect("filtered on f2p");
                    (
                        !(f.fails_on_base && f.passes_on_golden),
                        r.resolved != Some(true),
                    )
                })
                .collect();
            let mut per_instance: BTreeMap<&str, (u32, u32)> = BTreeMap::new();
            for r in &results {
                let e = per_instance.entry(r.key.instance_id.as_str()).or_default();
                e.0 += 1;
                if r.resolved == Some(true) {
                    e.1 += 1;
                }
            }
            let counts: Vec<(u32, u32)> = per_instance.values().copied().collect();
            let pass_at_k = (1..=samples)
                .map(|k| stats::pass_at_k_mean(&counts, k))
                .collect();
            let per_resolved = |total: f64| (resolved > 0).then(|| total / f64::from(resolved));
            ArmSummary {
                arm: arm.clone(),
                runs: n,
                agent_fail: results
                    .iter()
                    .filter(|r| r.status == Status::AgentFail)
                    .count() as u32,
                infra_errors: (all.len() - results.len()) as u32,
                resolved: stats::wilson(resolved, n),
                f2p: (!with_test.is_empty()).then(|| stats::wilson(f2p_ok, with_test.len() as u32)),
                budget_exhausted: results.iter().filter(|r| r.budget_exhausted).count() as u32,
                mean_rounds: if n == 0 {
                    0.0
                } else {
                    results.iter().map(|r| f64::from(r.rounds)).sum::<f64>() / f64::from(n)
                },
                tokens,
                cost,
                cost_per_resolved: cost.and_then(per_resolved),
                tokens_per_resolved: tokens.and_then(|t| per_resolved(t as f64)),
                coupling: stats::coupling(&couples),
                pass_at_k,
                resolved_within: (1..=max_rounds)
                    .map(|k| {
                        let within = results
                            .iter()
                            .filter(|r| r.resolved == Some(true) && r.rounds <= k)
                            .count() as u32;
                        stats::wilson(within, n)
                    })
                    .collect(),
            }
        })
        .collect();
    let baseline = baseline
        .map(str::to_string)
        .or_else(|| summaries.first().map(|s| s.arm.clone()));
    let paired = baseline
        .as_deref()
        .map(|b| {
            summaries
                .iter()
                .filter(|s| s.arm != b && !s.arm.starts_with('@'))
                .map(|s| paired(runs, b, &s.arm))
                .collect()
        })
        .unwrap_or_default();
    let mut infra_errors = BTreeMap::new();
    for r in runs.iter().filter(|r| !is_result(r)) {
        *infra_errors
            .entry(r.error_class.clone().unwrap_or_default())
            .or_insert(0) += 1;
    }
    Summary {
        name: name.to_string(),
        arms: summaries,
        baseline,
        paired,
        infra_errors,
        failures: failure_classes(runs),
        broken: Vec::new(),
        mpe: BTreeMap::new(),
    }
}

fn paired(runs: &[Run], baseline: &str, arm: &str) -> Paired {
    let of = |a: &str| -> BTreeMap<(&str, u32), bool> {
        runs.iter()
            .filter(|r| r.key.arm == a && is_result(r))
            .map(|r| {
                (
                    (r.key.instance_id.as_str(), r.key.sample),
                    r.resolved == Some(true),
                )
            })
            .collect()
    };
    let (base, this) = (of(baseline), of(arm));
    let (mut n, mut b, mut c, mut base_total, mut arm_total) = (0u32, 0u32, 0u32, 0u32, 0u32);
    for (k, x) in &base {
        if let Some(y) = this.get(k) {
            n += 1;
            base_total += u32::from(*x);
            arm_total += u32::from(*y);
            match (x, y) {
                (true, false) => b += 1,
                (false, true) => c += 1,
                _ => {}
            }
        }
    }
    Paired {
        arm: arm.to_string(),
        baseline: baseline.to_string(),
        pairs: n,
        baseline_only: b,
        arm_only: c,
        delta: if n == 0 {
            0.0
        } else {
            (f64::from(arm_total) - f64::from(base_total)) / f64::from(n)
        },
        p_value: stats::mcnemar(b, c),
    }
}

fn pct(r: &Rate) -> String {
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

fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map_or("–".into(), f)
}

/// The tables, as rows of cells: the main one, and the paired one.
fn tables(s: &Summary) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
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
fn mpe_table(s: &Summary) -> Vec<Vec<String>> {
    let classes = [
        "rigorous",
        "lax",
        "misaligned",
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
                        .map(|c| counts.get(*c).copied().unwrap_or(0).to_string()),
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

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn html_table(rows: &[Vec<String>], id: &str) -> String {
    let mut out = format!("<table id=\"{id}\">");
    for (i, row) in rows.iter().enumerate() {
        let cell = if i == 0 { "th" } else { "td" };
        out.push_str("<tr>");
        for c in row {
            out.push_str(&format!("<{cell}>{}</{cell}>", escape(c)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    out
}

const PALETTE: [RGBColor; 6] = [
    RGBColor(25, 118, 210),
    RGBColor(239, 108, 0),
    RGBColor(46, 125, 50),
    RGBColor(198, 40, 40),
    RGBColor(106, 27, 154),
    RGBColor(96, 125, 139),
];

/// Bars with 95% whiskers, one per arm.
fn rate_bars(title: &str, bars: &[(String, Rate)]) -> String {
    let mut svg = String::new();
    {
        let width = (160 + 110 * bars.len() as u32).clamp(480, 1200);
        let root = SVGBackend::with_string(&mut svg, (width, 360)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let n = bars.len().max(1) as f64;
        let Ok(mut chart) = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(48)
            .build_cartesian_2d(0f64..n, 0f64..1.05f64)
        else {
            return String::new();
        };
        let names: Vec<String> = bars.iter().map(|(a, _)| a.clone()).collect();
        let label = |x: &f64| {
            let i = x.floor() as usize;
            if (x - x.floor() - 0.5).abs() < 1e-9 {
                names.get(i).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        let _ = chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(bars.len() * 2 + 1)
            .x_label_formatter(&label)
            .y_desc("share of runs")
            .draw();
        for (i, (_, r)) in bars.iter().enumerate() {
            let x = i as f64;
            let colour = PALETTE[i % PALETTE.len()];
            let _ = chart.draw_series([Rectangle::new(
                [(x + 0.2, 0.0), (x + 0.8, r.rate)],
                colour.mix(0.8).filled(),
            )]);
            let _ = chart.draw_series([PathElement::new(
                [(x + 0.5, r.low), (x + 0.5, r.high)],
                BLACK.stroke_width(2),
            )]);
            for y in [r.low, r.high] {
                let _ =
                    chart.draw_series([PathElement::new([(x + 0.42, y), (x + 0.58, y)], BLACK)]);
            }
        }
        let _ = root.present();
    }
    svg
}

/// Resolved within k rounds, a line per arm.
fn rounds_chart(arms: &[ArmSummary]) -> String {
    let max_k = arms
        .iter()
        .map(|a| a.resolved_within.len())
        .max()
        .unwrap_or(1)
        .max(1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640, 360)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let Ok(mut chart) = ChartBuilder::on(&root)
            .caption("Resolved within k rounds", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(48)
            .build_cartesian_2d(0.5f64..max_k as f64 + 0.5, 0f64..1.05f64)
        else {
            return String::new();
        };
        let _ = chart
            .configure_mesh()
            .x_labels(max_k.min(20))
            .x_label_formatter(&|x| format!("{x:.0}"))
            .x_desc("round k")
            .y_desc("resolved")
            .draw();
        for (i, a) in arms.iter().enumerate() {
            let colour = PALETTE[i % PALETTE.len()];
            let points: Vec<(f64, f64)> = a
                .resolved_within
                .iter()
                .enumerate()
                .map(|(k, r)| ((k + 1) as f64, r.rate))
                .collect();
            if let Ok(series) =
                chart.draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))
            {
                series.label(a.arm.clone()).legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 14, y)], colour.stroke_width(2))
                });
            }
            let _ = chart.draw_series(
                points
                    .into_iter()
                    .map(|p| Circle::new(p, 3, colour.filled())),
            );
        }
        let _ = chart
            .configure_series_labels()
            .border_style(BLACK)
            .background_style(WHITE.mix(0.9))
            .position(SeriesLabelPosition::LowerRight)
            .draw();
        let _ = root.present();
    }
    svg
}

/// The page.
pub fn html(s: &Summary, manifest: &Value) -> String {
    let (main, paired) = tables(s);
    let resolved: Vec<(String, Rate)> =
        s.arms.iter().map(|a| (a.arm.clone(), a.resolved)).collect();
    let f2p: Vec<(String, Rate)> = s
        .arms
        .iter()
        .filter_map(|a| a.f2p.map(|r| (a.arm.clone(), r)))
        .collect();
    let infra = if s.infra_errors.is_empty() {
        "<p>No infrastructure errors.</p>".to_string()
    } else {
        let listed: Vec<String> = s
            .infra_errors
            .iter()
            .map(|(c, n)| format!("<li><code>{}</code>: {n}</li>", escape(c)))
            .collect();
        format!(
            "<p><strong>Infrastructure errors</strong> (not results, left out of every rate; \
             rerun to retry them):</p><ul>{}</ul>",
            listed.join("")
        )
    };
    let failures = if s.failures.is_empty() {
        String::new()
    } else {
        let mut rows = vec![vec![
            "status".to_string(),
            "class".into(),
            "runs".into(),
            "first run".into(),
            "its message".into(),
        ]];
        rows.extend(s.failures.iter().map(|f| {
            vec![
                escape(&f.status),
                escape(&f.class),
                f.runs.to_string(),
                escape(&f.first_run),
                escape(&f.first_message),
            ]
        }));
        format!(
            "<h2>Failures by class</h2>{}",
            html_table(&rows, "failures")
        )
    };
    let broken = if s.broken.is_empty() {
        String::new()
    } else {
        let items: Vec<String> = s
            .broken
            .iter()
            .map(|b| {
                format!(
                    "<li><code>{}</code>: {}<pre>{}</pre></li>",
                    escape(&b.instance_id),
                    escape(&b.reason),
                    escape(&b.log_tail)
                )
            })
            .collect();
        format!(
            "<h2 id=\"broken\">Broken instances</h2><p>Their golden patch does not resolve them in \
             this environment, so none of their runs were made: fix the environment or the \
             record, and run again.</p><ul>{}</ul>",
            items.join("")
        )
    };
    let mpe = mpe_table(s);
    let mpe_html = if mpe.len() > 1 {
        format!(
            "<h2>MPE classes of the runs' own tests</h2>{}<p>From <code>mpe/</code> \
             (<code>critic mpe</code> on the final patches' tests).</p>",
            html_table(&mpe, "mpe")
        )
    } else {
        String::new()
    };
    let paired_html = if paired.len() > 1 {
        format!(
            "<h2>Paired against <code>{}</code></h2>{}",
            escape(s.baseline.as_deref().unwrap_or("?")),
            html_table(&paired, "paired")
        )
    } else {
        String::new()
    };
    let f2p_chart = if f2p.is_empty() {
        String::new()
    } else {
        format!(
            "<figure id=\"f2p\">{}</figure>",
            rate_bars("F→P of the runs' own tests (95% CI)", &f2p)
        )
    };
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{name}: experiment report</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222; max-width: 1300px; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #ccc; padding: 4px 10px; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
figure {{ display: inline-block; margin: 0 1em 1em 0; }}
</style></head><body>
<h1>{name}</h1>
<p>{instances} instances × {arms} arms × {samples} samples; tool {tool}; every number below is
traceable to <code>results.sqlite</code> and the run directories under <code>runs/</code>.</p>
{main}
{infra}
{broken}
{failures}
<figure id="resolved">{resolved_svg}</figure>
{f2p_chart}
<figure id="rounds">{rounds_svg}</figure>
{paired_html}
{mpe_html}
<p>Resolved: the golden tests (FAIL_TO_PASS and PASS_TO_PASS, by test id) pass on the final
patch. F→P: the run's own test fails on the base and passes on the golden fix. Intervals are 95%
Wilson score intervals. pass@k: the unbiased estimator over each instance's samples (with a 95% bootstrap
interval over instances), averaged over the
instances with at least k results (an infrastructure error is not one). Coupling:
P(test not F→P and fix unresolved) / (P(test not F→P) · P(fix unresolved)); 1 means the two fail
independently. Paired: McNemar's exact test on the (instance, sample) pairs both arms have.
Resolved within k rounds: runs resolved whose agent finished within k rounds.</p>
</body></html>
"#,
        name = escape(&s.name),
        instances = manifest["instance_ids"].as_array().map_or(0, |a| a.len()),
        arms = manifest["arms"].as_object().map_or(0, |a| a.len()),
        samples = manifest["samples"],
        tool = escape(&format!(
            "{} ({})",
            manifest["tool"]["version"].as_str().unwrap_or("?"),
            &manifest["tool"]["binary_sha256"].as_str().unwrap_or("?")[..12.min(
                manifest["tool"]["binary_sha256"]
                    .as_str()
                    .unwrap_or("?")
                    .len()
            )]
        )),
        main = html_table(&main, "arms"),
        resolved_svg = rate_bars("Resolved (95% CI)", &resolved),
        rounds_svg = rounds_chart(&s.arms),
    )
}

/// Write `summary.json` and `report.html` for `runs` into `out`.
pub fn write(
    out: &std::path::Path,
    manifest: &Value,
    runs: &[Run],
    broken: &[Broken],
    baseline: Option<&str>,
) -> Result<Summary, String> {
    let order: Vec<String> = manifest["arms"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    if let Some(b) = baseline {
        if !order.iter().any(|a| a == b) {
            return Err(format!(
                "--baseline {b}: no such arm (arms: {})",
                order.join(", ")
            ));
        }
    }
    let name = manifest["name"].as_str().unwrap_or("experiment");
    let mut summary = summarize(name, runs, &order, baseline);
    summary.broken = broken.to_vec();
    summary.mpe = crate::experiment::mpe_eval::classes(out, name);
    let write = |file: &str, bytes: &[u8]| {
        let path = out.join(file);
        crate::sys::atomic_file::write(&path, bytes, true)
            .map_err(|e| format!("{}: {e}", path.display()))
    };
    write(
        "summary.json",
        &serde_json::to_vec_pretty(&json!(summary)).expect("the summary serializes"),
    )?;
    write("report.html", html(&summary, manifest).as_bytes())?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::db::{F2p, RunKey};

    fn run(instance: &str, arm: &str, resolved: bool, test_ok: Option<bool>, rounds: u32) -> Run {
        Run {
            key: RunKey {
                instance_id: instance.into(),
                arm: arm.into(),
                sample: 0,
            },
            status: Status::Ok,
            error_class: None,
            error: None,
            resolved: Some(resolved),
            grade_problem: None,
            f2p: test_ok.map(|ok| F2p {
                fails_on_base: ok,
                passes_on_golden: true,
            }),
            finishes: rounds,
            rounds,
            budget_exhausted: false,
            outcome_test: None,
            tokens: Some(1000),
            cost: Some(0.01),
            duration_s: 1.0,
            attempts: 1,
            model_patch: String::new(),
        }
    }

    #[test]
    fn arms_are_summarized_and_paired_on_the_same_instances() {
        let mut runs = Vec::new();
        for i in 0..10 {
            let id = format!("i{i}");
            runs.push(run(&id, "base", i < 3, None, 1));
            runs.push(run(
                &id,
                "new",
                i < 6,
                Some(i < 6),
                if i < 4 { 1 } else { 2 },
            ));
        }
        let mut broken = run("i10", "new", false, None, 0);
        broken.status = Status::InfraError;
        broken.error_class = Some("workspace".into());
        runs.push(broken);
        let s = summarize("x", &runs, &["base".into(), "new".into()], None);
        let new = &s.arms[1];
        assert_eq!(
            (new.runs, new.infra_errors),
            (10, 1),
            "the error is not a result"
        );
        assert_eq!((new.resolved.k, new.resolved.n), (6, 10));
        assert_eq!(new.f2p.unwrap().k, 6);
        assert_eq!(new.resolved_within[0].k, 4);
        assert_eq!(new.resolved_within[1].k, 6);
        // Test and fix fail together exactly: P(both) = 0.4, marginals 0.4.
        assert!((new.coupling.unwrap() - 2.5).abs() < 1e-9);
        assert!((new.cost_per_resolved.unwrap() - 0.1 / 6.0).abs() < 1e-9);
        let p = &s.paired[0];
        assert_eq!((p.pairs, p.baseline_only, p.arm_only), (10, 0, 3));
        assert!((p.delta - 0.3).abs() < 1e-9);
        assert!((p.p_value - 0.25).abs() < 1e-9);
        assert_eq!(s.infra_errors["workspace"], 1);
        let md = markdown(&s);
        assert!(
            md.contains("| new | 10 | 60.0% [31.3, 83.2] (6/10) |"),
            "{md}"
        );
        assert!(
            md.contains("Infrastructure errors (not results): workspace 1"),
            "{md}"
        );
    }
}

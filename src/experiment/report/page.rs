//! `OUT/report.html`: the arms' table, the failures, the charts, the paired
//! comparison, and a grid of every run by instance and arm whose cells open
//! the run's own page. One static file with no script; its only links go to
//! the run pages and anchors beside it.

use super::charts::{self, Bar, Line};
use super::style::{mark, CSP, STYLE};
use super::summary::{ArmSummary, Summary};
use super::tables::{html_table_raw, mpe_table, tables};
use super::{behind, run_page};
use crate::experiment::db::{Run, RunKey, Status};
use crate::report_html::escape;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The link from the report to a run's page.
fn run_href(key: &RunKey) -> String {
    format!(
        "runs/{}/{}/{}/{}",
        crate::sys::path_name::slug(&key.instance_id),
        crate::sys::path_name::slug(&key.arm),
        key.sample,
        run_page::FILE
    )
}

/// Every run as a cell of an instance × arm grid, each chip opening the
/// run's page (unless it could not be written: `unwritten`); a broken
/// instance is marked and linked to its log.
fn grid(
    s: &Summary,
    manifest: &Value,
    runs: &[Run],
    unwritten: &BTreeMap<RunKey, String>,
) -> String {
    let mut arms: Vec<String> = s.arms.iter().map(|a| a.arm.clone()).collect();
    for arm in manifest["arms"]
        .as_object()
        .into_iter()
        .flat_map(|m| m.keys())
    {
        if !arms.contains(arm) {
            arms.push(arm.clone());
        }
    }
    let mut instances: BTreeSet<&str> = manifest["instance_ids"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    instances.extend(runs.iter().map(|r| r.key.instance_id.as_str()));
    instances.extend(s.broken.iter().map(|b| b.instance_id.as_str()));
    let mut cells: BTreeMap<(&str, &str), Vec<&Run>> = BTreeMap::new();
    for r in runs {
        cells
            .entry((r.key.instance_id.as_str(), r.key.arm.as_str()))
            .or_default()
            .push(r);
    }
    let mut out = String::from("<div class=\"scroll\"><table id=\"runs\"><tr><th>instance</th>");
    for arm in &arms {
        out.push_str(&format!("<th class=\"text\">{}</th>", escape(arm)));
    }
    out.push_str("</tr>");
    for id in instances {
        out.push_str(&format!("<tr><td>{}", escape(id)));
        if let Some(i) = s.broken.iter().position(|b| b.instance_id == id) {
            out.push_str(&format!(
                " <a class=\"chip broken\" href=\"#broken-{i}\" title=\"its golden patch does \
                 not resolve it: its runs are not made\">broken</a>"
            ));
        }
        out.push_str("</td>");
        for arm in &arms {
            out.push_str("<td>");
            match cells.get(&(id, arm.as_str())) {
                None => out.push_str("<span class=\"chip not-run\" title=\"not run\">·</span>"),
                Some(runs) => {
                    for r in runs {
                        let (class, symbol, words) = mark(r);
                        let title =
                            format!("sample {}: {words}, {} round(s)", r.key.sample, r.rounds);
                        match unwritten.get(&r.key) {
                            None => out.push_str(&format!(
                                "<a class=\"run {class}\" href=\"{}\" title=\"{}\">{symbol}</a>",
                                run_href(&r.key),
                                escape(&title)
                            )),
                            Some(why) => out.push_str(&format!(
                                "<span class=\"run {class}\" title=\"{}\">{symbol}</span>",
                                escape(&format!("{title}; its page could not be written: {why}"))
                            )),
                        }
                    }
                }
            }
            out.push_str("</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</table></div>");
    if !unwritten.is_empty() {
        let listed: Vec<String> = unwritten
            .iter()
            .map(|(k, why)| {
                format!(
                    "<li><code>{}</code>: {}</li>",
                    escape(&k.to_string()),
                    escape(why)
                )
            })
            .collect();
        out.push_str(&format!(
            "<p><strong>Pages not written</strong> (something other than a file of the \
             report's is where they go; the runs still count):</p><ul>{}</ul>",
            listed.join("")
        ));
    }
    out
}

/// The chips the grid uses, explained.
const GRID_KEY: &str = "<p class=\"note\"><span class=\"chip resolved\">✓</span> resolved \
    <span class=\"chip unresolved\">✗</span> not resolved \
    <span class=\"chip agent-fail\">✗</span> agent failure (a result; ✓ when its patch still \
    resolves) <span class=\"chip infra-error\">!</span> infrastructure error (not a result) \
    <span class=\"chip not-run\">·</span> not run; <span class=\"chip broken\">broken</span> \
    an instance whose golden patch does not resolve it. One chip per sample; each opens the run: \
    its rounds, the critic's verdicts and follow-ups, the patches, and its grading.</p>";

fn is_control(a: &ArmSummary) -> bool {
    a.arm.starts_with('@')
}

/// The charts: resolved and F→P per arm (controls included: they bound
/// the rates), pass@k and resolved within k rounds for the arms with an
/// agent.
fn charts(s: &Summary) -> String {
    let bars = |rate: fn(&ArmSummary) -> Option<crate::experiment::stats::Rate>| -> Vec<Bar> {
        s.arms
            .iter()
            .enumerate()
            .filter_map(|(i, a)| {
                rate(a).map(|rate| Bar {
                    name: a.arm.clone(),
                    colour: i,
                    rate,
                })
            })
            .collect()
    };
    let agents = || s.arms.iter().enumerate().filter(|(_, a)| !is_control(a));
    let mut out = format!(
        "<figure id=\"resolved\">{}{}</figure>",
        charts::rate_bars("Resolved (95% CI)", &bars(|a| Some(a.resolved))),
        bars_behind(s, "resolved", |a| Some(a.resolved))
    );
    let f2p = bars(|a| a.f2p);
    if !f2p.is_empty() {
        out.push_str(&format!(
            "<figure id=\"f2p\">{}{}</figure>",
            charts::rate_bars("F→P of the runs' own tests (95% CI)", &f2p),
            bars_behind(s, "f2p", |a| a.f2p)
        ));
    }
    let lines_behind = lines_behind(s);
    let samples = s.arms.iter().map(|a| a.pass_at_k.len()).max().unwrap_or(0);
    if samples >= 2 {
        let lines: Vec<Line> = agents()
            .map(|(i, a)| Line {
                name: a.arm.clone(),
                colour: i,
                points: a.pass_at_k.clone(),
            })
            .collect();
        out.push_str(&format!(
            "<figure id=\"pass-at-k\">{}{lines_behind}</figure>",
            charts::lines("pass@k (95% bootstrap CI)", "k samples", "pass@k", &lines)
        ));
    }
    let rounds: Vec<Line> = agents()
        .map(|(i, a)| Line {
            name: a.arm.clone(),
            colour: i,
            points: a
                .resolved_within
                .iter()
                .map(|r| Some((r.rate, r.low, r.high)))
                .collect(),
        })
        .collect();
    if !rounds.is_empty() {
        out.push_str(&format!(
            "<figure id=\"rounds\">{}{lines_behind}</figure>",
            charts::lines(
                "Resolved within k rounds (95% CI)",
                "round k",
                "resolved",
                &rounds
            )
        ));
    }
    if samples < 2 {
        out.push_str(
            "<p class=\"note\">One sample per instance: pass@1 is the resolved rate. With \
             <code>samples:</code> of 2 or more the report draws pass@k.</p>",
        );
    }
    out
}

/// Under a bar chart: each arm's bar as its count `part` of its
/// results, both linked to their runs.
fn bars_behind(
    s: &Summary,
    part: &str,
    rate: fn(&ArmSummary) -> Option<crate::experiment::stats::Rate>,
) -> String {
    let arms: Vec<String> = s
        .arms
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            rate(a).map(|r| {
                format!(
                    "{}: <a href=\"#{}\">{}</a> of <a href=\"#{}\">{}</a>",
                    escape(&a.arm),
                    behind::anchor(i, part),
                    r.k,
                    behind::anchor(i, "results"),
                    r.n
                )
            })
        })
        .collect();
    format!(
        "<p class=\"from\">Behind the bars: {}.</p>",
        arms.join("; ")
    )
}

/// Under a line chart: the results each arm's line comes from.
fn lines_behind(s: &Summary) -> String {
    let arms: Vec<String> = s
        .arms
        .iter()
        .enumerate()
        .filter(|(_, a)| !is_control(a))
        .map(|(i, a)| {
            format!(
                "<a href=\"#{}\">{}</a>",
                behind::anchor(i, "results"),
                escape(&a.arm)
            )
        })
        .collect();
    format!(
        "<p class=\"from\">From the results of {}.</p>",
        arms.join(", ")
    )
}

fn failures(s: &Summary) -> String {
    if s.failures.is_empty() {
        return String::new();
    }
    let mut rows = vec![["status", "class", "runs", "first run", "its message"]
        .iter()
        .map(|h| h.to_string())
        .collect::<Vec<_>>()];
    rows.extend(s.failures.iter().enumerate().map(|(j, f)| {
        vec![
            escape(&f.status),
            escape(&f.class),
            format!("<a href=\"#failure-{j}\">{}</a>", f.runs),
            format!(
                "<a href=\"{}\">{}</a>",
                run_href(&f.first_key),
                escape(&f.first_key.to_string())
            ),
            escape(&f.first_message),
        ]
    }));
    format!(
        "<h2 id=\"failures\">Failures by class</h2><div class=\"scroll\">{}</div>",
        html_table_raw(&rows, "failures")
    )
}

fn broken(s: &Summary) -> String {
    if s.broken.is_empty() {
        return String::new();
    }
    let items: Vec<String> = s
        .broken
        .iter()
        .enumerate()
        .map(|(i, b)| {
            format!(
                "<li id=\"broken-{i}\"><code>{}</code>: {}<pre>{}</pre></li>",
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
}

/// The page.
pub(super) fn html(
    s: &Summary,
    manifest: &Value,
    runs: &[Run],
    unwritten: &BTreeMap<RunKey, String>,
) -> String {
    let (main, paired) = tables(s);
    let infra = if s.infra_errors.is_empty() {
        "<p>No infrastructure errors.</p>".to_string()
    } else {
        let listed: Vec<String> = s
            .infra_errors
            .iter()
            .map(|(c, n)| {
                // Its runs are listed under the failure class of the same name.
                let j = s
                    .failures
                    .iter()
                    .position(|f| f.status != Status::AgentFail.name() && f.class == *c);
                let n = match j {
                    Some(j) => format!("<a href=\"#failure-{j}\">{n}</a>"),
                    None => n.to_string(),
                };
                format!("<li><code>{}</code>: {n}</li>", escape(c))
            })
            .collect();
        format!(
            "<p><strong>Infrastructure errors</strong> (not results, left out of every rate; \
             rerun to retry them):</p><ul>{}</ul>",
            listed.join("")
        )
    };
    let mpe = mpe_table(s);
    let mpe_html = if mpe.len() > 1 {
        format!(
            "<h2>MPE classes of the runs' own tests</h2>{}<p>From <code>mpe/</code> \
             (<code>critic mpe</code> on the final patches' tests).</p>",
            behind::linked(&mpe, "mpe", |i, col| {
                (col > 0 && mpe[i + 1][col] != "0").then(|| behind::mpe_anchor(i, &mpe[0][col]))
            })
        )
    } else {
        String::new()
    };
    let paired_html = if paired.len() > 1 {
        format!(
            "<h2 id=\"paired-head\">Paired against <code>{}</code></h2>{}",
            escape(s.baseline.as_deref().unwrap_or("?")),
            behind::linked_paired(&paired)
        )
    } else {
        String::new()
    };
    let sha = manifest["tool"]["binary_sha256"].as_str().unwrap_or("?");
    format!(
        r##"<!doctype html>
<html lang="en"><head><meta charset="utf-8">{CSP}<title>{name}: experiment report</title>
<style>{STYLE}</style></head><body>
<h1>{name}</h1>
<nav><a href="#arms">Arms</a><a href="#arm-definitions">What each arm is</a><a href="#charts">Charts</a><a href="#runs-head">Runs</a><a href="#definitions">Definitions</a></nav>
<p>{instances} instances × {arms} arms × {samples} samples; tool {tool}; every count in the
table links to the runs behind it, each run opens from the grid below, and every number is
traceable to <code>results.sqlite</code> and the run directories under <code>runs/</code>.</p>
<div class="scroll">{main}</div>
{definitions}
{infra}
{broken}
{failures}
<h2 id="charts">Charts</h2>
{charts}
{accuracy}
{paired_html}
{mpe_html}
<h2 id="runs-head">Runs by instance and arm</h2>
{grid_key}
{grid}
{behind}
<h2 id="definitions">Definitions</h2>
<p>Resolved: the golden tests (FAIL_TO_PASS and PASS_TO_PASS, by test id) pass on the final
patch. F→P: the run's own test fails on the base and passes on the golden fix. Intervals are 95%
Wilson score intervals. pass@k: the unbiased estimator over each instance's samples (with a 95%
bootstrap interval over instances), averaged over the instances with at least k results (an
infrastructure error is not one). Coupling: P(test not F→P and fix unresolved) / (P(test not
F→P) · P(fix unresolved)); 1 means the two fail independently. Paired: McNemar's exact test on
the (instance, sample) pairs both arms have. Resolved within k rounds: runs resolved whose agent
finished within k rounds. Controls (<code>@gold</code>, <code>@empty</code>) have no agent and
are left out of the pass@k and rounds charts.</p>
</body></html>
"##,
        name = escape(&s.name),
        instances = manifest["instance_ids"].as_array().map_or(0, |a| a.len()),
        arms = manifest["arms"].as_object().map_or(0, |a| a.len()),
        samples = manifest["samples"].as_u64().unwrap_or(1),
        tool = escape(&format!(
            "{} ({})",
            manifest["tool"]["version"].as_str().unwrap_or("?"),
            sha.get(..12).unwrap_or(sha)
        )),
        main = behind::linked_table(&main),
        behind = behind::html(s, runs, run_href),
        failures = failures(s),
        definitions = super::arms::html(&s.arm_definitions, manifest),
        broken = broken(s),
        charts = charts(s),
        accuracy = super::accuracy_table::html(&s.arms, run_href),
        grid_key = GRID_KEY,
        grid = grid(s, manifest, runs, unwritten),
    )
}

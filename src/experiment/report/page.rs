//! `OUT/report.html`: the arms' table, the failures, the charts, the paired
//! comparison, and a grid of every run by instance and arm whose cells open
//! the run's own page. One static file with no script; its only links go to
//! the run pages and anchors beside it.

use super::charts::{self, Bar, Line};
use super::style::mark;
use super::summary::{ArmSummary, Summary};
use super::tables::{mpe_table, tables};
use super::templates::{joined, render, safe, Figure, Span, Table};
use super::{accuracy_table, arms, behind, run_page};
use crate::experiment::db::{Run, RunKey, Status};
use minijinja::context;
use serde::Serialize;
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

/// A run's chip in the grid: its mark, and its page when it was written.
#[derive(Serialize)]
struct Chip {
    class: &'static str,
    symbol: &'static str,
    title: String,
    href: Option<String>,
}

/// An instance's row of the grid: per arm, its runs (`None`: not run).
#[derive(Serialize)]
struct GridRow<'a> {
    instance: &'a str,
    /// Its place among the broken instances, when it is one.
    broken: Option<usize>,
    cells: Vec<Option<Vec<Chip>>>,
}

#[derive(Serialize)]
struct Unwritten {
    key: String,
    why: String,
}

#[derive(Serialize)]
struct Grid<'a> {
    arms: Vec<String>,
    rows: Vec<GridRow<'a>>,
    unwritten: Vec<Unwritten>,
}

/// Every run as a cell of an instance × arm grid, each chip opening the
/// run's page (unless it could not be written: `unwritten`); a broken
/// instance is marked and linked to its log.
fn grid<'a>(
    s: &'a Summary,
    manifest: &'a Value,
    runs: &'a [Run],
    unwritten: &BTreeMap<RunKey, String>,
) -> Grid<'a> {
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
    let chip = |r: &Run| {
        let (class, symbol, words) = mark(r);
        let title = format!("sample {}: {words}, {} round(s)", r.key.sample, r.rounds);
        match unwritten.get(&r.key) {
            None => Chip {
                class,
                symbol,
                title,
                href: Some(run_href(&r.key)),
            },
            Some(why) => Chip {
                class,
                symbol,
                title: format!("{title}; its page could not be written: {why}"),
                href: None,
            },
        }
    };
    let rows = instances
        .into_iter()
        .map(|id| GridRow {
            instance: id,
            broken: s.broken.iter().position(|b| b.instance_id == id),
            cells: arms
                .iter()
                .map(|arm| {
                    cells
                        .get(&(id, arm.as_str()))
                        .map(|runs| runs.iter().map(|r| chip(r)).collect())
                })
                .collect(),
        })
        .collect();
    Grid {
        arms,
        rows,
        unwritten: unwritten
            .iter()
            .map(|(k, why)| Unwritten {
                key: k.to_string(),
                why: why.clone(),
            })
            .collect(),
    }
}

fn is_control(a: &ArmSummary) -> bool {
    a.arm.starts_with('@')
}

/// The charts: resolved and F→P per arm (controls included: they bound
/// the rates), pass@k and resolved within k rounds for the arms with an
/// agent.
fn charts(s: &Summary) -> Vec<Figure> {
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
    let mut out = vec![Figure {
        id: "resolved",
        svg: safe(charts::rate_bars(
            "Resolved (95% CI)",
            &bars(|a| Some(a.resolved)),
        )),
        from: bars_behind(s, "resolved", |a| Some(a.resolved)),
    }];
    let f2p = bars(|a| a.f2p);
    if !f2p.is_empty() {
        out.push(Figure {
            id: "f2p",
            svg: safe(charts::rate_bars(
                "F→P of the runs' own tests (95% CI)",
                &f2p,
            )),
            from: bars_behind(s, "f2p", |a| a.f2p),
        });
    }
    if samples(s) >= 2 {
        let lines: Vec<Line> = agents()
            .map(|(i, a)| Line {
                name: a.arm.clone(),
                colour: i,
                points: a.pass_at_k.clone(),
            })
            .collect();
        out.push(Figure {
            id: "pass-at-k",
            svg: safe(charts::lines(
                "pass@k (95% bootstrap CI)",
                "k samples",
                "pass@k",
                &lines,
            )),
            from: lines_behind(s),
        });
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
        out.push(Figure {
            id: "rounds",
            svg: safe(charts::lines(
                "Resolved within k rounds (95% CI)",
                "round k",
                "resolved",
                &rounds,
            )),
            from: lines_behind(s),
        });
    }
    out
}

/// The most samples an arm has per instance.
fn samples(s: &Summary) -> usize {
    s.arms.iter().map(|a| a.pass_at_k.len()).max().unwrap_or(0)
}

/// Under a bar chart: each arm's bar as its count `part` of its
/// results, both linked to their runs.
fn bars_behind(
    s: &Summary,
    part: &str,
    rate: fn(&ArmSummary) -> Option<crate::experiment::stats::Rate>,
) -> Vec<Span> {
    let arms = s
        .arms
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            rate(a).map(|r| {
                vec![
                    Span::text(format!("{}: ", a.arm)),
                    Span::link(format!("#{}", behind::anchor(i, part)), r.k.to_string()),
                    Span::text(" of "),
                    Span::link(
                        format!("#{}", behind::anchor(i, "results")),
                        r.n.to_string(),
                    ),
                ]
            })
        })
        .collect();
    let mut out = vec![Span::text("Behind the bars: ")];
    out.extend(joined(arms, "; "));
    out.push(Span::text("."));
    out
}

/// Under a line chart: the results each arm's line comes from.
fn lines_behind(s: &Summary) -> Vec<Span> {
    let arms = s
        .arms
        .iter()
        .enumerate()
        .filter(|(_, a)| !is_control(a))
        .map(|(i, a)| {
            vec![Span::link(
                format!("#{}", behind::anchor(i, "results")),
                a.arm.clone(),
            )]
        })
        .collect();
    let mut out = vec![Span::text("From the results of ")];
    out.extend(joined(arms, ", "));
    out.push(Span::text("."));
    out
}

/// The failures by class, each linked to its runs and its first run.
fn failures(s: &Summary) -> Option<Table> {
    if s.failures.is_empty() {
        return None;
    }
    let header = ["status", "class", "runs", "first run", "its message"];
    Some(Table {
        id: "failure-classes".into(),
        header: header.iter().map(|h| h.to_string()).collect(),
        rows: s
            .failures
            .iter()
            .enumerate()
            .map(|(j, f)| {
                vec![
                    Span::text(f.status.clone()),
                    Span::text(f.class.clone()),
                    Span::link(format!("#failure-{j}"), f.runs.to_string()),
                    Span::link(run_href(&f.first_key), f.first_key.to_string()),
                    Span::text(f.first_message.clone()),
                ]
            })
            .collect(),
    })
}

/// An infrastructure error class and its count, linked to its runs.
#[derive(Serialize)]
struct Infra {
    class: String,
    runs: Span,
}

#[derive(Serialize)]
struct Paired {
    baseline: String,
    table: Table,
}

/// The page.
pub(super) fn html(
    s: &Summary,
    manifest: &Value,
    runs: &[Run],
    unwritten: &BTreeMap<RunKey, String>,
) -> Result<String, minijinja::Error> {
    let (main, paired) = tables(s);
    let infra: Vec<Infra> = s
        .infra_errors
        .iter()
        .map(|(c, n)| {
            // Its runs are listed under the failure class of the same name.
            let j = s
                .failures
                .iter()
                .position(|f| f.status != Status::AgentFail.name() && f.class == *c);
            Infra {
                class: c.clone(),
                runs: match j {
                    Some(j) => Span::link(format!("#failure-{j}"), n.to_string()),
                    None => Span::text(n.to_string()),
                },
            }
        })
        .collect();
    let mpe = mpe_table(s);
    let mpe = (mpe.len() > 1).then(|| {
        behind::linked(&mpe, "mpe", |i, col| {
            (col > 0 && mpe[i + 1][col] != "0").then(|| behind::mpe_anchor(i, &mpe[0][col]))
        })
    });
    let paired = (paired.len() > 1).then(|| Paired {
        baseline: s.baseline.clone().unwrap_or_else(|| "?".into()),
        table: behind::linked_paired(&paired),
    });
    let sha = manifest["tool"]["binary_sha256"].as_str().unwrap_or("?");
    render(
        "report.html",
        context! {
            name => &s.name,
            instances => manifest["instance_ids"].as_array().map_or(0, |a| a.len()),
            arm_count => manifest["arms"].as_object().map_or(0, |a| a.len()),
            samples => manifest["samples"].as_u64().unwrap_or(1),
            tool => format!(
                "{} ({})",
                manifest["tool"]["version"].as_str().unwrap_or("?"),
                sha.get(..12).unwrap_or(sha)
            ),
            arms_table => behind::linked_table(&main),
            definitions => arms::rows(&s.arm_definitions),
            settings => arms::settings(manifest),
            infra,
            broken => &s.broken,
            failures => failures(s),
            figures => charts(s),
            one_sample => samples(s) < 2,
            accuracy => accuracy_table::accuracy(&s.arms, run_href),
            paired,
            mpe,
            grid => grid(s, manifest, runs, unwritten),
            behind => behind::sections(s, runs, run_href),
        },
    )
}

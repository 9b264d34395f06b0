//! An experiment's report: `OUT/summary.json`, a self-contained
//! `OUT/report.html` (tables, charts plotters draws as inline SVG, and a
//! grid of every run), a page per run beside its files
//! (`runs/<instance>/<arm>/<sample>/run.html`), or the tables as Markdown.
//! Rates carry 95% Wilson intervals; each arm is compared with a baseline
//! arm on the same (instance, sample) pairs by McNemar's exact test.
//! Infrastructure errors are counted and listed, never folded into a rate.

mod accuracy;
mod arms;
mod behind;
mod charts;
mod page;
mod run_facts;
mod run_page;
mod tables;

pub use run_page::FILE as RUN_PAGE;
pub use tables::markdown;

use crate::experiment::db::{Broken, Db, Run, RunKey, Status};
use crate::experiment::stats::{self, Rate};
use crate::sandbox::beneath::Beneath;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

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
    /// How its critic judged the finishes whose patch was graded (`None`:
    /// none was).
    pub critic: Option<accuracy::CriticAccuracy>,
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
    /// MPE classes of the runs' own tests per arm (`evaluate.mpe`): the
    /// runs of each class, written as their count.
    #[serde(serialize_with = "counts")]
    pub mpe: BTreeMap<String, BTreeMap<String, Vec<RunKey>>>,
    /// What each arm was: skill, gates, overrides, task, role.
    pub arm_definitions: Vec<arms::ArmDefinition>,
}

fn counts<S: serde::Serializer>(
    mpe: &BTreeMap<String, BTreeMap<String, Vec<RunKey>>>,
    to: S,
) -> Result<S::Ok, S::Error> {
    let counts: BTreeMap<&String, BTreeMap<&String, usize>> = mpe
        .iter()
        .map(|(arm, classes)| (arm, classes.iter().map(|(c, k)| (c, k.len())).collect()))
        .collect();
    serde::Serialize::serialize(&counts, to)
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
    /// The same run, to link its page.
    #[serde(skip)]
    pub first_key: RunKey,
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
                first_key: r.key.clone(),
                first_message: r.error.clone().unwrap_or_default(),
            }),
        }
    }
    classes.sort_by(|a, b| (&a.status, &a.class).cmp(&(&b.status, &b.class)));
    classes
}

fn is_result(r: &Run) -> bool {
    r.status.is_result()
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
                critic: None,
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
        arm_definitions: Vec::new(),
    }
}

/// The (instance, sample) pairs both `baseline` and `arm` have a result
/// of: the baseline's run and the arm's.
fn pairs<'a>(runs: &'a [Run], baseline: &str, arm: &str) -> Vec<(&'a Run, &'a Run)> {
    let of = |a: &str| -> BTreeMap<(&str, u32), &Run> {
        runs.iter()
            .filter(|r| r.key.arm == a && is_result(r))
            .map(|r| ((r.key.instance_id.as_str(), r.key.sample), r))
            .collect()
    };
    let this = of(arm);
    of(baseline)
        .into_iter()
        .filter_map(|(k, base)| this.get(&k).map(|run| (base, *run)))
        .collect()
}

fn paired(runs: &[Run], baseline: &str, arm: &str) -> Paired {
    let (mut n, mut b, mut c, mut base_total, mut arm_total) = (0u32, 0u32, 0u32, 0u32, 0u32);
    for (base, this) in pairs(runs, baseline, arm) {
        let (x, y) = (base.resolved == Some(true), this.resolved == Some(true));
        n += 1;
        base_total += u32::from(x);
        arm_total += u32::from(y);
        match (x, y) {
            (true, false) => b += 1,
            (false, true) => c += 1,
            _ => {}
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

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// `--baseline` names no arm.
    #[error("--baseline {baseline}: no such arm (arms: {arms})")]
    NoSuchBaseline {
        /// The name given.
        baseline: String,
        /// The arms there are.
        arms: String,
    },
    /// The results could not be read.
    #[error(transparent)]
    Db(#[from] crate::experiment::db::DbError),
    /// A file could not be written.
    #[error("{path}: {source}")]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Write `summary.json`, `report.html` and the page of each of `runs` into
/// `out`, with their rounds and the broken instances from `db`, each arm
/// compared with `baseline` (default: the first arm). A run whose page
/// cannot be written (something planted where it goes) is named in the
/// report; its numbers still count.
pub fn write(
    out: &Path,
    manifest: &Value,
    runs: &[Run],
    db: &Db,
    baseline: Option<&str>,
) -> Result<Summary, ReportError> {
    let order: Vec<String> = manifest["arms"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    if let Some(b) = baseline {
        if !order.iter().any(|a| a == b) {
            return Err(ReportError::NoSuchBaseline {
                baseline: b.to_string(),
                arms: order.join(", "),
            });
        }
    }
    let rounds = db.rounds()?;
    let name = manifest["name"].as_str().unwrap_or("experiment");
    let mut summary = summarize(name, runs, &order, baseline);
    summary.broken = db.broken()?;
    summary.mpe = crate::experiment::mpe_eval::classes(out, name);
    let definitions = arms::definitions(out, manifest, runs);
    let mut critic = accuracy::of(runs, &rounds);
    for a in &mut summary.arms {
        a.critic = critic.remove(&a.arm);
    }
    let written = |source| ReportError::Write {
        path: out.to_path_buf(),
        source,
    };
    // Each run's files are read, and its page written, with no link
    // followed beneath the output directory.
    let beneath = Beneath::open(out).map_err(written)?;
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let unwritten: BTreeMap<RunKey, String> = crate::sys::parallel::map(runs.len(), workers, |i| {
        let run = &runs[i];
        let rel = crate::experiment::run_dir(Path::new(""), &run.key);
        let files = beneath.dir(&rel).ok();
        let arm = definitions.iter().find(|d| d.arm == run.key.arm);
        let page = run_page::html(
            run,
            arm,
            rounds.get(&run.key).map_or(&[], Vec::as_slice),
            &files,
        );
        // Pages are made again from the results by `critic experiment
        // report`: no need to wait for the disk. Private, as the run's
        // files they show are.
        beneath
            .write_atomic_mode(&rel.join(run_page::FILE), page.as_bytes(), 0o600)
            .err()
            .map(|e| (run.key.clone(), e.to_string()))
    })
    .into_iter()
    .flatten()
    .collect();
    summary.arm_definitions = definitions;
    for (key, why) in &unwritten {
        tracing::warn!("{key}: its page in the report cannot be written: {why}");
    }
    let write = |file: &str, bytes: &[u8]| {
        let path = out.join(file);
        crate::sys::atomic_file::write(&path, bytes, true)
            .map_err(|source| ReportError::Write { path, source })
    };
    write(
        "summary.json",
        &serde_json::to_vec_pretty(&json!(summary)).expect("the summary serializes"),
    )?;
    write(
        "report.html",
        page::html(&summary, manifest, runs, &unwritten).as_bytes(),
    )?;
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
            usage_source: None,
            model_calls: None,
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

    #[test]
    fn a_run_whose_page_cannot_be_written_is_named_and_the_report_still_made() {
        let out = tempfile::tempdir().unwrap();
        let db = Db::open(&out.path().join("results.sqlite")).unwrap();
        let runs = vec![
            run("i0", "base", true, None, 1),
            run("i1", "base", false, None, 1),
        ];
        for r in &runs {
            db.finish(r, &[], None).unwrap();
        }
        // Something of the agent's where the second run's page goes.
        let planted = crate::experiment::run_dir(out.path(), &runs[1].key).join(RUN_PAGE);
        std::fs::create_dir_all(planted.join("inside")).unwrap();
        let manifest = json!({"name": "x", "arms": {"base": {}}, "samples": 1,
            "instance_ids": ["i0", "i1"], "tool": {"version": "t", "binary_sha256": "ab"}});
        let summary = write(out.path(), &manifest, &runs, &db, None).unwrap();
        assert_eq!(summary.arms[0].resolved.k, 1);
        let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
        assert!(html.contains("Pages not written"), "{html}");
        assert!(html.contains("i1 / base / 0"), "{html}");
        assert_eq!(
            html.matches("<a class=\"run ").count(),
            1,
            "only the written page is linked"
        );
        let page = crate::experiment::run_dir(out.path(), &runs[0].key).join(RUN_PAGE);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&page).unwrap().permissions().mode() & 0o777,
            0o600,
            "private, as the files it shows"
        );
        assert!(
            planted.join("inside").is_dir(),
            "what was planted is left alone"
        );
    }
}

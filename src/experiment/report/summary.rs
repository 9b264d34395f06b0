//! An experiment's numbers: each arm's rates with their intervals, each
//! arm paired with the baseline, failure classes and infrastructure errors.

use super::accuracy::CriticAccuracy;
use super::arms::ArmDefinition;
use crate::experiment::db::{Broken, Run, RunKey, Status};
use crate::experiment::stats::{self, Rate};
use serde::Serialize;
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
    /// How its critic judged the finishes whose patch was graded (`None`:
    /// none was).
    pub critic: Option<CriticAccuracy>,
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
    pub arm_definitions: Vec<ArmDefinition>,
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
pub(super) fn pairs<'a>(runs: &'a [Run], baseline: &str, arm: &str) -> Vec<(&'a Run, &'a Run)> {
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

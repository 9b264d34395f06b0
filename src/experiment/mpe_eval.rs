//! `evaluate: {mpe: ...}`: the Mutation Patch Evaluation class of each
//! run's own test, by `critic mpe` itself. The final patches of runs that
//! wrote a test become SWT-bench predictions (`model_name_or_path` =
//! `<experiment>/<arm>/<sample>`; MPE keeps their test files), evaluated
//! into `OUT/mpe/` (resumable, as any `critic mpe` output), and the report
//! shows the classes per arm.

use crate::experiment::db::{Run, RunKey};
use crate::experiment::export::model_name;
use crate::experiment::file::{Experiment, MpeSettings};
use crate::grading::runner::LocalScratch;
use crate::mpe::pool::Source;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the evaluation goes.
pub fn dir(out: &Path) -> PathBuf {
    out.join("mpe")
}

/// Evaluate the tests of `runs` as `settings` say; `Ok(None)` when no run
/// wrote a test.
pub fn evaluate(
    exp: &Experiment,
    settings: &MpeSettings,
    runs: &[Run],
    out: &Path,
    workers: usize,
    confined: bool,
) -> Result<Option<()>, String> {
    let with_tests: Vec<&Run> = runs
        .iter()
        .filter(|r| r.status.is_result() && r.f2p.is_some() && !r.key.arm.starts_with('@'))
        .collect();
    if with_tests.is_empty() {
        return Ok(None);
    }
    let dir = dir(out);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let predictions = dir.join("predictions.jsonl");
    let text: String = with_tests
        .iter()
        .map(|r| {
            json!({
                "instance_id": r.key.instance_id,
                "model_name_or_path": model_name(&exp.name, r),
                "model_patch": r.model_patch,
            })
            .to_string()
                + "\n"
        })
        .collect();
    crate::sys::atomic_file::write(&predictions, text.as_bytes(), true)
        .map_err(|e| format!("{}: {e}", predictions.display()))?;
    let mut only: Vec<String> = with_tests
        .iter()
        .map(|r| r.key.instance_id.clone())
        .collect();
    only.sort();
    only.dedup();
    let llm = match settings.operators {
        Source::Model => {
            let m = exp
                .model
                .as_ref()
                .ok_or("evaluate.mpe.operators is `model` but the experiment has no `model`")?;
            let mut c = crate::host::llm::LlmConfig::new(
                format!("{}/v1", m.base_url.trim_end_matches('/')),
                m.model.clone(),
            );
            if let Some(k) = &m.api_key_env {
                c.api_key_env = k.clone();
            }
            Some(c)
        }
        _ => None,
    };
    let opts = crate::mpe::Options {
        instances: exp.instances.clone(),
        predictions,
        repos: exp.repos.clone(),
        python: exp.python.clone(),
        pool_dir: None,
        output_dir: dir,
        operators: settings.operators,
        samples_per_operator: settings.samples_per_operator,
        max_attempts: settings.samples_per_operator.saturating_mul(2),
        tau: settings.tau,
        only,
        test_timeout: exp.test_timeout,
        seed: exp.seed,
        llm,
        temperature: None,
        max_tokens: None,
    };
    let backends = LocalScratch { workers, confined };
    crate::mpe::run(&opts, &backends, &crate::mpe::Quiet).map_err(|e| e.to_string())?;
    Ok(Some(()))
}

/// The MPE classes in `out`, per arm: class name to its runs.
pub fn classes(out: &Path, experiment: &str) -> BTreeMap<String, BTreeMap<String, Vec<RunKey>>> {
    let mut per_arm: BTreeMap<String, BTreeMap<String, Vec<RunKey>>> = BTreeMap::new();
    let text = std::fs::read_to_string(dir(out).join("results.jsonl")).unwrap_or_default();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let name = v["model_name_or_path"].as_str().unwrap_or_default();
        // `<experiment>/<arm>/<sample>`
        let Some(rest) = name.strip_prefix(&format!("{experiment}/")) else {
            continue;
        };
        let Some((arm, Ok(sample))) = rest.rsplit_once('/').map(|(a, s)| (a, s.parse())) else {
            continue;
        };
        let class = v["class"].as_str().unwrap_or("unknown").to_string();
        per_arm
            .entry(arm.to_string())
            .or_default()
            .entry(class)
            .or_default()
            .push(RunKey {
                instance_id: v["instance_id"].as_str().unwrap_or_default().to_string(),
                arm: arm.to_string(),
                sample,
            });
    }
    per_arm
}

//! Grading predictions made elsewhere (`critic experiment grade
//! --predictions`): what SWE-bench's `run_evaluation` does, with no agent
//! and no arm. Each prediction (`instance_id`, `model_name_or_path`,
//! `model_patch`) is a run of the arm named by its model, sample 0; the
//! instances are pre-flighted, the patches graded, and the same results,
//! predictions and report written as for an experiment. A rerun grades
//! only what is new or changed.

use crate::experiment::db::{Db, Run, RunKey, Status};
use crate::experiment::file::Experiment;
use crate::experiment::{
    export, graders::Graders, layout::run_dir, manifest, options::Environment,
    outcome::ExperimentError, outcome::Finished, outcome::Progress, preflight, report, run_grade,
    session,
};
use crate::grading::dataset;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What to grade, and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// SWE-bench instances (JSONL).
    pub instances: PathBuf,
    /// Predictions (JSONL, SWE-bench's format).
    pub predictions: PathBuf,
    /// Local clones, `<owner>__<name>`.
    pub repos: PathBuf,
    /// The interpreter, unless an instance names its own.
    pub python: Option<PathBuf>,
    /// Where results go.
    pub output_dir: PathBuf,
    /// Runs graded in parallel.
    pub workers: usize,
    /// Each grading test run's limit.
    pub test_timeout: Option<Duration>,
    /// Run the grading tests unconfined.
    pub unconfined_runs: bool,
}

/// The manifest's `kind` for an output of predictions graded.
pub const KIND: &str = "predictions";

/// Grade every prediction of `opts`.
pub fn grade_predictions(
    opts: &Options,
    progress: &dyn Progress,
) -> Result<Finished, ExperimentError> {
    let out = &std::path::absolute(&opts.output_dir)
        .map_err(|e| ExperimentError::Output(format!("{}: {e}", opts.output_dir.display())))?;
    let input = |e: dataset::DatasetError| ExperimentError::Input(e.to_string());
    let all = dataset::read_instances(&opts.instances).map_err(input)?;
    let predictions = dataset::read_predictions(&opts.predictions, &all).map_err(input)?;
    if !opts.repos.is_dir() {
        return Err(ExperimentError::Input(format!(
            "--repos {}: not a directory (it holds clones named <owner>__<name>)",
            opts.repos.display()
        )));
    }
    let repos = std::path::absolute(&opts.repos).unwrap_or_else(|_| opts.repos.clone());
    let mut exp = Experiment::for_grading(
        &opts.instances,
        &repos,
        opts.python.clone(),
        opts.test_timeout,
    );
    // Only the instances some prediction is for.
    exp.filter.ids = Some(
        all.iter()
            .filter(|i| predictions.iter().any(|p| p.instance_id == i.id))
            .map(|i| i.id.clone())
            .collect(),
    );
    crate::sys::interrupt::arm();
    std::fs::create_dir_all(out)
        .map_err(|e| ExperimentError::Output(format!("{}: {e}", out.display())))?;
    let _lock = manifest::lock(out).map_err(ExperimentError::Output)?;
    let instances = crate::experiment::instances::instances(
        &exp,
        Some(out),
        &Environment::Local,
        !opts.unconfined_runs,
    )?;
    let models: Vec<String> = {
        let mut m: Vec<String> = predictions.iter().map(|p| p.generator.clone()).collect();
        m.sort();
        m.dedup();
        m
    };
    let record = json!({
        "name": "grade",
        "kind": KIND,
        "instances": std::path::absolute(&opts.instances).unwrap_or_else(|_| opts.instances.clone()),
        "predictions": std::path::absolute(&opts.predictions).unwrap_or_else(|_| opts.predictions.clone()),
        "repos": repos,
        "python": opts.python,
        "instance_ids": instances.iter().map(|r| r.instance.id.clone()).collect::<Vec<_>>(),
        "arms": models.iter().map(|m| (m.clone(), json!({}))).collect::<serde_json::Map<_, _>>(),
        "samples": 1,
        "tool": {"version": env!("CARGO_PKG_VERSION")},
    });
    manifest::write(out, &record).map_err(ExperimentError::Output)?;
    let db = Db::open(&out.join("results.sqlite"))?;
    let stored: BTreeMap<RunKey, Run> =
        db.runs()?.into_iter().map(|r| (r.key.clone(), r)).collect();
    let key_of = |p: &dataset::Prediction| RunKey {
        instance_id: p.instance_id.clone(),
        arm: p.generator.clone(),
        sample: 0,
    };
    // What is new, changed, or not a result yet.
    let todo: Vec<&dataset::Prediction> = predictions
        .iter()
        .filter(|p| {
            stored
                .get(&key_of(p))
                .is_none_or(|r| !r.status.is_result() || r.model_patch != p.patch)
        })
        .collect();
    let pending: Vec<(RunKey, u32)> = todo.iter().map(|p| (key_of(p), 0)).collect();
    let graders = Graders::new(
        &pending,
        opts.workers,
        opts.unconfined_runs,
        Environment::Local,
        out.join("container-input"),
    );
    let no_tests = run_grade::ArmTests::of(&[], &serde_json::Value::Null);
    let failures: Mutex<Vec<ExperimentError>> = Mutex::new(Vec::new());
    let of: Vec<&str> = todo.iter().map(|p| p.instance_id.as_str()).collect();
    let made = preflight::make(
        &instances,
        &of,
        &graders,
        &db,
        out,
        progress,
        predictions.len(),
        |i| {
            let p = todo[i];
            let key = key_of(p);
            let ready = instances
                .iter()
                .find(|r| r.instance.id == p.instance_id)
                .expect("every prediction's instance is ready");
            let started = Instant::now();
            let dir = run_dir(out, &key);
            let graded = (|| -> Result<run_grade::Graded, String> {
                if dir.exists() {
                    crate::sys::remove_tree::remove_tree(&dir)
                        .map_err(|e| format!("{}: {e}", dir.display()))?;
                }
                std::fs::create_dir_all(dir.join("grade"))
                    .map_err(|e| format!("{}: {e}", dir.display()))?;
                std::fs::write(dir.join("final.patch"), &p.patch)
                    .map_err(|e| format!("{}: {e}", dir.display()))?;
                Ok(graders.grade(ready, &no_tests, &p.patch, &dir))
            })();
            let mut run = Run {
                key: key.clone(),
                status: Status::Ok,
                error_class: None,
                error: None,
                resolved: None,
                f2p: None,
                grade_problem: None,
                finishes: 0,
                rounds: 0,
                budget_exhausted: false,
                outcome_test: None,
                tokens: None,
                cost: None,
                usage_source: None,
                model_calls: None,
                duration_s: 0.0,
                attempts: 1,
                model_patch: p.patch.clone(),
            };
            let generation = session::Generation {
                status: Status::Ok,
                error_class: None,
                error: None,
            };
            match graded {
                Ok(g) => session::apply_grade(&mut run, &generation, &g),
                Err(e) => {
                    run.status = Status::InfraError;
                    run.error_class = Some("output".into());
                    run.error = Some(e);
                }
            }
            run.duration_s = started.elapsed().as_secs_f64();
            if let Err(e) = db.finish(&run, &[], None) {
                failures
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(e.into());
            }
            progress.finished(&run, false);
            graders.done(&key.instance_id);
        },
    )?;
    if let Some(e) = failures
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .pop()
    {
        return Err(e);
    }
    let keys: Vec<RunKey> = predictions.iter().map(key_of).collect();
    let runs: Vec<Run> = db
        .runs()?
        .into_iter()
        .filter(|r| keys.contains(&r.key))
        .collect();
    export::write_predictions_graded(out, &runs).map_err(ExperimentError::Output)?;
    report::write(out, &record, &runs, &db, None)?;
    Ok(Finished {
        total: keys.len(),
        ran: made.made,
        not_started: 0,
        runs,
        mpe_error: None,
        broken: made.broken,
    })
}

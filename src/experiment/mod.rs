//! Experiments (`critic experiment`): arms x instances x samples, each run
//! an agent on a fresh clone with one arm's critic at its finish boundary,
//! then graded apart from its generation; resumable, shardable, with every
//! number traceable to the run directory behind it.
//!
//! `file.rs` reads the experiment file; `arm.rs` makes each arm's skill
//! copy and task prompt; `adapters/` drive the agent one turn at a time;
//! `session.rs` is one run; `grade.rs` its evaluation; `predictions.rs`
//! grades predictions made elsewhere; `db.rs` the results database;
//! `manifest.rs` the record of what was asked; `definition.rs` what
//! defines each run and `rebuild.rs` which runs a rerun reuses, makes and
//! supersedes; and `export.rs` the JSONL files other tools read.

pub mod adapters;
pub mod arm;
pub mod db;
pub mod definition;
pub mod export;
pub mod file;
pub mod finish_grading;
mod graders;
mod instances;
pub mod limits;
pub mod manifest;
pub mod merge;
pub mod model_proxy;
pub mod mpe_eval;
pub mod predictions;
pub mod preflight;
pub mod preflight_cache;
pub mod rebuild;
mod regrade;
pub mod report;
pub mod run_grade;
pub mod session;
pub mod slurm;
pub mod stats;
pub mod usage;
pub mod workspace_clone;

pub(crate) use graders::Graders;
pub use instances::{instances, Ready};
pub use regrade::{regrade, GradeOptions};

use crate::grading::dataset::{self, Instance};
use crate::grading::instance::Prepared;
use crate::grading::runner::{Backend, Backends, LocalScratch};
use db::{Db, Run, RunKey, Status};
use file::Experiment;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What to run, and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// The experiment file.
    pub file: PathBuf,
    /// Where everything goes; a rerun with the same directory resumes.
    pub output_dir: PathBuf,
    /// Runs in parallel.
    pub workers: usize,
    /// Only this part of the runs.
    pub shard: Option<Shard>,
    /// Further attempts for a run that ends in an infrastructure error.
    pub retries: u32,
    /// The `critic` binary the agent's finish calls.
    pub critic: PathBuf,
    /// Only say which runs would be reused, made and superseded.
    pub dry_run: bool,
    /// Grade each finish's judged patch too, not only the final one (the
    /// critic's own accuracy).
    pub grade_finishes: bool,
    /// Run the critic's and the grader's tests unconfined.
    pub unconfined_runs: bool,
    /// Run the agent's turns unconfined (see [`adapters::confined`]).
    pub unconfined_agents: bool,
    /// Control runs graded beside the arms.
    pub controls: Vec<Control>,
    /// Where grading tests run.
    pub env: Environment,
    /// An earlier output directory whose recorded model calls answer this
    /// experiment's (see [`model_proxy::replay`]).
    pub replay: Option<PathBuf>,
    /// Past a replay's first departure, go on against the model.
    pub replay_then_live: bool,
}

/// Where grading tests run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Environment {
    /// Confined scratch copies of the local clone, the instance's Python.
    Local,
    /// A fresh container of the instance's image per run.
    Container(crate::grading::container::Spec),
}

impl Environment {
    /// As the manifest records it.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Environment::Local => serde_json::json!({"kind": "local"}),
            Environment::Container(c) => serde_json::json!({
                "kind": "container", "engine": c.engine, "image": c.image,
                "workdir": c.workdir, "setup": c.setup,
            }),
        }
    }

    /// As `manifest` records it (local when it says nothing).
    pub fn of_manifest(manifest: &serde_json::Value) -> Environment {
        let e = &manifest["environment"];
        if e["kind"] != "container" {
            return Environment::Local;
        }
        let text = |k: &str| e[k].as_str().unwrap_or_default().to_string();
        Environment::Container(crate::grading::container::Spec {
            engine: text("engine"),
            image: text("image"),
            workdir: text("workdir"),
            setup: e["setup"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
        })
    }
}

/// `OUT/plan.json`: the runs the last `critic experiment run` into OUT
/// was to make (what `status` counts against).
pub const PLAN_FILE: &str = "plan.json";

/// A control: a patch graded without any agent, to measure the harness
/// itself (a flaky test shows as a golden patch unresolved, or an empty
/// one resolved). Its runs are stored as the arm `@gold` or `@empty`,
/// names no arm can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// The instance's golden patch.
    Gold,
    /// No change at all.
    Empty,
}

impl Control {
    /// The arm its runs are stored under.
    pub fn arm(self) -> &'static str {
        match self {
            Control::Gold => "@gold",
            Control::Empty => "@empty",
        }
    }

    /// The control stored under `arm`, if it is one.
    pub fn of_arm(arm: &str) -> Option<Control> {
        [Control::Gold, Control::Empty]
            .into_iter()
            .find(|c| c.arm() == arm)
    }
}

/// A deterministic part of the runs: those whose key hashes to `index`
/// modulo `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 0-based.
    pub index: u32,
    /// How many.
    pub count: u32,
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("{s:?}: expected I/N with 0 <= I < N, such as 0/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (i.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// Whether `key` is in this shard.
    pub fn holds(&self, key: &RunKey) -> bool {
        let h = Sha256::digest(format!("{}\0{}\0{}", key.instance_id, key.arm, key.sample));
        let n = u64::from_le_bytes(h[..8].try_into().expect("8 bytes"));
        n % u64::from(self.count) == u64::from(self.index)
    }
}

/// Why an experiment could not run (a run's own failure is a result in the
/// database, not this).
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// The experiment file.
    #[error(transparent)]
    File(#[from] file::FileError),
    /// The instances, their clones or interpreters.
    #[error("{0}")]
    Input(String),
    /// The output directory.
    #[error("{0}")]
    Output(String),
    /// The database.
    #[error(transparent)]
    Db(#[from] db::DbError),
    /// The report.
    #[error(transparent)]
    Report(#[from] report::ReportError),
    /// A skill's detector failed on a benign finish before any run.
    #[error(
        "a skill's detector fails on a benign finish (the instance's base, no change), so no \
         agent ran; fix the skill or its environment:\n{0}"
    )]
    SkillPreflight(String),
}

/// What the caller shows while runs go.
pub trait Progress: Sync {
    /// What a rerun reuses, makes and supersedes, one line per arm and
    /// reason (see [`rebuild::plan`]).
    fn plan(&self, _lines: &[String]) {}
    /// `pending` of `total` runs are to be made; `broken` others are not,
    /// their instance being broken; `checking` instances' pre-flights are
    /// still to run, beside the runs.
    fn start(&self, total: usize, pending: usize, broken: usize, checking: usize);
    /// A pre-flight found `broken`: `runs` of the runs to make are not made.
    fn broken(&self, broken: &db::Broken, runs: usize);
    /// A run ended (`retrying`: an infrastructure error that is tried again).
    fn finished(&self, run: &Run, retrying: bool);
}

/// Shows nothing.
pub struct Quiet;

impl Progress for Quiet {
    fn start(&self, _: usize, _: usize, _: usize, _: usize) {}
    fn broken(&self, _: &db::Broken, _: usize) {}
    fn finished(&self, _: &Run, _: bool) {}
}

/// What a call of [`run`] did.
#[derive(Debug)]
pub struct Finished {
    /// Runs of this shard.
    pub total: usize,
    /// Runs made now (retries not counted twice).
    pub ran: usize,
    /// Runs not started because the experiment's cost cap was reached.
    pub not_started: usize,
    /// Why `evaluate.mpe` could not class the runs' tests, if it could not.
    pub mpe_error: Option<String>,
    /// Every run of this shard as stored, in key order.
    pub runs: Vec<Run>,
    /// Instances whose golden patch did not resolve them: their runs were
    /// not made.
    pub broken: Vec<db::Broken>,
}

impl Finished {
    /// Runs that are not results: infrastructure errors, replays that diverged.
    pub fn errors(&self) -> Vec<&Run> {
        self.runs.iter().filter(|r| !r.status.is_result()).collect()
    }
}

/// Run the experiment of `opts`; runs already finished (`ok`,
/// `agent_fail`) are kept, missing and `infra_error` ones are made.
pub fn run(opts: &Options, progress: &dyn Progress) -> Result<Finished, ExperimentError> {
    // The agent runs in its workspace: every path it is given is absolute.
    let output_dir = std::path::absolute(&opts.output_dir)
        .map_err(|e| ExperimentError::Output(format!("{}: {e}", opts.output_dir.display())))?;
    let opts = &Options {
        output_dir,
        ..opts.clone()
    };
    // An output directory this call made and nothing was run into (bad
    // input, a dry run) is not left behind. A skill refused on its
    // pre-flight leaves its evidence there.
    let fresh = std::fs::symlink_metadata(&opts.output_dir).is_err();
    let made = make(opts, progress);
    let refused = matches!(made, Err(ExperimentError::Input(_)));
    let holds_results = opts.output_dir.join("results.sqlite").exists();
    if fresh && !holds_results && (refused || opts.dry_run) {
        let _ = crate::sys::remove_tree::remove_tree(&opts.output_dir);
    }
    made
}

/// [`run`], with the output directory absolute.
fn make(opts: &Options, progress: &dyn Progress) -> Result<Finished, ExperimentError> {
    let exp = file::load(&opts.file)?;
    if !opts.unconfined_agents {
        confinable()?;
    }
    let instances = instances(
        &exp,
        Some(&opts.output_dir),
        &opts.env,
        !opts.unconfined_runs,
    )?;
    // Agents and workspaces must not outlive an interrupted experiment.
    crate::sys::interrupt::arm();
    crate::sys::interrupt::on_interrupt_say(format!(
        "experiment: interrupted; every run that finished is kept in {} (results.sqlite, runs/); \
         run the same command again to go on: runs cut short start over",
        opts.output_dir.display()
    ));
    let out = &opts.output_dir;
    std::fs::create_dir_all(out)
        .map_err(|e| ExperimentError::Output(format!("{}: {e}", out.display())))?;
    let _lock = manifest::lock(out).map_err(ExperimentError::Output)?;
    // The skill copies are made aside and take the place of the old ones
    // only once the manifest is accepted: a refused rerun changes nothing.
    let staging = out.join(format!(".arms-{}", std::process::id()));
    let staged: Result<Vec<arm::Prepared>, String> = exp
        .arms
        .iter()
        .map(|a| arm::prepare(a, &staging.join(&a.name).join("skill")))
        .collect();
    let mut arms = match staged.and_then(|arms| {
        // Every arm's config as its detectors read it, before anything runs.
        let runtime = crate::detector::wasm::Runtime::new(
            crate::detector::wasm::cache::default_dir().as_deref(),
        )
        .map_err(|e| e.to_string())?;
        let mut problems = Vec::new();
        for a in &arms {
            problems.extend(arm::config_problems(a, &exp.path, &runtime)?);
        }
        if problems.is_empty() {
            Ok(arms)
        } else {
            Err(problems.join("\n"))
        }
    }) {
        Ok(a) => a,
        Err(e) => {
            let _ = crate::sys::remove_tree::remove_tree(&staging);
            return Err(ExperimentError::Input(e));
        }
    };
    let ids: Vec<&str> = instances.iter().map(|r| r.instance.id.as_str()).collect();
    let mut record = manifest::of(&exp, &ids, &arms, opts.shard, &opts.critic);
    record["environment"] = opts.env.to_json();
    let mut keys = Vec::new();
    for ready in &instances {
        let inst = &ready.instance;
        for a in &arms {
            for sample in 0..exp.samples {
                let key = RunKey {
                    instance_id: inst.id.clone(),
                    arm: a.name.clone(),
                    sample,
                };
                if opts.shard.is_none_or(|s| s.holds(&key)) {
                    keys.push(key);
                }
            }
        }
        for control in &opts.controls {
            for sample in 0..exp.samples {
                let key = RunKey {
                    instance_id: inst.id.clone(),
                    arm: control.arm().to_string(),
                    sample,
                };
                if opts.shard.is_none_or(|s| s.holds(&key)) {
                    keys.push(key);
                }
            }
        }
    }
    // What defines each run: a rerun reuses a finished run only while its
    // definition is unchanged.
    let environment = opts.env.to_json();
    let definitions: HashMap<RunKey, String> = keys
        .iter()
        .map(|key| {
            let ready = instances
                .iter()
                .find(|r| r.instance.id == key.instance_id)
                .expect("keys are of the instances");
            let arm = arms.iter().find(|a| a.name == key.arm);
            let def = definition::of(
                &exp,
                &ready.instance,
                &ready.python,
                arm,
                &key.arm,
                key.sample,
                &environment,
            );
            (key.clone(), definition::text(&def))
        })
        .collect();
    let wanted: Vec<(RunKey, String)> = keys
        .iter()
        .map(|k| (k.clone(), definitions[k].clone()))
        .collect();
    let db_path = out.join("results.sqlite");
    let db = if opts.dry_run && !db_path.exists() {
        None
    } else {
        Some(Db::open(&db_path)?)
    };
    let same_manifest = std::fs::read(out.join(manifest::FILE))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|old| old == record);
    let rebuilt = rebuild::plan(db.as_ref(), &wanted, same_manifest, opts.replay_then_live)?;
    progress.plan(&rebuilt.lines);
    if opts.dry_run {
        let _ = crate::sys::remove_tree::remove_tree(&staging);
        return Ok(Finished {
            total: keys.len(),
            ran: 0,
            not_started: 0,
            mpe_error: None,
            runs: Vec::new(),
            broken: Vec::new(),
        });
    }
    let db = db.expect("a run opens the database");
    if let Err(e) = manifest::write(out, &record) {
        let _ = crate::sys::remove_tree::remove_tree(&staging);
        return Err(ExperimentError::Output(e));
    }
    let arms_dir = out.join("arms");
    let placed = (|| -> std::io::Result<()> {
        if std::fs::symlink_metadata(&arms_dir).is_ok() {
            crate::sys::remove_tree::remove_tree(&arms_dir)?;
        }
        std::fs::rename(&staging, &arms_dir)
    })();
    placed.map_err(|e| ExperimentError::Output(format!("{}: {e}", arms_dir.display())))?;
    for a in &mut arms {
        a.skill = arms_dir.join(&a.name).join("skill");
    }
    rebuild::apply(&rebuilt, &db, out, |k| run_dir(out, k)).map_err(ExperimentError::Output)?;
    let plan = serde_json::to_vec(&keys).expect("keys serialize");
    crate::sys::atomic_file::write(&out.join(PLAN_FILE), &plan, true)
        .map_err(|e| ExperimentError::Output(format!("{}: {e}", out.join(PLAN_FILE).display())))?;
    let pending = rebuilt.make;
    let work_dir = out.join("work");
    let check_flags: Vec<String> = opts
        .unconfined_runs
        .then(|| "--unconfined-runs".to_string())
        .into_iter()
        .collect();
    // The global cost cap: what stored runs cost, then each model call as
    // the proxy counts it (or each run as it ends, where no proxy counted).
    let spending = Arc::new(model_proxy::Spending {
        cap: exp.budget.total_cost,
        spent: Mutex::new(db.runs()?.iter().filter_map(|r| r.cost).sum()),
    });
    let ctx = session::Context {
        experiment: &exp,
        critic: &opts.critic,
        check_flags: &check_flags,
        work_dir: &work_dir,
        out,
        confine_agents: !opts.unconfined_agents,
        spending: spending.clone(),
        replay: opts.replay.as_deref(),
        replay_then_live: opts.replay_then_live,
    };
    skill_preflight(&ctx, &instances, &arms, &pending, out)?;
    let graders = Graders::new(
        &pending,
        opts.workers,
        opts.unconfined_runs,
        opts.env.clone(),
        out.join("container-input"),
    );
    let failures: Mutex<Vec<ExperimentError>> = Mutex::new(Vec::new());
    let cost = &spending.spent;
    let not_started = std::sync::atomic::AtomicUsize::new(0);
    // An instance's agents start once its golden patch resolved it; one
    // that does not is a broken instance, whose runs are not made.
    let of: Vec<&str> = pending
        .iter()
        .map(|(k, _)| k.instance_id.as_str())
        .collect();
    let made = preflight::make(
        &instances,
        &of,
        &graders,
        &db,
        out,
        progress,
        keys.len(),
        |i| {
            let (key, before) = &pending[i];
            if let Some(cap) = exp.budget.total_cost {
                if *cost.lock().unwrap_or_else(|p| p.into_inner()) >= cap {
                    not_started.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    graders.done(&key.instance_id);
                    return;
                }
            }
            let ready = instances
                .iter()
                .find(|r| r.instance.id == key.instance_id)
                .expect("pending runs are of the instances");
            let (inst, repo, python) = (&ready.instance, &ready.repo, &ready.python);
            let control = Control::of_arm(&key.arm);
            let arm = arms.iter().find(|a| a.name == key.arm);
            let own = match arm {
                Some(a) => run_grade::ArmTests::of(&a.test_patterns, &a.config),
                None => run_grade::ArmTests::of(&[], &serde_json::Value::Null),
            };
            let grader = |patch: &str, dir: &Path| graders.grade(ready, &own, patch, dir);
            // A finish's patch is graded on the golden tests alone.
            let no_own = run_grade::ArmTests::of(&[], &serde_json::Value::Null);
            let finish_grader = |patch: &str, dir: &Path| graders.grade(ready, &no_own, patch, dir);
            let finishes: Option<&run_grade::Grader> =
                opts.grade_finishes.then_some(&finish_grader);
            for attempt in before + 1..=before.saturating_add(1).saturating_add(opts.retries) {
                let dir = run_dir(out, key);
                let (run, rounds) = match (control, arm) {
                    (Some(control), _) => {
                        session::control(key, inst, control, &dir, attempt, &grader)
                    }
                    (None, Some(arm)) => {
                        let job = session::Job {
                            key: key.clone(),
                            instance: inst,
                            arm,
                            dir,
                            python: python.clone(),
                            repo: repo.clone(),
                            copy: ready.prepared.repo.clone(),
                            base: ready.base.clone(),
                            attempt,
                        };
                        session::run(&ctx, &job, &grader, finishes)
                    }
                    (None, None) => unreachable!("every run is of an arm or a control"),
                };
                if run.usage_source.as_deref() != Some("proxy") {
                    *cost.lock().unwrap_or_else(|p| p.into_inner()) += run.cost.unwrap_or(0.0);
                }
                if let Err(e) = db.finish(&run, &rounds, Some(&definitions[key])) {
                    failures
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(e.into());
                    break;
                }
                let retrying = run.status == Status::InfraError
                    && attempt <= before.saturating_add(opts.retries);
                progress.finished(&run, retrying);
                if !retrying {
                    break;
                }
            }
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
    let runs: Vec<Run> = db
        .runs()?
        .into_iter()
        .filter(|r| keys.contains(&r.key))
        .collect();
    export::write(out, &exp.name, &runs).map_err(ExperimentError::Output)?;
    // MPE's own failures are reported, not fatal: the runs stand.
    let mpe_error = exp.evaluate_mpe.as_ref().and_then(|settings| {
        mpe_eval::evaluate(
            &exp,
            settings,
            &runs,
            out,
            opts.workers,
            !opts.unconfined_runs,
        )
        .err()
    });
    report::write(out, &record, &db.runs()?, &db, None)?;
    let not_started = not_started.into_inner();
    Ok(Finished {
        total: keys.len(),
        ran: made.made - not_started,
        not_started,
        runs,
        mpe_error,
        broken: made.broken,
    })
}

/// `OUT/manifest.json`.
fn read_manifest(out: &Path) -> Result<serde_json::Value, ExperimentError> {
    let path = out.join(manifest::FILE);
    std::fs::read(&path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
        .map_err(|e| {
            ExperimentError::Output(format!(
                "{}: {e} (is {} an experiment's output directory?)",
                path.display(),
                out.display()
            ))
        })
}

/// Write `OUT/summary.json` and `OUT/report.html` from what `out` holds,
/// each arm compared with `baseline` (default: the first arm).
pub fn report(out: &Path, baseline: Option<&str>) -> Result<report::Summary, ExperimentError> {
    let manifest = read_manifest(out)?;
    let db = Db::open(&out.join("results.sqlite"))?;
    Ok(report::write(out, &manifest, &db.runs()?, &db, baseline)?)
}

/// Each arm's skill checked on a benign finish in each environment its
/// pending runs use (see [`session::benign_finish`]), before any agent
/// runs: a detector that fails there is reported with every other that
/// does, and nothing runs.
fn skill_preflight(
    ctx: &session::Context,
    instances: &[Ready],
    arms: &[arm::Prepared],
    pending: &[(RunKey, u32)],
    out: &Path,
) -> Result<(), ExperimentError> {
    let mut pairs: Vec<(&arm::Prepared, &Ready)> = Vec::new();
    for (key, _) in pending {
        let (Some(arm), Some(ready)) = (
            arms.iter().find(|a| a.name == key.arm),
            instances.iter().find(|r| r.instance.id == key.instance_id),
        ) else {
            continue;
        };
        if !pairs
            .iter()
            .any(|(a, r)| a.name == arm.name && r.python == ready.python)
        {
            pairs.push((arm, ready));
        }
    }
    let failed: Vec<String> = crate::sys::parallel::map(pairs.len(), 2, |i| {
        let (arm, ready) = pairs[i];
        let key = RunKey {
            instance_id: ready.instance.id.clone(),
            arm: arm.name.clone(),
            sample: 0,
        };
        let job = session::Job {
            dir: run_dir(&out.join("preflight/skills"), &key),
            key,
            instance: &ready.instance,
            arm,
            python: ready.python.clone(),
            repo: ready.repo.clone(),
            copy: ready.prepared.repo.clone(),
            base: ready.base.clone(),
            attempt: 1,
        };
        session::benign_finish(ctx, &job).err().map(|e| {
            format!(
                "arm {} on {} ({}): {e} (see {})",
                arm.name,
                ready.instance.id,
                ready.python.display(),
                job.dir.display()
            )
        })
    })
    .into_iter()
    .flatten()
    .collect();
    if failed.is_empty() {
        return Ok(());
    }
    Err(ExperimentError::SkillPreflight(failed.join("\n")))
}

/// Whether this machine can confine `exp`'s agent, before anything runs.
fn confinable() -> Result<(), ExperimentError> {
    if let Some(missing) = crate::sandbox::confine::support().missing() {
        return Err(ExperimentError::Input(format!(
            "agents' turns run confined, and this machine lacks {missing} (see `critic doctor`); \
             pass --unconfined-agents to run them with your full privileges"
        )));
    }
    Ok(())
}

/// `OUT/runs/<instance>/<arm>/<sample>` (an arm that is a model's name,
/// `org/model`, kept as one component).
pub fn run_dir(out: &Path, key: &RunKey) -> PathBuf {
    out.join("runs")
        .join(crate::sys::path_name::slug(&key.instance_id))
        .join(crate::sys::path_name::slug(&key.arm))
        .join(key.sample.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_runs() {
        let keys: Vec<RunKey> = (0..200)
            .map(|i| RunKey {
                instance_id: format!("o__r-{i}"),
                arm: ["a", "b"][i % 2].into(),
                sample: (i % 3) as u32,
            })
            .collect();
        let shards: Vec<Shard> = (0..3).map(|i| format!("{i}/3").parse().unwrap()).collect();
        for k in &keys {
            assert_eq!(shards.iter().filter(|s| s.holds(k)).count(), 1, "{k}");
        }
        let sizes: Vec<usize> = shards
            .iter()
            .map(|s| keys.iter().filter(|k| s.holds(k)).count())
            .collect();
        assert!(sizes.iter().all(|&n| n > 40), "{sizes:?}");
        for bad in ["3/3", "1", "a/2", "0/0", "-1/2"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }
}

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
mod layout;
pub mod limits;
pub mod manifest;
pub mod merge;
pub mod model_proxy;
pub mod mpe_eval;
mod options;
mod outcome;
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
pub use layout::{run_dir, PLAN_FILE};
pub use options::{Control, Environment, Options, Shard};
pub use outcome::{ExperimentError, Finished, Progress, Quiet};
pub use regrade::{regrade, GradeOptions};

use db::{Db, Run, RunKey, Status};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

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

/// Write `OUT/summary.json` and `OUT/report.html` from what `out` holds,
/// each arm compared with `baseline` (default: the first arm).
pub fn report(out: &Path, baseline: Option<&str>) -> Result<report::Summary, ExperimentError> {
    let manifest = manifest::read(out)?;
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

//! `critic experiment grade`: an output directory's final patches graded
//! again, without running any agent.

use super::db::{Db, Run, RunKey};
use super::graders::Graders;
use super::layout::run_dir;
use super::options::{Control, Environment};
use super::outcome::{ExperimentError, Finished, Progress};
use super::{
    export, file, instances, manifest, predictions, preflight, report, run_grade, session,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

/// How `critic experiment grade` grades again.
#[derive(Debug, Clone)]
pub struct GradeOptions {
    /// The output directory of a run.
    pub output_dir: PathBuf,
    /// Runs graded in parallel.
    pub workers: usize,
    /// Run the grading tests unconfined.
    pub unconfined_runs: bool,
}
/// Grade every run of an output directory again from its saved final
/// patch, without running any agent: for a fixed grader, or runs whose
/// grading failed. Runs that never produced a patch are left as they are.
pub fn regrade(opts: &GradeOptions, progress: &dyn Progress) -> Result<Finished, ExperimentError> {
    let out = &std::path::absolute(&opts.output_dir)
        .map_err(|e| ExperimentError::Output(format!("{}: {e}", opts.output_dir.display())))?;
    let manifest_path = out.join(manifest::FILE);
    let manifest = manifest::read(out)?;
    if manifest["kind"] == predictions::KIND {
        return Err(ExperimentError::Input(format!(
            "{}: this output holds predictions graded with `critic experiment grade \
             --predictions`; give it its --predictions, --instances and --repos again to grade \
             them (changed ones are graded again)",
            out.display()
        )));
    }
    // JSON is YAML: the manifest's resolved file is read as the file was.
    let exp = file::parse(&manifest["experiment"].to_string(), &manifest_path)?;
    crate::sys::interrupt::arm();
    let _lock = manifest::lock(out).map_err(ExperimentError::Output)?;
    let environment = Environment::of_manifest(&manifest);
    let instances = instances(&exp, Some(out), &environment, !opts.unconfined_runs)?;
    let db = Db::open(&out.join("results.sqlite"))?;
    let mut tests = BTreeMap::new();
    for a in &exp.arms {
        let skill = crate::skill::load(&out.join("arms").join(&a.name).join("skill"))
            .map_err(|e| ExperimentError::Output(e.to_string()))?;
        let config = skill
            .manifest
            .signals
            .first()
            .map(|s| s.config.clone())
            .unwrap_or_default();
        tests.insert(
            a.name.clone(),
            run_grade::ArmTests::of(&skill.manifest.test_patterns, &config),
        );
    }
    // A control's patch has no test of its own.
    let no_tests = run_grade::ArmTests::of(&[], &serde_json::Value::Null);
    let runs: Vec<Run> = db
        .runs()?
        .into_iter()
        .filter(|r| {
            run_dir(out, &r.key)
                .join(session::GENERATION_FILE)
                .is_file()
        })
        .collect();
    let pending: Vec<(RunKey, u32)> = runs.iter().map(|r| (r.key.clone(), 0)).collect();
    let graders = Graders::new(
        &pending,
        opts.workers,
        opts.unconfined_runs,
        environment.clone(),
        out.join("container-input"),
    );
    // A broken instance's runs keep their grades: nothing can grade them.
    let failures: Mutex<Vec<ExperimentError>> = Mutex::new(Vec::new());
    // What was graded again: a run whose instance or arm the file no longer
    // has is passed over, not counted.
    let regraded = std::sync::atomic::AtomicUsize::new(0);
    let of: Vec<&str> = runs.iter().map(|r| r.key.instance_id.as_str()).collect();
    let made = preflight::make(
        &instances,
        &of,
        &graders,
        &db,
        out,
        progress,
        runs.len(),
        |i| {
            let mut run = runs[i].clone();
            let dir = run_dir(out, &run.key);
            let ready = instances
                .iter()
                .find(|r| r.instance.id == run.key.instance_id);
            let own = tests
                .get(&run.key.arm)
                .or_else(|| Control::of_arm(&run.key.arm).map(|_| &no_tests));
            let (Some(ready), Some(own)) = (ready, own) else {
                graders.done(&run.key.instance_id);
                return;
            };
            let generation: Option<session::Generation> =
                std::fs::read(dir.join(session::GENERATION_FILE))
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok());
            if let Some(generation) = generation {
                let graded = graders.grade(ready, own, &run.model_patch, &dir);
                session::apply_grade(&mut run, &generation, &graded);
                if let Err(e) = db.regrade(&run) {
                    failures
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(e.into());
                }
                progress.finished(&run, false);
                regraded.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            graders.done(&run.key.instance_id);
        },
    )?;
    if let Some(e) = failures
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .pop()
    {
        return Err(e);
    }
    let all = db.runs()?;
    export::write(out, &exp.name, &all).map_err(ExperimentError::Output)?;
    report::write(out, &manifest, &all, &db, None)?;
    Ok(Finished {
        total: all.len(),
        ran: regraded.into_inner(),
        not_started: 0,
        runs: all,
        mpe_error: None,
        broken: made.broken,
    })
}

//! The experiment's instances made ready: each record's repository copied
//! for the grader at its base, its environment built, its golden fix and
//! tests read.

use super::file::{self, Experiment};
use super::options::Environment;
use super::outcome::ExperimentError;
use crate::grading::dataset::{self, Instance};
use crate::grading::instance::Prepared;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// An instance ready to run: its record, clone, interpreter and grading
/// preparation.
pub struct Ready {
    /// The record, with what the experiment's `environments` give it.
    pub instance: Instance,
    /// The user's clone (workspaces are cloned from it).
    pub repo: PathBuf,
    /// The commit runs start from and patches are taken against: the base
    /// commit, or the environment commit an install made on top of it.
    pub base: String,
    /// Its interpreter.
    pub python: PathBuf,
    /// Its golden fix and tests, read from the grader's copy.
    pub prepared: Arc<Prepared>,
}
/// The instances of `exp` after its filter, each made ready; every problem
/// found, each naming its record and field. With an output directory
/// `out`, each gets its environment, built once in critic's cache and its
/// lock kept under `OUT/envs` (see [`crate::grading::environment`]), and its base commit copied into the
/// grader's own copy under `OUT/repos` (see
/// [`crate::grading::private_copy`]); without one (a check before
/// submitting), nothing is built or copied. Interpreters are asked
/// whether they import pytest as runs start them: confined when
/// `confined`.
pub fn instances(
    exp: &Experiment,
    out: Option<&Path>,
    env: &Environment,
    confined: bool,
) -> Result<Vec<Ready>, ExperimentError> {
    let mut all = dataset::read_instances(&exp.instances)
        .map_err(|e| ExperimentError::Input(e.to_string()))?;
    if let Some(ids) = &exp.filter.ids {
        let unknown: Vec<&str> = ids
            .iter()
            .filter(|id| !all.iter().any(|i| &i.id == *id))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            return Err(ExperimentError::Input(format!(
                "{}: filter.ids: {} not in {}",
                exp.path.display(),
                unknown.join(", "),
                exp.instances.display()
            )));
        }
        all.retain(|i| ids.contains(&i.id));
    }
    let (start, end) = exp.filter.slice;
    let end = end.unwrap_or(all.len()).min(all.len());
    let start = start.unwrap_or(0).min(end);
    let mut problems = Vec::new();
    let mut ready = Vec::new();
    let mut checked = crate::grading::interpreter::Checked::new(confined);
    let mut copies = std::collections::BTreeSet::new();
    for inst in all.drain(start..end) {
        let inst = exp.with_environment(inst);
        match one_instance(exp, inst, out, env, &mut checked) {
            Ok(r) => {
                if let Some(out) = out {
                    copies.insert(crate::grading::private_copy::dir(
                        &out.join("repos"),
                        &r.instance.repo,
                    ));
                }
                ready.push(r);
            }
            Err(e) => problems.push(e),
        }
    }
    for copy in &copies {
        if let Err(e) = crate::grading::private_copy::verify(copy) {
            problems.push(e);
        }
    }
    if !problems.is_empty() {
        return Err(ExperimentError::Input(problems.join("\n")));
    }
    Ok(ready)
}
/// One instance made ready (see [`instances`]).
pub(super) fn one_instance(
    exp: &Experiment,
    inst: Instance,
    out: Option<&Path>,
    env: &Environment,
    checked: &mut crate::grading::interpreter::Checked,
) -> Result<Ready, String> {
    use crate::grading::{environment, private_copy};
    let repo = crate::grading::clone_dir(&exp.repos, &inst.repo);
    if !repo.join(".git").exists() && !repo.join("HEAD").is_file() {
        return Err(format!(
            "{}: field `repo`: no clone of {} at {} (clones are <owner>__<name> under `repos`)",
            inst.place,
            inst.repo,
            repo.display()
        ));
    }
    // A record with SWE-bench's fields alone gets SWE-bench's environment.
    let mut inst = inst;
    let swebench = crate::grading::swebench_specs::fill(&mut inst, &repo)?;
    let mut spec = environment::Spec::of(&inst);
    let mut base_python = exp
        .environment_of(&inst)
        .and_then(|e| e.python.clone())
        .or_else(|| exp.python.clone());
    if let Some(swebench) = swebench {
        swebench.apply(&inst, &mut spec, &mut base_python)?;
    }
    let python = match (&inst.python, spec.builds(), out) {
        (Some(own), _, _) => own.clone(),
        (None, true, Some(out)) => environment::python_for(
            &inst,
            &spec,
            &base_python.unwrap_or_else(|| PathBuf::from("python3")),
            &environment::cache_root().unwrap_or_else(|| out.join("envs")),
            &out.join("envs"),
        )?,
        // Checked, not built: the interpreter it would be built from.
        (None, true, None) => base_python.unwrap_or_else(|| PathBuf::from("python3")),
        // Nothing named and nothing to build: the `python3` on PATH.
        (None, false, _) => base_python
            .or_else(|| file::on_path("python3"))
            .ok_or_else(|| {
                format!(
                    "{}: no interpreter, and no `python3` on PATH: give the record a `python` \
                     field, or `python:` in the experiment file ({}), or `--python` to \
                     `critic experiment grade --predictions`",
                    inst.place,
                    exp.path.display()
                )
            })?,
    };
    // The grader's copy, and the install's commit on top of the base.
    let (graded_repo, base) = match out {
        Some(out) => {
            let copy = private_copy::dir(&out.join("repos"), &inst.repo);
            let base = private_copy::fetch(&repo, &inst.base_commit, &copy)
                .map_err(|e| format!("{}: field `base_commit`: {e}", inst.place))?;
            let base = if !spec.install.is_empty() && *env == Environment::Local {
                environment::install(&inst, &spec, &python, &copy, &base, &repo)?
            } else {
                base
            };
            (copy, base)
        }
        None => (repo.clone(), inst.base_commit.clone()),
    };
    // Grading runs the tests through pytest when their log is pytest's: an
    // interpreter without it would make every run an infrastructure error
    // after its agent ran.
    let format = inst
        .log_parser
        .as_deref()
        .and_then(crate::grading::log_parsers::LogFormat::of_name)
        .unwrap_or_else(|| crate::grading::log_parsers::LogFormat::for_repo(&inst.repo));
    if *env == Environment::Local && format.is_pytest() && !(spec.builds() && out.is_none()) {
        checked
            .pytest(&python)
            .map_err(|e| format!("{}: {e}", inst.place))?;
    }
    // In a container, tests run with the image's own interpreter.
    let grading_python = match env {
        Environment::Local => python.clone(),
        Environment::Container(_) => PathBuf::from("python"),
    };
    let prepared = Prepared::at(
        &inst,
        &graded_repo,
        &base,
        &grading_python,
        exp.test_timeout,
    )?;
    Ok(Ready {
        base: prepared.base.clone(),
        instance: inst,
        repo,
        python,
        prepared: Arc::new(prepared),
    })
}

//! Grading a run's final patch, apart from generating it: the golden tests
//! (`test_patch`) run on the patch and judged per test id, as SWE-bench
//! does (`resolved`), and for arms that write a test, that test's
//! fail-to-pass on the base and on the golden fix. Test runs go through the
//! MPE runner's back end (confined scratch copies) and `mpe::instance`'s
//! preparation; each run's raw output is kept beside the run.

use crate::experiment::db::F2p;
use crate::grading::instance::{Prepared, TestSet};
use crate::grading::pytest::{judge_ids, RunRecord};
use crate::grading::runner::Backend;
use crate::workspace::TestClassifier;
use critic_sdk::reproduction::{BugExit, Outcome};
use critic_sdk::{RunRequest, RunResult};
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;

/// A grade.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Graded {
    /// The golden tests pass on the patch.
    pub resolved: Option<bool>,
    /// Fail-to-pass of the patch's own test.
    pub f2p: Option<F2p>,
    /// Why grading could not say (not a result).
    pub infra: Option<String>,
}

/// How an arm's own test is found and run.
pub struct ArmTests {
    /// Which files of a patch are tests.
    pub classifier: TestClassifier,
    /// The arm's test command (its config's `test_command`), `python3`
    /// meaning the experiment's interpreter; `None`: the instance's
    /// pytest command on the test modules.
    pub command: Option<Vec<String>>,
}

impl ArmTests {
    /// The tests of an arm whose skill has `patterns` and whose signal has
    /// `config` (its `test_command`, if any).
    pub fn of(patterns: &[String], config: &serde_json::Value) -> ArmTests {
        ArmTests {
            classifier: TestClassifier::new(patterns)
                .expect("the skill loaded, so its patterns compile"),
            command: config.get("test_command").and_then(|v| {
                v.as_array().map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect()
                })
            }),
        }
    }
}

/// Top-level names a patch may not add or change: Python imports them from
/// the repository (it is on the path) in place of the test runner's own, or
/// runs them at start (`sitecustomize`), so they could report any result.
const SHADOWING: &[&str] = &[
    "pytest.py",
    "pytest",
    "_pytest",
    "py.py",
    "pluggy",
    "sitecustomize.py",
    "usercustomize.py",
];

/// The first path of `patch` that would stand in for the test runner.
pub fn shadows_the_runner(patch: &str) -> Option<String> {
    critic_sdk::diff::parse(patch)
        .ok()?
        .into_iter()
        .map(|f| f.path)
        .find(|p| {
            let top = p.split('/').next().unwrap_or_default();
            SHADOWING.contains(&top)
        })
}

/// Grade `patch` on `prepared`, running on `backend`; raw outputs go to
/// `logs` (`golden.json`, `own-on-base.json`, `own-on-golden.json`).
pub fn grade(
    prepared: &Prepared,
    backend: &dyn Backend,
    patch: &str,
    own: &ArmTests,
    python: &Path,
    logs: &Path,
) -> Graded {
    if let Some(path) = shadows_the_runner(patch) {
        let _ = std::fs::write(
            logs.join("refused.txt"),
            format!("{path}: the patch would stand in for the test runner; not run, unresolved\n"),
        );
        return Graded {
            resolved: Some(false),
            f2p: None,
            infra: None,
        };
    }
    let mut requests = vec![on_patch(prepared, patch)];
    let own_test = match own_test(prepared, patch, own) {
        Ok(t) => t,
        Err(e) => {
            return Graded {
                infra: Some(format!("the final patch: {e}")),
                ..Graded::default()
            }
        }
    };
    if let Some(tests) = &own_test {
        let argv = own_command(prepared, own, tests, python);
        for code in [BTreeMap::new(), prepared.golden_files.clone()] {
            let mut files: BTreeMap<String, Option<String>> =
                code.into_iter().map(|(p, t)| (p, Some(t))).collect();
            files.extend(
                tests
                    .files
                    .iter()
                    .map(|(p, t)| (p.clone(), Some(t.clone()))),
            );
            requests.push(RunRequest {
                patch: None,
                files,
                argv: argv.clone(),
                ..requests[0].clone()
            });
        }
    }
    let results = backend.run_all(&requests);
    let names = ["golden", "own-on-base", "own-on-golden"];
    for ((name, request), result) in names.iter().zip(&requests).zip(&results) {
        let _ = std::fs::write(
            logs.join(format!("{name}.json")),
            serde_json::to_vec_pretty(&json!({"argv": request.argv, "result": result}))
                .unwrap_or_default(),
        );
    }
    let mut graded = Graded::default();
    let golden = &results[0];
    match &golden.error {
        // The patch is the agent's: one that does not apply resolves nothing.
        Some(e) if e.contains("does not apply") || e.contains("not a valid diff") => {
            graded.resolved = Some(false)
        }
        Some(e) => {
            graded.infra = Some(format!("the golden tests could not run: {e}"));
            return graded;
        }
        // pytest itself missing is the harness's failure, not the patch's.
        None if matches!(
            Outcome::of(golden, BugExit::Nonzero, &[]),
            Outcome::NotRun(_)
        ) =>
        {
            let Outcome::NotRun(why) = Outcome::of(golden, BugExit::Nonzero, &[]) else {
                unreachable!("matched above")
            };
            graded.infra = Some(format!("the golden tests could not run: {why}"));
            return graded;
        }
        None => {
            let record = RunRecord::of(golden);
            graded.resolved = Some(judge_ids(&record, &prepared.golden_ids).passed());
        }
    }
    if let (Some(tests), [_, base, fixed]) = (&own_test, results.as_slice()) {
        let files: Vec<&str> = tests.files.keys().map(String::as_str).collect();
        let judge = |r: &RunResult| Outcome::of(r, BugExit::Nonzero, &files);
        let (on_base, on_golden) = (judge(base), judge(fixed));
        for o in [&on_base, &on_golden] {
            if let Outcome::NotRun(why) = o {
                graded.infra = Some(format!("the patch's own test could not run: {why}"));
                return graded;
            }
        }
        graded.f2p = Some(F2p {
            fails_on_base: on_base == Outcome::BugDetected,
            passes_on_golden: on_golden == Outcome::Pass,
        });
    }
    graded
}

/// The golden tests on the base with `patch` applied; the golden test
/// files are written over whatever the patch did to them.
fn on_patch(prepared: &Prepared, patch: &str) -> RunRequest {
    let mut request = prepared.request(&BTreeMap::new(), &prepared.golden_tests);
    request.patch = Some(patch.to_string());
    request
}

/// The patch's own test files (content after the patch), if it has any.
fn own_test(prepared: &Prepared, patch: &str, own: &ArmTests) -> Result<Option<TestSet>, String> {
    if patch.trim().is_empty() {
        return Ok(None);
    }
    let (tests, _) = prepared.test_set(patch, |p| own.classifier.is_test(p))?;
    Ok((!tests.files.is_empty()).then_some(tests))
}

/// The command that runs the patch's own test.
fn own_command(prepared: &Prepared, own: &ArmTests, tests: &TestSet, python: &Path) -> Vec<String> {
    match &own.command {
        Some(argv) => argv
            .iter()
            .enumerate()
            .flat_map(|(i, a)| {
                if i == 0 && matches!(a.as_str(), "python" | "python3") {
                    vec![python.to_string_lossy().into_owned()]
                } else if a == "{test_files}" {
                    tests.files.keys().cloned().collect()
                } else {
                    vec![a.clone()]
                }
            })
            .collect(),
        None => {
            let mut argv = prepared.command.clone();
            argv.extend(tests.targets.iter().cloned());
            argv
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_that_would_stand_in_for_pytest_is_found() {
        let diff = |path: &str| {
            format!("diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x\n")
        };
        for p in [
            "pytest.py",
            "_pytest/main.py",
            "sitecustomize.py",
            "pluggy/__init__.py",
        ] {
            assert_eq!(shadows_the_runner(&diff(p)).as_deref(), Some(p));
        }
        for p in [
            "src/_pytest/main.py",
            "tests/pytest.py",
            "mypkg/sitecustomize.py",
        ] {
            assert_eq!(shadows_the_runner(&diff(p)), None, "{p}");
        }
    }
}

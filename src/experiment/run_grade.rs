//! Grading a run's final patch, apart from generating it: whether it
//! resolves the instance, as SWE-bench decides it (`grading::grade`), and
//! for arms that write a test, that test's fail-to-pass on the base and on
//! the golden fix. Test runs go through grading's back end (confined
//! scratch copies or containers); each run's raw output is kept beside the
//! run.

use crate::experiment::db::F2p;
use crate::grading::grade::Resolution;
use crate::grading::instance::{Prepared, TestSet};
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
    /// Why the patch's grading run could not be believed, when it could
    /// not (it then resolves nothing).
    pub problem: Option<String>,
}

/// What grades a patch, writing its evidence into a directory.
/// Shared by the threads that grade finishes while the agent goes on.
pub type Grader<'a> = dyn Fn(&str, &Path) -> Graded + Sync + 'a;

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

/// Grade `patch` on `prepared`, running on `backend`; raw outputs go to
/// `logs` (`golden.json` with the grade of every id, `own-on-base.json`,
/// `own-on-golden.json`).
pub fn grade(
    prepared: &Prepared,
    backend: &dyn Backend,
    patch: &str,
    own: &ArmTests,
    python: &Path,
    logs: &Path,
) -> Graded {
    let own_test = match own_test(prepared, patch, own) {
        Ok(t) => t,
        // The patch is the agent's: one that cannot be read resolves nothing.
        Err(e) => {
            return Graded {
                resolved: Some(false),
                problem: Some(format!(
                    "the final patch is not a diff grading can read: {e}"
                )),
                ..Graded::default()
            }
        }
    };
    let own_requests: Vec<RunRequest> = own_test
        .iter()
        .flat_map(|tests| {
            let argv = own_command(prepared, own, tests, python);
            [BTreeMap::new(), prepared.golden_files.clone()]
                .into_iter()
                .map(move |code| {
                    let mut request = prepared.request(&code, tests);
                    request.argv = argv.clone();
                    request
                })
        })
        .collect();
    let ((resolution, ran), own_results) = std::thread::scope(|s| {
        let own = s.spawn(|| backend.run_all(&own_requests));
        let golden = crate::grading::grade::resolve(prepared, backend, patch);
        (golden, own.join().unwrap_or_default())
    });
    // After the agent's turns, in the run's directory: through nothing
    // planted there.
    let _ = crate::sys::atomic_file::write(
        &logs.join("golden.json"),
        &serde_json::to_vec_pretty(
            &json!({"argv": ran.request.argv, "result": ran.result, "grade": resolution}),
        )
        .unwrap_or_default(),
        false,
    );
    for ((name, request), result) in ["own-on-base", "own-on-golden"]
        .iter()
        .zip(&own_requests)
        .zip(&own_results)
    {
        let _ = crate::sys::atomic_file::write(
            &logs.join(format!("{name}.json")),
            &serde_json::to_vec_pretty(&json!({"argv": request.argv, "result": result}))
                .unwrap_or_default(),
            false,
        );
    }
    let Resolution {
        resolved,
        problem,
        infra,
        ..
    } = resolution;
    if infra.is_some() {
        return Graded {
            infra,
            ..Graded::default()
        };
    }
    let mut graded = Graded {
        resolved,
        problem,
        ..Graded::default()
    };
    if let (Some(tests), [base, fixed]) = (&own_test, own_results.as_slice()) {
        for r in [base, fixed] {
            if let Some(e) = r
                .error
                .as_deref()
                .filter(|e| crate::grading::grade::is_harness_failure(e))
            {
                graded.infra = Some(format!("the patch's own test could not run: {e}"));
                return graded;
            }
        }
        let files: Vec<&str> = tests.files.keys().map(String::as_str).collect();
        let judge = |r: &RunResult| Outcome::of(r, BugExit::Nonzero, &files);
        // A test that does not run (or cannot even be written into a copy)
        // detects nothing: the agent's test, not the harness, which the
        // golden run shows works.
        graded.f2p = Some(F2p {
            fails_on_base: judge(base) == Outcome::BugDetected,
            passes_on_golden: judge(fixed) == Outcome::Pass,
        });
    }
    graded
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
        None => prepared.command.argv_for(&tests.targets),
    }
}

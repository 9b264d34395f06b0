//! One test run as MPE judges it: the command (pytest with `-rA`, so every
//! test's outcome is in the short summary), the summary read into a status
//! per test id, and the two ways a run is judged: a generated test by the
//! tests of its files, the golden tests by the ids `FAIL_TO_PASS` and
//! `PASS_TO_PASS` name, as SWE-bench grades them.

use critic_sdk::RunResult;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The default test command before the test files: `{python}` is the
/// interpreter.
pub const DEFAULT_COMMAND: &[&str] = &["{python}", "-m", "pytest", "-rA", "-p", "no:cacheprovider"];

/// How many characters of a run's output a record keeps, to say why.
const TAIL_CHARS: usize = 1500;

/// One test's outcome in pytest's short summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// `PASSED`.
    Passed,
    /// `FAILED`.
    Failed,
    /// `ERROR` of one test (setup or teardown).
    Error,
    /// `SKIPPED`.
    Skipped,
    /// `XFAIL`.
    Xfail,
    /// `XPASS`.
    Xpass,
}

/// What a run left that judging needs: kept (not the whole output) in the
/// run cache.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Exit code, when the command exited.
    pub exit_code: Option<i32>,
    /// Killed at its time limit.
    pub timed_out: bool,
    /// Why the command could not run at all.
    pub error: Option<String>,
    /// The status of each test id in the summary.
    pub tests: BTreeMap<String, Status>,
    /// Files that failed to collect (`ERROR path` without a test name).
    pub collection_errors: Vec<String>,
    /// The end of the output.
    pub tail: String,
    /// Wall time, milliseconds.
    pub duration_ms: f64,
}

impl RunRecord {
    /// Read `run`'s output.
    pub fn of(run: &RunResult) -> RunRecord {
        let (tests, collection_errors) = summary(&run.stdout);
        RunRecord {
            exit_code: run.exit_code,
            timed_out: run.timed_out,
            error: run.error.clone(),
            tests,
            collection_errors,
            tail: critic_sdk::reproduction::tail(run, TAIL_CHARS),
            duration_ms: run.duration_ms,
        }
    }

    /// Whether a test module failed to import (pytest stops with exit
    /// status 2 after collection errors).
    pub fn imports_failed(&self) -> bool {
        !self.collection_errors.is_empty()
            || (self.exit_code == Some(2) && self.tail.contains("errors during collection"))
    }

    /// What the summary says against the exit status, if anything: a test
    /// that prints summary lines of its own, or ends the process itself,
    /// cannot make a failed run look passed.
    fn contradiction(&self) -> Option<String> {
        let failed = self
            .tests
            .values()
            .any(|s| matches!(s, Status::Failed | Status::Error));
        match self.exit_code {
            Some(0) if failed => Some("the summary reports failures but pytest exited 0".into()),
            Some(1) if !failed => {
                Some("pytest exited 1 (tests failed) but the summary reports none".into())
            }
            _ => None,
        }
    }

    /// Why the run says nothing about the code under test, if it does not:
    /// it could not start, timed out, its tests did not import, none ran.
    pub fn harness_error(&self) -> Option<String> {
        if let Some(e) = &self.error {
            return Some(format!("the run could not start: {e}"));
        }
        if self.timed_out {
            return Some("the run timed out".into());
        }
        if self.imports_failed() {
            let files = if self.collection_errors.is_empty() {
                "a test module".to_string()
            } else {
                self.collection_errors.join(", ")
            };
            // pytest marks the exception's own line with `E `.
            let why = self
                .tail
                .lines()
                .find_map(|l| l.strip_prefix("E ").map(str::trim))
                .unwrap_or_else(|| last_line(&self.tail));
            return Some(format!("{files} did not import: {why}"));
        }
        match self.exit_code {
            Some(5) => Some("no test was collected".into()),
            Some(3) => Some(format!(
                "pytest failed internally: {}",
                last_line(&self.tail)
            )),
            Some(4) => Some(format!(
                "pytest rejected its command line: {}",
                last_line(&self.tail)
            )),
            Some(0 | 1) if self.tests.is_empty() => Some(format!(
                "the output has no test summary (is the command pytest with -rA?): {}",
                last_line(&self.tail)
            )),
            Some(0 | 1) => self.contradiction(),
            Some(code) => Some(format!(
                "the test command exited {code}: {}",
                last_line(&self.tail)
            )),
            None => Some("the test command was killed by a signal".into()),
        }
    }
}

fn last_line(text: &str) -> &str {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

/// A run judged: passed, failed (with the tests that did), or said nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Judged {
    /// Every test judged passed.
    Pass,
    /// At least one failed.
    Fail {
        /// The ids that failed (or are missing).
        failed: Vec<String>,
    },
    /// The run cannot be judged; why.
    HarnessError {
        /// Why.
        reason: String,
    },
}

impl Judged {
    /// Whether it passed.
    pub fn passed(&self) -> bool {
        matches!(self, Judged::Pass)
    }
}

/// A generated test judged by every test of its files: pass when at least one
/// ran and none failed.
pub fn judge_files(run: &RunRecord) -> Judged {
    if let Some(reason) = run.harness_error() {
        return Judged::HarnessError { reason };
    }
    let failed: Vec<String> = run
        .tests
        .iter()
        .filter(|(_, s)| matches!(s, Status::Failed | Status::Error))
        .map(|(id, _)| id.clone())
        .collect();
    if failed.is_empty() {
        Judged::Pass
    } else {
        Judged::Fail { failed }
    }
}

/// The golden tests judged by id, as SWE-bench does: an id fails when it is
/// missing from the summary or `FAILED`/`ERROR`; `PASSED`, `XFAIL`,
/// `XPASS` and `SKIPPED` do not fail it.
pub fn judge_ids(run: &RunRecord, ids: &[String]) -> Judged {
    if let Some(e) = &run.error {
        return Judged::HarnessError {
            reason: format!("the run could not start: {e}"),
        };
    }
    if run.timed_out {
        return Judged::HarnessError {
            reason: "the run timed out".into(),
        };
    }
    if run.tests.is_empty() {
        return Judged::HarnessError {
            reason: run
                .harness_error()
                .unwrap_or_else(|| "no test was reported".into()),
        };
    }
    if let Some(reason) = run.contradiction() {
        return Judged::HarnessError { reason };
    }
    let failed: Vec<String> = ids
        .iter()
        .filter(|id| {
            run.tests
                .get(id.as_str())
                .is_none_or(|s| matches!(s, Status::Failed | Status::Error))
        })
        .cloned()
        .collect();
    if failed.is_empty() {
        Judged::Pass
    } else {
        Judged::Fail { failed }
    }
}

/// The statuses in pytest's `-rA` short test summary, and the files whose
/// collection failed. Lines outside the summary are ignored, so a test that
/// prints `PASSED x` cannot forge an outcome before the summary starts.
pub fn summary(output: &str) -> (BTreeMap<String, Status>, Vec<String>) {
    let mut tests = BTreeMap::new();
    let mut collection = Vec::new();
    // The last summary header: output a test prints comes before it.
    let start = output
        .rfind("short test summary info")
        .map(|i| output[i..].find('\n').map_or(output.len(), |n| i + n + 1))
        .unwrap_or(output.len());
    // The summary ends at pytest's closing `=== ... ===` line; what a test
    // prints after it (from an atexit handler) is not part of it.
    for line in output[start..].lines().take_while(|l| !l.starts_with('=')) {
        let Some((word, rest)) = line.split_once(' ') else {
            continue;
        };
        let status = match word {
            "PASSED" => Status::Passed,
            "FAILED" => Status::Failed,
            "ERROR" => Status::Error,
            "SKIPPED" => Status::Skipped,
            "XFAIL" => Status::Xfail,
            "XPASS" => Status::Xpass,
            _ => continue,
        };
        if status == Status::Skipped {
            // `SKIPPED [1] path:line: reason` names no test id.
            continue;
        }
        let id = test_id(rest);
        if id.is_empty() {
            continue;
        }
        if status == Status::Error && !id.contains("::") {
            collection.push(id.to_string());
            continue;
        }
        // A test reported twice (a failure, then an error at teardown) keeps
        // the failing status.
        let failing = |s: &Status| matches!(s, Status::Failed | Status::Error);
        let entry = tests.entry(id.to_string()).or_insert(status);
        if failing(&status) {
            *entry = status;
        }
    }
    (tests, collection)
}

/// The id at the start of a summary line's rest: up to ` - ` (the message),
/// after any `[...]` parameters, which may themselves hold ` - `.
fn test_id(rest: &str) -> &str {
    let rest = rest.trim_end();
    let params_end = match (rest.find("::"), rest.find('[')) {
        // Parameters follow the name at once; a `[` in the message is not one.
        (Some(c), Some(b)) if b > c && !rest[..b].contains(" - ") => rest
            .rfind("] - ")
            .map(|i| i + 1)
            .or_else(|| rest.ends_with(']').then_some(rest.len())),
        _ => None,
    };
    match params_end {
        Some(end) => &rest[..end],
        None => rest.split(" - ").next().unwrap_or(rest).trim(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "\
============================= test session starts ==============================
tests/test_a.py .F
PASSED tests/test_a.py::test_printed_early
=========================== short test summary info ============================
PASSED tests/test_a.py::test_one
PASSED tests/test_a.py::test_param[a - b]
FAILED tests/test_a.py::test_two - AssertionError: assert 1 == 2
FAILED tests/test_a.py::test_param[x] - ValueError: no
XFAIL tests/test_a.py::test_known - reason: later
SKIPPED [1] tests/test_a.py:40: needs numpy
ERROR tests/test_b.py::test_setup - RuntimeError
========================= 2 failed, 2 passed in 0.10s ==========================
";

    #[test]
    fn the_summary_gives_a_status_per_id() {
        let (tests, collection) = summary(OUTPUT);
        assert!(collection.is_empty());
        assert_eq!(tests.len(), 6, "{tests:?}");
        assert_eq!(tests["tests/test_a.py::test_one"], Status::Passed);
        assert_eq!(tests["tests/test_a.py::test_param[a - b]"], Status::Passed);
        assert_eq!(tests["tests/test_a.py::test_two"], Status::Failed);
        assert_eq!(tests["tests/test_a.py::test_param[x]"], Status::Failed);
        assert_eq!(tests["tests/test_a.py::test_known"], Status::Xfail);
        assert_eq!(tests["tests/test_b.py::test_setup"], Status::Error);
        // Printed by a test before the summary: not an outcome.
        assert!(!tests.contains_key("tests/test_a.py::test_printed_early"));
    }

    fn record(output: &str, exit: i32) -> RunRecord {
        RunRecord::of(&RunResult {
            exit_code: Some(exit),
            stdout: output.into(),
            ..RunResult::default()
        })
    }

    #[test]
    fn lines_printed_after_the_summary_or_against_the_exit_status_forge_nothing() {
        // An atexit handler prints a pass after pytest's closing line.
        let forged = "\
=========================== short test summary info ============================
FAILED tests/test_gen.py::test_bug - AssertionError
============================== 1 failed in 0.05s ===============================
PASSED tests/test_gen.py::test_bug
";
        let run = record(forged, 1);
        assert_eq!(run.tests["tests/test_gen.py::test_bug"], Status::Failed);
        assert!(!judge_files(&run).passed());
        // A summary of passes from a run that exited 1 is not believed.
        let fake = "\
=========================== short test summary info ============================
PASSED tests/test_gen.py::test_bug
============================== 1 passed in 0.05s ===============================
";
        assert!(matches!(
            judge_files(&record(fake, 1)),
            Judged::HarnessError { .. }
        ));
        let ids = vec!["tests/test_gen.py::test_bug".to_string()];
        assert!(matches!(
            judge_ids(&record(fake, 1), &ids),
            Judged::HarnessError { .. }
        ));
        assert_eq!(judge_ids(&record(fake, 0), &ids), Judged::Pass);
        // A failure reported again as a pass keeps failing.
        let twice = "\
=========================== short test summary info ============================
FAILED tests/test_gen.py::test_bug - AssertionError
PASSED tests/test_gen.py::test_bug
============================== 1 failed in 0.05s ===============================
";
        assert_eq!(
            record(twice, 1).tests["tests/test_gen.py::test_bug"],
            Status::Failed
        );
    }

    #[test]
    fn a_bracket_in_the_message_is_not_a_parameter() {
        assert_eq!(test_id("t.py::test_k - see [GH-1]"), "t.py::test_k");
        assert_eq!(
            test_id("t.py::test_k[1-2] - see [GH-1]"),
            "t.py::test_k[1-2]"
        );
    }

    #[test]
    fn golden_tests_are_judged_by_id() {
        let run = record(OUTPUT, 1);
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            judge_ids(
                &run,
                &ids(&["tests/test_a.py::test_one", "tests/test_a.py::test_known"])
            ),
            Judged::Pass
        );
        assert_eq!(
            judge_ids(
                &run,
                &ids(&[
                    "tests/test_a.py::test_one",
                    "tests/test_a.py::test_gone",
                    "tests/test_a.py::test_two"
                ])
            ),
            Judged::Fail {
                failed: ids(&["tests/test_a.py::test_gone", "tests/test_a.py::test_two"])
            }
        );
        // A generated test is judged by all of its tests.
        assert!(matches!(judge_files(&run), Judged::Fail { failed } if failed.len() == 3));
    }

    #[test]
    fn runs_that_say_nothing_are_harness_errors() {
        let collection = "\
==================================== ERRORS ====================================
E   ImportError: cannot import name 'merge' from 'pkg'
=========================== short test summary info ============================
ERROR tests/test_gen.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
";
        let j = judge_files(&record(collection, 2));
        assert!(
            matches!(&j, Judged::HarnessError { reason } if reason == "tests/test_gen.py did not import: ImportError: cannot import name 'merge' from 'pkg'"),
            "{j:?}"
        );
        let j = judge_files(&record("collected 0 items\n", 5));
        assert_eq!(
            j,
            Judged::HarnessError {
                reason: "no test was collected".into()
            }
        );
        let timed_out = RunRecord::of(&RunResult {
            timed_out: true,
            ..RunResult::default()
        });
        assert!(matches!(
            judge_files(&timed_out),
            Judged::HarnessError { .. }
        ));
        assert!(matches!(
            judge_ids(&timed_out, &[]),
            Judged::HarnessError { .. }
        ));
        let passed = "=== short test summary info ===\nPASSED t.py::test_x\n";
        assert_eq!(judge_files(&record(passed, 0)), Judged::Pass);
    }
}

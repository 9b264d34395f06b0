//! One test run as grading keeps it (in the run cache too): its exit, its
//! status map as SWE-bench reads it, pytest's own report, and why its
//! output cannot be believed, if it cannot; and the two ways a run is
//! judged: the golden tests by the ids `FAIL_TO_PASS` and `PASS_TO_PASS`
//! name, under SWE-bench's rules, and a generated test by all the tests of
//! its files.
//!
//! The status map is the format's SWE-bench parser's reading of the output
//! (the runner forces a plain `-rA` summary, so it reads as SWE-bench's
//! harness reads its own logs), checked against pytest's report: every
//! status the text gives must be the report's, every test the report has
//! must be in it (a summary cut short is completed from the report), and a
//! test whose subtests failed fails. A text that contradicts the report, a
//! report that contradicts the exit status, or an exit status SWE-bench
//! would not believe makes the run's output untrustworthy: a `problem`.

use crate::grading::log_parsers::LogFormat;
use crate::grading::pytest_report::{self, Outcome, Report};
use crate::grading::status::{self, EvalType, IdGrade, Status, StatusMap};
use critic_sdk::RunResult;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// How many characters of a run's output a record keeps, to say why.
const TAIL_CHARS: usize = 1500;

/// What a run left that judging needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Exit code, when the command exited.
    pub exit_code: Option<i32>,
    /// Killed at its time limit.
    pub timed_out: bool,
    /// Why the command could not run at all.
    pub error: Option<String>,
    /// The status map, as SWE-bench's parser reads the log, checked and
    /// completed from pytest's report.
    pub statuses: StatusMap,
    /// For a map id that stands for a test of another name (cut at its
    /// first space), that test's whole id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub whole_ids: BTreeMap<String, String>,
    /// pytest's report, when pytest ran.
    pub report: Option<Report>,
    /// Why the run's own account cannot be believed, when it cannot:
    /// pytest's report is missing, or disagrees with the exit status.
    pub problem: Option<String>,
    /// Where the log's summary contradicts pytest's report (a line printed
    /// by the code under test): the log cannot be graded as SWE-bench
    /// grades it, though the report still says what ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contradiction: Option<String>,
    /// Statuses the text gives for ids pytest's report has no test of: an
    /// inner session's summary as pytester prints it (pytest's own tests),
    /// or a line the code under test printed. They stay in the map, as in
    /// SWE-bench's, and make the run unbelievable only when a graded id is
    /// found as one of them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unbacked: BTreeMap<String, Status>,
    /// What the report corrected in, or added to, the text's reading.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The end of the output.
    pub tail: String,
    /// Wall time, milliseconds.
    pub duration_ms: f64,
}

/// The SWE-bench status a summary category prints as (`XPASS` and a
/// skip's `SKIPPED [n] path:line` line name no test id a parser keeps).
fn printed(o: Outcome) -> Option<Status> {
    match o {
        Outcome::Passed => Some(Status::Passed),
        Outcome::Xfailed => Some(Status::Xfail),
        Outcome::Error => Some(Status::Error),
        Outcome::Failed => Some(Status::Failed),
        Outcome::Skipped | Outcome::Xpassed => None,
    }
}

impl RunRecord {
    /// Read `run`'s output, whose log is in `format`.
    pub fn of(run: &RunResult, format: LogFormat) -> RunRecord {
        // pytest reports on stdout (stderr holds its report for grading);
        // Django's and SymPy's runners write to both, as unittest writes its
        // results to stderr, and SWE-bench's eval log holds both.
        let text = if format.is_pytest() {
            format.parse(&run.stdout)
        } else {
            format.parse(&format!("{}\n{}", run.stdout, run.stderr))
        };
        let mut record = RunRecord {
            exit_code: run.exit_code,
            timed_out: run.timed_out,
            error: run.error.clone(),
            statuses: StatusMap::new(),
            whole_ids: BTreeMap::new(),
            report: None,
            problem: None,
            contradiction: None,
            unbacked: BTreeMap::new(),
            notes: Vec::new(),
            tail: critic_sdk::reproduction::tail(run, TAIL_CHARS),
            duration_ms: run.duration_ms,
        };
        if run.error.is_some() || run.timed_out {
            record.statuses = text;
            return record;
        }
        if format.is_pytest() {
            match pytest_report::read(&run.stderr) {
                Ok(Some(report)) => {
                    record.reconcile(format, text, &report);
                    record.report = Some(report);
                }
                Ok(None) => {
                    record.statuses = text;
                    record.problem = Some(format!(
                        "pytest's report is missing: the run ended before pytest finished \
                         (exit {}): {}",
                        exit_text(run.exit_code),
                        last_line(&record.tail)
                    ));
                }
                Err(e) => {
                    record.statuses = text;
                    record.problem = Some(e);
                }
            }
        } else {
            record.statuses = text;
        }
        if record.problem.is_none() {
            record.problem = record.unbelievable_exit();
        }
        record
    }

    /// Check the text's map against `report` and keep the map both give.
    fn reconcile(&mut self, format: LogFormat, text: StatusMap, report: &Report) {
        // What the report says each map id should be: the line pytest's
        // `-rA` summary prints for each test, in its order (a later line
        // overwrites an earlier one of the same id).
        let mut expected = StatusMap::new();
        let mut backing: HashMap<String, Vec<Status>> = HashMap::new();
        let mut whole: HashMap<String, &str> = HashMap::new();
        for category in [
            Outcome::Passed,
            Outcome::Skipped,
            Outcome::Xfailed,
            Outcome::Error,
            Outcome::Failed,
        ] {
            if category == Outcome::Error {
                for path in &report.collection_errors {
                    let key = format.key_of(path, Status::Error);
                    expected.insert(key.clone(), Status::Error);
                    backing.entry(key).or_default().push(Status::Error);
                }
            }
            for t in report
                .tests
                .iter()
                .filter(|t| t.outcomes.contains(&category))
            {
                let status = match printed(category) {
                    Some(s) => s,
                    // Only verbose `<id> SKIPPED` lines name a skipped test.
                    None => {
                        let key = format.key_of(&t.id, Status::Skipped);
                        backing.entry(key).or_default().push(Status::Skipped);
                        continue;
                    }
                };
                let key = format.key_of(&t.id, status);
                if key != t.id {
                    whole.insert(key.clone(), &t.id);
                }
                backing.entry(key.clone()).or_default().push(status);
                // parse_log_pytest_v2 keeps what follows an XFAIL's or an
                // ERROR's id (its reason, its message) in the key, which the
                // report does not know: such a line is checked, not expected.
                let keyed_by_message = format == LogFormat::PytestV2
                    && matches!(category, Outcome::Xfailed | Outcome::Error);
                if !keyed_by_message {
                    expected.insert(key, status);
                }
            }
        }
        // A test whose subtests failed fails, whatever its own line says.
        for t in report.tests.iter().filter(|t| t.failed_subtests > 0) {
            if !t.outcomes.iter().any(|o| o.failing()) {
                // The key of its own `PASSED` line.
                let key = format.key_of(&t.id, Status::Passed);
                backing.entry(key.clone()).or_default().push(Status::Failed);
                expected.insert(key, Status::Failed);
                self.notes.push(format!(
                    "{}: {} subtest(s) failed, so the test fails though its own line says it \
                     passed",
                    t.id, t.failed_subtests
                ));
            }
        }
        // Every status the text gives must be one the report gives.
        let mut contradictions = Vec::new();
        for (key, &said) in &text {
            match expected.get(key) {
                Some(&e) => {
                    let agrees = e == said
                        || (said == Status::Passed && subtests_failed(report, format, key))
                        || backing.get(key).is_some_and(|b| b.contains(&said))
                            && format == LogFormat::PytestV2;
                    if !agrees {
                        contradictions.push(format!(
                            "`{key}` {} (report: {})",
                            said.word(),
                            e.word()
                        ));
                    }
                }
                None => {
                    // The report's test the line names: its key, or (v2)
                    // the id before a message.
                    let test = if backing.contains_key(key) {
                        Some(key.as_str())
                    } else if format == LogFormat::PytestV2 {
                        key.split_once(" - ")
                            .map(|(id, _)| id)
                            .filter(|id| backing.contains_key(*id))
                    } else {
                        None
                    };
                    match test.map(|t| &backing[t]) {
                        Some(statuses) if statuses.contains(&said) => {}
                        Some(statuses) => {
                            let words: Vec<&str> = statuses.iter().map(|s| s.word()).collect();
                            contradictions.push(format!(
                                "`{key}` {} (report: {})",
                                said.word(),
                                words.join("/")
                            ));
                        }
                        None => {
                            self.unbacked.insert(key.clone(), said);
                        }
                    }
                }
            }
        }
        let mut statuses = text;
        let mut completed = 0;
        for (key, status) in expected {
            match statuses.get_mut(&key) {
                Some(s) => {
                    // A v2 line keyed by its message (above) is the text's.
                    let by_message = format == LogFormat::PytestV2
                        && matches!(*s, Status::Xfail | Status::Error)
                        && backing.get(&key).is_some_and(|b| b.contains(s));
                    if !by_message {
                        *s = status;
                    }
                }
                None => {
                    statuses.insert(key, status);
                    completed += 1;
                }
            }
        }
        if completed > 0 {
            self.notes.push(format!(
                "{completed} status(es) taken from pytest's report: the log's summary did not \
                 list them"
            ));
        }
        self.whole_ids = whole
            .into_iter()
            .filter(|(k, _)| statuses.contains_key(k))
            .map(|(k, v)| (k, v.to_string()))
            .collect();
        self.statuses = statuses;
        let failing =
            report.tests.iter().any(|t| t.failing()) || !report.collection_errors.is_empty();
        if !contradictions.is_empty() {
            let shown: Vec<&str> = contradictions.iter().take(5).map(String::as_str).collect();
            self.contradiction = Some(format!(
                "the log's summary contradicts pytest's report: {}{}",
                shown.join("; "),
                if contradictions.len() > 5 {
                    format!(" and {} more", contradictions.len() - 5)
                } else {
                    String::new()
                }
            ));
        }
        self.problem = if self.exit_code != Some(report.exit) {
            Some(format!(
                "pytest returned {} but the process exited {}: something ended it after \
                 pytest finished",
                report.exit,
                exit_text(self.exit_code)
            ))
        } else if report.exit == 0 && failing {
            Some("pytest's report has failures but pytest exited 0".into())
        } else if report.exit == 1 && !failing {
            Some("pytest exited 1 (tests failed) but its report has no failure".into())
        } else {
            None
        };
    }

    /// SWE-bench's own check of a log against the exit status its eval
    /// script records: a run that exited non-zero with statuses but not one
    /// failure or error is not describing what happened.
    fn unbelievable_exit(&self) -> Option<String> {
        let code = self.exit_code?;
        let any_failure = self
            .statuses
            .values()
            .any(|s| matches!(s, Status::Failed | Status::Error));
        (code != 0 && !self.statuses.is_empty() && !any_failure).then(|| {
            format!(
                "the tests exited {code} but the log reports no failure or error (SWE-bench does \
                 not read such a log)"
            )
        })
    }

    /// Whether a pytest collector failed: a test module did not import.
    pub fn collection_failed(&self) -> bool {
        self.report
            .as_ref()
            .is_some_and(|r| !r.collection_errors.is_empty() || r.exit == 2)
    }

    /// Why the run says nothing about the code under test, if it does not:
    /// it could not start, timed out, was not believable, or pytest did
    /// not get to run tests.
    pub fn harness_error(&self) -> Option<String> {
        if let Some(e) = &self.error {
            return Some(format!("the run could not start: {e}"));
        }
        if self.timed_out {
            return Some("the run timed out".into());
        }
        if let Some(p) = &self.problem {
            return Some(p.clone());
        }
        let report = self.report.as_ref()?;
        if self.collection_failed() {
            let files = if report.collection_errors.is_empty() {
                "a test module".to_string()
            } else {
                report.collection_errors.join(", ")
            };
            // pytest marks the exception's own line with `E `.
            let why = self
                .tail
                .lines()
                .find_map(|l| l.strip_prefix("E ").map(str::trim))
                .unwrap_or_else(|| last_line(&self.tail));
            return Some(format!("{files} did not import: {why}"));
        }
        match report.exit {
            0 | 1 if report.tests.is_empty() => Some("no test ran".into()),
            0 | 1 => None,
            5 => Some("no test was collected".into()),
            3 => Some(format!(
                "pytest failed internally: {}",
                last_line(&self.tail)
            )),
            4 => Some(format!(
                "pytest rejected its command line: {}",
                last_line(&self.tail)
            )),
            code => Some(format!(
                "pytest ended with status {code}: {}",
                last_line(&self.tail)
            )),
        }
    }
}

/// Whether the test behind map id `key` has failed subtests.
fn subtests_failed(report: &Report, format: LogFormat, key: &str) -> bool {
    report
        .tests
        .iter()
        .any(|t| t.failed_subtests > 0 && format.key_of(&t.id, Status::Passed) == key)
}

fn exit_text(code: Option<i32>) -> String {
    code.map_or_else(|| "by a signal".into(), |c| c.to_string())
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

/// A generated test judged by every test of its files, from pytest's
/// report: pass when at least one ran and none failed (a failed subtest
/// fails its test). A line the test printed to look like a summary changes
/// nothing here.
pub fn judge_files(run: &RunRecord) -> Judged {
    if let Some(reason) = run.harness_error() {
        return Judged::HarnessError { reason };
    }
    let Some(report) = &run.report else {
        return Judged::HarnessError {
            reason: "the run was not a pytest run".into(),
        };
    };
    let failed: Vec<String> = report
        .tests
        .iter()
        .filter(|t| t.failing())
        .map(|t| t.id.clone())
        .collect();
    if failed.is_empty() {
        Judged::Pass
    } else {
        Judged::Fail { failed }
    }
}

/// The golden tests of a run, judged by id under SWE-bench's rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdsJudged {
    /// Every id of both lists: how it was found, its status, whether it
    /// succeeded.
    pub ids: Vec<IdGrade>,
    /// `RESOLVED_FULL`: every id succeeded, from output that can be
    /// believed.
    pub resolved: bool,
    /// Why the output cannot be believed or says nothing (the run could
    /// not start, timed out, contradicts itself): then nothing resolved.
    pub problem: Option<String>,
}

/// The golden tests judged by id: `fail_to_pass` must pass, `pass_to_pass`
/// must still pass, as SWE-bench's `get_eval_report` decides.
pub fn judge_ids(
    run: &RunRecord,
    fail_to_pass: &[String],
    pass_to_pass: &[String],
    eval_type: EvalType,
) -> IdsJudged {
    let problem = if let Some(e) = &run.error {
        Some(format!("the run could not start: {e}"))
    } else if run.timed_out {
        Some("the run timed out".into())
    } else if run.problem.is_none() && run.contradiction.is_none() && run.statuses.is_empty() {
        // SWE-bench does not believe a log with no status (even where
        // `fail_only` would let every missing id pass).
        Some("the log holds no test status".into())
    } else {
        run.problem.clone().or_else(|| run.contradiction.clone())
    };
    let ids = status::grade_ids(&run.statuses, fail_to_pass, pass_to_pass, eval_type, &|k| {
        run.whole_ids.get(k).cloned()
    });
    // A graded id found as a status no test of pytest's report stands
    // behind is a line printed to look like pytest's. One that names no
    // test (no `::`: SWE-bench's datasets hold such ids, read from inner
    // sessions' lines, like `[100%]`) is read as SWE-bench reads it.
    let unbacked: Vec<String> = ids
        .iter()
        .filter_map(|g| g.key.as_ref())
        .filter(|k| k.contains("::"))
        .filter_map(|k| run.unbacked.get(k).map(|s| format!("`{k}` {}", s.word())))
        .collect();
    let problem = problem.or_else(|| {
        (!unbacked.is_empty()).then(|| {
            format!(
                "the log's summary contradicts pytest's report: {} (report: no such test)",
                unbacked.join("; ")
            )
        })
    });
    IdsJudged {
        resolved: problem.is_none() && status::resolved(&ids),
        ids,
        problem,
    }
}

impl IdsJudged {
    /// The ids that did not succeed.
    pub fn failed(&self) -> Vec<String> {
        self.ids
            .iter()
            .filter(|g| !g.success)
            .map(|g| g.id.clone())
            .collect()
    }

    /// As a pass, a failure or a harness error.
    pub fn judged(&self) -> Judged {
        match &self.problem {
            Some(reason) => Judged::HarnessError {
                reason: reason.clone(),
            },
            None if self.resolved => Judged::Pass,
            None => Judged::Fail {
                failed: self.failed(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(stdout: &str, exit: i32, reports: serde_json::Value) -> RunResult {
        RunResult {
            exit_code: Some(exit),
            stdout: stdout.into(),
            stderr: pytest_report::line(exit, reports),
            ..RunResult::default()
        }
    }

    fn call(id: &str, outcome: &str) -> serde_json::Value {
        json!({"id": id, "when": "call", "outcome": outcome})
    }

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    const SUMMARY: &str = "\
=========================== short test summary info ============================
PASSED t.py::test_size[1 Byte]
PASSED t.py::test_ok
FAILED t.py::test_bad - assert 1 == 2
";

    #[test]
    fn an_honest_run_reads_as_swe_bench_reads_it() {
        let r = RunRecord::of(
            &run(
                SUMMARY,
                1,
                json!([
                    call("t.py::test_size[1 Byte]", "passed"),
                    call("t.py::test_ok", "passed"),
                    call("t.py::test_bad", "failed")
                ]),
            ),
            LogFormat::Pytest,
        );
        assert_eq!(r.problem, None, "{r:?}");
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        assert_eq!(r.statuses, LogFormat::Pytest.parse(SUMMARY));
        let j = judge_ids(
            &r,
            &ids(&["t.py::test_size[1"]),
            &ids(&["t.py::test_ok"]),
            EvalType::PassAndFail,
        );
        assert!(j.resolved, "{j:?}");
        assert_eq!(j.ids[0].rule, status::Rule::FirstSpace);
        assert_eq!(j.ids[0].test.as_deref(), Some("t.py::test_size[1 Byte]"));
        let j = judge_ids(&r, &ids(&["t.py::test_bad"]), &[], EvalType::PassAndFail);
        assert_eq!(
            j.judged(),
            Judged::Fail {
                failed: ids(&["t.py::test_bad"])
            }
        );
    }

    /// pytest's own tests run inner sessions (pytester) whose summaries
    /// reach the log: SWE-bench's parser adds their ids to its map, and so
    /// does this one, but only a graded id found as such a line, which no
    /// test of the report stands behind, makes the run unbelievable.
    #[test]
    fn an_inner_sessions_summary_is_read_as_swe_bench_reads_it() {
        let log = "\
----------------------------- Captured stdout call -----------------------------
FAILED test_inner.py::test_x - assert 0
XFAIL test_inner.py::test_y
=========================== short test summary info ============================
PASSED testing/test_a.py::test_outer
";
        let reports = json!([call("testing/test_a.py::test_outer", "passed")]);
        let r = RunRecord::of(&run(log, 0, reports), LogFormat::Pytest);
        assert!(r.contradiction.is_none() && r.problem.is_none(), "{r:?}");
        assert_eq!(
            r.statuses.get("test_inner.py::test_x"),
            Some(&Status::Failed)
        );
        let j = judge_ids(
            &r,
            &ids(&["testing/test_a.py::test_outer"]),
            &[],
            EvalType::PassAndFail,
        );
        assert!(j.resolved, "{j:?}");
        // The same line, for an id the instance grades, is not believed.
        let j = judge_ids(
            &r,
            &ids(&["test_inner.py::test_y"]),
            &[],
            EvalType::PassAndFail,
        );
        assert!(!j.resolved, "{j:?}");
        let p = j.problem.unwrap();
        assert!(
            p.contains("`test_inner.py::test_y` XFAIL (report: no such test)"),
            "{p}"
        );
        // An id that names no test, as SWE-bench's pytest datasets hold
        // some, is read as SWE-bench reads it.
        let log = format!("PASSED [100%]\n{log}");
        let r = RunRecord::of(
            &run(
                &log,
                0,
                json!([call("testing/test_a.py::test_outer", "passed")]),
            ),
            LogFormat::Pytest,
        );
        let j = judge_ids(&r, &[], &ids(&["[100%]"]), EvalType::PassAndFail);
        assert!(j.resolved, "{j:?}");
    }

    #[test]
    fn a_pass_printed_after_pytest_or_an_exit_forced_to_zero_is_a_problem() {
        let forged = format!("{SUMMARY}PASSED t.py::test_bad\n");
        let reports = json!([
            call("t.py::test_size[1 Byte]", "passed"),
            call("t.py::test_ok", "passed"),
            call("t.py::test_bad", "failed")
        ]);
        let r = RunRecord::of(&run(&forged, 1, reports.clone()), LogFormat::Pytest);
        let p = r.contradiction.clone().unwrap();
        assert!(
            p.contains("contradicts pytest's report: `t.py::test_bad` PASSED (report: FAILED)"),
            "{p}"
        );
        let j = judge_ids(&r, &ids(&["t.py::test_bad"]), &[], EvalType::PassAndFail);
        assert!(!j.resolved && j.problem.is_some(), "{j:?}");
        // Judged by its own report, the test still failed.
        assert_eq!(
            judge_files(&r),
            Judged::Fail {
                failed: ids(&["t.py::test_bad"])
            }
        );
        // pytest returned 1; an atexit handler made the process exit 0.
        let mut exit0 = run(SUMMARY, 1, reports);
        exit0.exit_code = Some(0);
        let p = RunRecord::of(&exit0, LogFormat::Pytest).problem.unwrap();
        assert!(
            p.contains("pytest returned 1 but the process exited 0"),
            "{p}"
        );
        // No report at all: pytest never finished.
        let mut gone = run(SUMMARY, 1, json!([]));
        gone.stderr.clear();
        let p = RunRecord::of(&gone, LogFormat::Pytest).problem.unwrap();
        assert!(p.contains("report is missing"), "{p}");
    }

    #[test]
    fn a_failed_subtest_fails_its_test_and_xpass_is_missing() {
        let text = "\
PASSED t.py::T::test_sub
XPASS t.py::test_lucky
SUBFAILED(i=2) t.py::T::test_sub - AssertionError
";
        let reports = json!([
            call("t.py::T::test_sub", "passed"),
            {"id": "t.py::T::test_sub", "when": "call", "outcome": "failed", "subtest": true},
            {"id": "t.py::test_lucky", "when": "call", "outcome": "passed", "xfail": true},
        ]);
        let r = RunRecord::of(&run(text, 1, reports), LogFormat::Pytest);
        assert_eq!(r.problem, None, "{r:?}");
        assert_eq!(r.statuses.get("t.py::T::test_sub"), Some(&Status::Failed));
        assert!(r.notes[0].contains("subtest"), "{:?}", r.notes);
        let j = judge_ids(
            &r,
            &ids(&["t.py::T::test_sub", "t.py::test_lucky"]),
            &[],
            EvalType::PassAndFail,
        );
        assert!(j.ids.iter().all(|g| !g.success), "{j:?}");
        assert_eq!(j.ids[1].rule, status::Rule::Missing);
    }

    #[test]
    fn a_summary_the_repository_coloured_away_is_completed_from_the_report() {
        let coloured = "\x1b[32mPASSED\x1b[0m t.py::test_ok\n";
        let r = RunRecord::of(
            &run(coloured, 0, json!([call("t.py::test_ok", "passed")])),
            LogFormat::Pytest,
        );
        assert_eq!(r.problem, None);
        assert_eq!(r.statuses.get("t.py::test_ok"), Some(&Status::Passed));
        assert!(
            r.notes[0].contains("taken from pytest's report"),
            "{:?}",
            r.notes
        );
    }

    #[test]
    fn runners_other_than_pytest_are_checked_against_their_exit_as_swe_bench_checks_them() {
        let log = "test_a (m.T) ... ok\n";
        let r = RunRecord::of(
            &RunResult {
                exit_code: Some(1),
                stdout: log.into(),
                ..RunResult::default()
            },
            LogFormat::Django,
        );
        assert!(r.problem.unwrap().contains("reports no failure"));
        let r = RunRecord::of(
            &RunResult {
                exit_code: Some(0),
                stdout: log.into(),
                ..RunResult::default()
            },
            LogFormat::Django,
        );
        assert_eq!(r.problem, None);
        assert!(judge_ids(&r, &ids(&["test_a (m.T)"]), &[], EvalType::PassAndFail).resolved);
    }

    #[test]
    fn generated_tests_are_judged_by_all_their_tests() {
        let reports = json!([call("t.py::a", "passed"), call("t.py::b", "failed")]);
        let r = RunRecord::of(
            &run("PASSED t.py::a\nFAILED t.py::b - x\n", 1, reports),
            LogFormat::Pytest,
        );
        assert_eq!(
            judge_files(&r),
            Judged::Fail {
                failed: ids(&["t.py::b"])
            }
        );
        let collect = json!([{"id": "t.py", "when": "collect", "outcome": "failed"}]);
        let r = RunRecord::of(
            &run("E   ImportError: no\nERROR t.py\n", 2, collect),
            LogFormat::Pytest,
        );
        assert!(
            matches!(judge_files(&r), Judged::HarnessError { reason } if reason == "t.py did not import: ImportError: no")
        );
        let r = RunRecord::of(&run("", 5, json!([])), LogFormat::Pytest);
        assert_eq!(
            judge_files(&r),
            Judged::HarnessError {
                reason: "no test was collected".into()
            }
        );
    }
}

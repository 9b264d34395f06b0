//! pytest's own report of a run: the runner starts pytest through a small
//! bootstrap (`pytest_report.py`, passed to `python -c`, so nothing of it
//! lies in the copy under test) that registers a plugin recording every
//! test's outcome and writes them, with pytest's exit status, as one line
//! to the stderr pytest started with. Grading reads outcomes from it, so
//! colour, verbosity or a missing summary in the repository's own pytest
//! settings cannot change a grade; the text summary and the exit status
//! are checked against it.

use serde::{Deserialize, Serialize};

/// The bootstrap, run as `python -c BOOTSTRAP MODE ARGS...`.
pub const BOOTSTRAP: &str = include_str!("pytest_report.py");

/// What starts the report's line on stderr.
const MARK: &str = "@@critic-pytest-report v1 ";

/// How the test command started pytest, which the bootstrap imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `python -m pytest`: the working directory first on the path.
    Module,
    /// The `pytest` script: its own directory first.
    Script,
}

impl Mode {
    fn arg(self) -> &'static str {
        match self {
            Mode::Module => "module",
            Mode::Script => "script",
        }
    }
}

/// Whose pytest runs the tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Origin {
    /// The environment's, imported before the copy is on the path: a
    /// module of the copy cannot stand in for it.
    #[default]
    Environment,
    /// The copy's own: the repository under test is pytest (SWE-bench's
    /// `pytest-dev/pytest`), whose editable install makes the graded code
    /// the runner.
    Copy,
}

impl Origin {
    fn arg(self) -> &'static str {
        match self {
            Origin::Environment => "environment",
            Origin::Copy => "copy",
        }
    }
}

/// Options the runner adds after the command's own (a later option wins
/// over `addopts`): every outcome in a plain-text short summary, which the
/// SWE-bench parsers read.
pub const SUMMARY_OPTIONS: &[&str] = &["-rA", "--color=no"];

/// How `argv` (after its environment assignments) starts pytest, and the
/// arguments pytest gets, if it does: `{python}`/`python*` `-m pytest ...`,
/// or `pytest ...`/`py.test ...`.
pub fn pytest_invocation(argv: &[String]) -> Option<(Mode, &[String])> {
    let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_string();
    let first = argv.first()?;
    let is_python = first == "{python}" || base(first).starts_with("python");
    if is_python {
        let m = 1 + interpreter_options(&argv[1..])?;
        if argv.get(m).map(String::as_str) == Some("-m") {
            return matches!(
                argv.get(m + 1).map(String::as_str),
                Some("pytest" | "py.test")
            )
            .then(|| (Mode::Module, &argv[m + 2..]));
        }
    }
    matches!(base(first).as_str(), "pytest" | "py.test").then(|| (Mode::Script, &argv[1..]))
}

/// How many of `args` are the interpreter's own options (`-X dev`, `-W
/// error`, `-b`, as tox commands give them) before what it runs; `None`
/// when an option takes a value that is missing.
fn interpreter_options(args: &[String]) -> Option<usize> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.as_str() {
            "-X" | "-W" => {
                args.get(i + 1)?;
                i += 2;
            }
            a if (a.starts_with("-X") || a.starts_with("-W")) && a.len() > 2 => i += 1,
            a if a.len() > 1
                && a.starts_with('-')
                && a[1..].chars().all(|c| "bBEsuOIq".contains(c)) =>
            {
                i += 1
            }
            _ => break,
        }
    }
    Some(i)
}

/// The interpreter options of a `python ... -m pytest` command (see
/// [`pytest_invocation`]), empty for any other.
pub fn python_options(argv: &[String]) -> &[String] {
    match pytest_invocation(argv) {
        Some((Mode::Module, _)) => &argv[1..1 + interpreter_options(&argv[1..]).unwrap_or(0)],
        _ => &[],
    }
}

/// Where the bootstrap finds the `PYTHONPATH` the run had, which `env`
/// keeps from the interpreter's start (see [`bootstrapped`]).
pub const PYTHONPATH_VAR: &str = "CRITIC_PYTHONPATH";

/// The test files a run was given, one a line: the only collected modules
/// whose `pytest_plugins` the bootstrap honours (conftests aside, which
/// are the base's).
pub const TEST_FILES_VAR: &str = "CRITIC_TEST_FILES";

/// The argv that runs pytest with `args` as `mode` would, through the
/// bootstrap, with `python` and its `options` (`-X dev`): started by `env -u PYTHONPATH`, so that no
/// module of the copy under test (which a scratch copy puts on
/// `PYTHONPATH`, ahead of the standard library) runs while the interpreter
/// starts; the bootstrap puts the copy on the path once pytest is imported
/// (before, when `origin` says the copy is pytest).
pub fn bootstrapped(
    python: &str,
    options: &[String],
    mode: Mode,
    origin: Origin,
    args: &[String],
) -> Vec<String> {
    let mut argv = vec![
        "env".to_string(),
        "-u".into(),
        "PYTHONPATH".into(),
        python.to_string(),
    ];
    argv.extend(options.iter().cloned());
    argv.extend([
        "-c".into(),
        BOOTSTRAP.into(),
        mode.arg().into(),
        origin.arg().into(),
    ]);
    argv.extend(args.iter().cloned());
    argv.extend(SUMMARY_OPTIONS.iter().map(|s| s.to_string()));
    argv
}

/// One entry of the report: a phase of a test, or a collector that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Entry {
    id: String,
    when: String,
    outcome: String,
    #[serde(default)]
    xfail: bool,
    #[serde(default)]
    subtest: bool,
}

#[derive(Debug, Deserialize)]
struct Raw {
    pytest: String,
    exit: i32,
    reports: Vec<Entry>,
}

/// A category of pytest's short summary a test falls in (one test can be
/// in two: failed in its call, then an error in teardown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Passed.
    Passed,
    /// Skipped.
    Skipped,
    /// Failed as its `xfail` mark expected.
    Xfailed,
    /// Passed against its (non-strict) `xfail` mark.
    Xpassed,
    /// An error in setup or teardown.
    Error,
    /// Failed, in its call or in one of its subtests.
    Failed,
}

impl Outcome {
    /// Whether it counts against the test.
    pub fn failing(self) -> bool {
        matches!(self, Outcome::Failed | Outcome::Error)
    }
}

/// One test as the report gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestOutcome {
    /// pytest's node id.
    pub id: String,
    /// The summary categories it is in, in the order pytest's `-rA` summary
    /// lists them (passed, skipped, xfailed, xpassed, error, failed).
    pub outcomes: Vec<Outcome>,
    /// Subtests that failed (`subTest`, the `subtests` fixture).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed_subtests: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl TestOutcome {
    /// Whether it failed, a subtest counting for its test.
    pub fn failing(&self) -> bool {
        self.failed_subtests > 0 || self.outcomes.iter().any(|o| o.failing())
    }
}

/// The report of one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// pytest's version.
    pub pytest: String,
    /// The exit status pytest returned.
    pub exit: i32,
    /// Each test, in the order it was first reported.
    pub tests: Vec<TestOutcome>,
    /// Node ids of collectors that failed (a module that did not import).
    pub collection_errors: Vec<String>,
}

/// The report in a run's `stderr`: `Ok(None)` when there is none (pytest
/// never finished), an error when there are two or it is not readable.
pub fn read(stderr: &str) -> Result<Option<Report>, String> {
    let mut lines = stderr.lines().filter_map(|l| l.strip_prefix(MARK));
    let Some(line) = lines.next() else {
        return Ok(None);
    };
    if lines.next().is_some() {
        return Err("pytest's report was written twice: something in the run wrote one".into());
    }
    let raw: Raw = serde_json::from_str(line).map_err(|e| {
        format!(
            "pytest's report is not readable: {}",
            crate::sys::json_error::describe(&e)
        )
    })?;
    Ok(Some(fold(raw)))
}

/// Each test's phases into summary categories, as pytest's terminal
/// reporter files them.
fn fold(raw: Raw) -> Report {
    let mut tests: Vec<TestOutcome> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = Default::default();
    let mut collection_errors = Vec::new();
    for e in raw.reports {
        if e.when == "collect" {
            collection_errors.push(e.id);
            continue;
        }
        let i = *index.entry(e.id.clone()).or_insert_with(|| {
            tests.push(TestOutcome {
                id: e.id.clone(),
                outcomes: Vec::new(),
                failed_subtests: 0,
            });
            tests.len() - 1
        });
        let t = &mut tests[i];
        if e.subtest {
            if e.outcome == "failed" {
                t.failed_subtests += 1;
            }
            continue;
        }
        let category = match (e.when.as_str(), e.outcome.as_str(), e.xfail) {
            ("call", "passed", false) => Some(Outcome::Passed),
            ("call", "passed", true) => Some(Outcome::Xpassed),
            ("call", "failed", _) => Some(Outcome::Failed),
            (_, "skipped", true) => Some(Outcome::Xfailed),
            (_, "skipped", false) => Some(Outcome::Skipped),
            ("setup" | "teardown", "failed", _) => Some(Outcome::Error),
            _ => None,
        };
        if let Some(c) = category {
            if !t.outcomes.contains(&c) {
                t.outcomes.push(c);
                t.outcomes.sort();
            }
        }
    }
    Report {
        pytest: raw.pytest,
        exit: raw.exit,
        tests,
        collection_errors,
    }
}

/// The report line the bootstrap writes, for tests that make one.
#[cfg(test)]
pub fn line(exit: i32, reports: serde_json::Value) -> String {
    format!(
        "{MARK}{}\n",
        serde_json::json!({"pytest": "9.2.0", "exit": exit, "reports": reports})
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn commands_that_start_pytest_are_recognised() {
        let argv = |s: &str| shlex::split(s).unwrap();
        let a = argv("{python} -m pytest -rA tests");
        assert_eq!(pytest_invocation(&a), Some((Mode::Module, &a[3..])));
        let a = argv("/venv/bin/python3.12 -m pytest -x");
        assert_eq!(pytest_invocation(&a), Some((Mode::Module, &a[3..])));
        let a = argv("pytest --no-header -rA");
        assert_eq!(pytest_invocation(&a), Some((Mode::Script, &a[1..])));
        // The interpreter's own options, as tox's commands give them.
        let a = argv("{python} -X dev -X warn_default_encoding -bb -Werror -m pytest -rA");
        assert_eq!(pytest_invocation(&a), Some((Mode::Module, &a[9..])));
        assert_eq!(python_options(&a), &a[1..7]);
        assert_eq!(pytest_invocation(&argv("{python} -X")), None);
        assert!(python_options(&argv("pytest -x")).is_empty());
        for other in [
            "tox -e py",
            "{python} -m unittest",
            "./tests/runtests.py",
            "bin/test",
        ] {
            assert_eq!(pytest_invocation(&argv(other)), None, "{other}");
        }
    }

    #[test]
    fn phases_fold_into_summary_categories() {
        let err = line(
            1,
            json!([
                {"id": "t.py::a", "when": "setup", "outcome": "passed"},
                {"id": "t.py::a", "when": "call", "outcome": "failed"},
                {"id": "t.py::a", "when": "teardown", "outcome": "failed"},
                {"id": "t.py::x", "when": "call", "outcome": "skipped", "xfail": true},
                {"id": "t.py::y", "when": "call", "outcome": "passed", "xfail": true},
                {"id": "t.py::s", "when": "setup", "outcome": "skipped"},
                {"id": "t.py::u", "when": "call", "outcome": "passed"},
                {"id": "t.py::u", "when": "call", "outcome": "failed", "subtest": true},
                {"id": "t.py::u", "when": "call", "outcome": "passed", "subtest": true},
                {"id": "u.py", "when": "collect", "outcome": "failed"},
            ]),
        );
        let r = read(&format!("noise\n{err}")).unwrap().unwrap();
        let by = |id: &str| r.tests.iter().find(|t| t.id == id).unwrap().clone();
        assert_eq!(by("t.py::a").outcomes, [Outcome::Error, Outcome::Failed]);
        assert_eq!(by("t.py::x").outcomes, [Outcome::Xfailed]);
        assert_eq!(by("t.py::y").outcomes, [Outcome::Xpassed]);
        assert_eq!(by("t.py::s").outcomes, [Outcome::Skipped]);
        let u = by("t.py::u");
        assert_eq!(
            (u.outcomes.as_slice(), u.failed_subtests),
            (&[Outcome::Passed][..], 1)
        );
        assert!(u.failing());
        assert_eq!(r.collection_errors, ["u.py"]);
        assert_eq!(r.exit, 1);
    }

    #[test]
    fn no_report_two_reports_and_a_garbled_one_are_told_apart() {
        assert_eq!(read("plain output\n"), Ok(None));
        let one = line(0, json!([]));
        assert!(read(&format!("{one}{one}"))
            .unwrap_err()
            .contains("written twice"));
        assert!(read(&format!("{MARK}{{\"exit\": \n"))
            .unwrap_err()
            .contains("not readable"));
    }
}

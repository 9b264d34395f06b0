//! What one run of a bug-reproduction test says, shared by every skill that
//! runs one (CoHarden, brt-only, cogen, tdd): passed, detected the bug,
//! crashed before it could test anything, or said nothing about the code
//! (timed out, was killed, never ran).
//!
//! A test *detects the bug* when it exits non-zero for a reason other than a
//! crash of the test itself. The crashes are the ones that say the test never
//! got to its check: a `SyntaxError` (or `IndentationError`, `TabError`), an
//! `ImportError` or `ModuleNotFoundError`, a `NameError` raised in a test
//! file, and, for a pytest run, a collection error or no test collected. A
//! failing `assert` or an exception the buggy code raises is a reproduction.
//! With [`BugExit::Code`] the exit must also be that code.

use crate::protocol::RunResult;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Which exit means "the bug is present".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BugExit {
    /// Any non-zero exit that is not a crash of the test (`nonzero`).
    #[default]
    Nonzero,
    /// Exactly this code, and no crash.
    Code(i32),
}

impl BugExit {
    /// Whether `code` (non-zero) is a bug-present exit.
    pub fn accepts(self, code: i32) -> bool {
        match self {
            BugExit::Nonzero => code != 0,
            BugExit::Code(c) => c == code,
        }
    }

    /// For prompts: "a non-zero code" or "code 1".
    pub fn phrase(self) -> String {
        match self {
            BugExit::Nonzero => "a non-zero code".into(),
            BugExit::Code(c) => format!("code {c}"),
        }
    }

    /// `Err` with the reason when the setting cannot mean "bug present".
    pub fn check(self) -> Result<(), String> {
        match self {
            BugExit::Code(0) => Err("0 means success; use `nonzero` or a code such as 1".into()),
            _ => Ok(()),
        }
    }
}

impl fmt::Display for BugExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BugExit::Nonzero => f.write_str("nonzero"),
            BugExit::Code(c) => write!(f, "{c}"),
        }
    }
}

impl Serialize for BugExit {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            BugExit::Nonzero => s.serialize_str("nonzero"),
            BugExit::Code(c) => s.serialize_i32(*c),
        }
    }
}

impl<'de> Deserialize<'de> for BugExit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<BugExit, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Code(i32),
            Word(String),
        }
        match Raw::deserialize(d)
            .map_err(|_| serde::de::Error::custom("expected `nonzero` or an exit code such as 1"))?
        {
            Raw::Code(c) => Ok(BugExit::Code(c)),
            Raw::Word(w) if w == "nonzero" => Ok(BugExit::Nonzero),
            Raw::Word(w) => Err(serde::de::Error::custom(format!(
                "unknown value `{w}`: expected `nonzero` or an exit code such as 1"
            ))),
        }
    }
}

/// The meaning of one test run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0: no bug seen.
    Pass,
    /// A bug-present exit and no crash.
    BugDetected,
    /// The test itself crashed; what it crashed with.
    Crash(String),
    /// A non-zero exit that is not the bug-present code.
    OtherExit(i32),
    /// Killed at the time limit.
    TimedOut,
    /// Ended by a signal.
    Signal(i32),
    /// Could not run (patch did not apply, program missing...).
    NotRun(String),
}

impl Outcome {
    /// Classify `run`. `test_files` are the test's paths (a `NameError` is a
    /// crash only when raised in one of them).
    pub fn of(run: &RunResult, bug: BugExit, test_files: &[&str]) -> Outcome {
        if let Some(e) = &run.error {
            return Outcome::NotRun(e.clone());
        }
        if run.timed_out {
            return Outcome::TimedOut;
        }
        match (run.exit_code, run.signal) {
            (Some(0), _) => Outcome::Pass,
            (Some(code), _) => {
                if let Some(why) = runner_missing(run) {
                    return Outcome::NotRun(why);
                }
                match crash(run, code, test_files) {
                    Some(why) => Outcome::Crash(why),
                    None if bug.accepts(code) => Outcome::BugDetected,
                    None => Outcome::OtherExit(code),
                }
            }
            (None, Some(sig)) => Outcome::Signal(sig),
            (None, None) => Outcome::NotRun("the command reported no exit status".into()),
        }
    }

    /// Whether the run says anything about the code under test: a run that
    /// timed out, was killed or never started is an environment failure.
    pub fn is_verdict(&self) -> bool {
        matches!(
            self,
            Outcome::Pass | Outcome::BugDetected | Outcome::Crash(_) | Outcome::OtherExit(_)
        )
    }

    /// The outcome as a phrase ("exited 0", "crashed with ...").
    pub fn describe(&self, timeout_secs: u64) -> String {
        match self {
            Outcome::Pass => "exited 0".into(),
            Outcome::BugDetected => "failed, detecting the bug".into(),
            Outcome::Crash(what) => format!("crashed before checking anything: {what}"),
            Outcome::OtherExit(code) => format!("exited {code}"),
            Outcome::TimedOut => format!("did not finish within {timeout_secs} s"),
            Outcome::Signal(sig) => format!("was killed by signal {sig}"),
            Outcome::NotRun(why) => format!("could not run: {why}"),
        }
    }
}

/// Why `run` never reached the tests, when the module its command runs
/// (`python3 -m pytest`) is not installed: Python then prints
/// `<python>: No module named pytest` and exits 1, which would otherwise
/// read as a failing test.
fn runner_missing(run: &RunResult) -> Option<String> {
    if run.exit_code != Some(1) || run.stderr.contains("Traceback (most recent call last):") {
        return None;
    }
    let last = run
        .stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())?
        .trim();
    let (_, message) = last.split_once(": ")?;
    [
        "No module named ",
        "Error while finding module specification for ",
    ]
    .iter()
    .any(|m| message.starts_with(m))
    .then(|| format!("the test runner did not start ({message})"))
}

/// Exceptions that mean the test never ran its check, wherever raised.
const CRASH_ANYWHERE: &[&str] = &[
    "SyntaxError",
    "IndentationError",
    "TabError",
    "ImportError",
    "ModuleNotFoundError",
];

/// Why a non-zero exit with `code` is a crash of the test, if it is.
fn crash(run: &RunResult, code: i32, test_files: &[&str]) -> Option<String> {
    if let Some(why) = pytest_crash(run, code, test_files) {
        return Some(why);
    }
    let (name, line) = last_exception(&run.stderr)?;
    if CRASH_ANYWHERE.contains(&name) {
        return Some(format!("an uncaught `{line}`"));
    }
    let innermost = run
        .stderr
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("File \""))
        .filter_map(|l| l.split('"').next())
        .next_back();
    (name == "NameError" && innermost.is_some_and(|f| is_test_file(f, test_files)))
        .then(|| format!("an uncaught `{line}` in the test"))
}

/// The short exception name and the whole line when `stderr` ends with an
/// uncaught Python exception: a traceback, or the bare report Python prints
/// for a syntax error in the script itself.
fn last_exception(stderr: &str) -> Option<(&str, String)> {
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())?
        .trim_end();
    let name = last.split(':').next().unwrap_or(last);
    let is_name = !name.is_empty()
        && !name.starts_with(' ')
        && name
            .split('.')
            .all(|part| !part.is_empty() && part.chars().all(|c| c.is_alphanumeric() || c == '_'));
    if !is_name {
        return None;
    }
    let short = name.rsplit('.').next().unwrap_or(name);
    let syntax = matches!(short, "SyntaxError" | "IndentationError" | "TabError");
    let exception_like = ["Error", "Exception", "Interrupt", "Exit", "Warning"]
        .iter()
        .any(|s| short.ends_with(s));
    let traceback = stderr.contains("Traceback (most recent call last):");
    (exception_like && (traceback || syntax)).then(|| (short, last.to_string()))
}

/// A pytest run's crash: its own exit codes for "could not run the tests"
/// (2 interrupted, 3 internal error, 4 usage error, 5 nothing collected), or
/// a failure whose exception is one of the crashes above.
fn pytest_crash(run: &RunResult, code: i32, test_files: &[&str]) -> Option<String> {
    let out = &run.stdout;
    if !out.contains("test session starts") {
        return None;
    }
    match code {
        2 => return Some("pytest stopped with errors while collecting the tests".into()),
        3 => return Some("pytest hit an internal error".into()),
        4 => return Some("pytest was called wrongly (usage error)".into()),
        5 => return Some("pytest collected no test".into()),
        _ => {}
    }
    // A test that errors in its setup (a fixture that does not exist) never
    // ran its check: pytest ends with "N error(s)" and no "failed".
    let summary = out
        .lines()
        .rev()
        .find(|l| l.starts_with('=') && l.contains(" in "))
        .unwrap_or_default();
    if summary.contains(" error") && !summary.contains(" failed") {
        return Some(format!(
            "pytest reported errors and no failing test ({})",
            summary.trim_matches(|c: char| c == '=' || c == ' ')
        ));
    }
    // One pass: pytest names the raising frame after the `E` lines
    // (`path:line: NameError`), so a NameError waits for that line.
    let mut name_error: Option<&str> = None;
    for line in out.lines() {
        if let Some(text) = line.strip_prefix("E   ") {
            let text = text.trim();
            let name = text.split(':').next().unwrap_or(text);
            if CRASH_ANYWHERE.contains(&name) {
                return Some(format!("a test raised `{text}`"));
            }
            if name == "NameError" {
                name_error = Some(text);
            }
        } else if let (Some(text), Some(loc)) = (name_error, line.strip_suffix(": NameError")) {
            if is_test_file(loc.split(':').next().unwrap_or(loc), test_files) {
                return Some(format!("a test raised `{text}` in the test itself"));
            }
            name_error = None;
        }
    }
    None
}

/// Whether `path` (as a traceback prints it: relative or absolute) is one of
/// the test files.
fn is_test_file(path: &str, test_files: &[&str]) -> bool {
    test_files.iter().any(|t| {
        let t = t.trim_start_matches("./");
        path == t || path.ends_with(&format!("/{t}"))
    })
}

/// The last `chars` characters of a run's output (stdout, then stderr).
pub fn tail(run: &RunResult, chars: usize) -> String {
    let mut text = String::new();
    for part in [&run.stdout, &run.stderr] {
        if !part.trim().is_empty() {
            text.push_str(part.trim_end());
            text.push('\n');
        }
    }
    if let Some(e) = &run.error {
        text.push_str(e);
        text.push('\n');
    }
    let count = text.chars().count();
    if count <= chars {
        return text.trim_end().to_string();
    }
    let cut: String = text.chars().skip(count - chars).collect();
    format!("[...]{}", cut.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST: &[&str] = &["reproduction.py"];

    fn exited(code: i32, stderr: &str) -> RunResult {
        RunResult {
            exit_code: Some(code),
            stderr: stderr.into(),
            ..RunResult::default()
        }
    }

    fn traceback(frame: &str, last: &str) -> String {
        format!(
            "Traceback (most recent call last):\n  File \"{frame}\", line 3, in <module>\n    \
             x()\n{last}\n"
        )
    }

    #[test]
    fn any_nonzero_exit_that_is_not_a_crash_reproduces() {
        let n = BugExit::Nonzero;
        assert_eq!(Outcome::of(&exited(0, ""), n, TEST), Outcome::Pass);
        assert_eq!(Outcome::of(&exited(1, ""), n, TEST), Outcome::BugDetected);
        assert_eq!(Outcome::of(&exited(3, ""), n, TEST), Outcome::BugDetected);
        // A bare failing assert is a reproduction.
        let assertion = traceback("reproduction.py", "AssertionError");
        assert_eq!(
            Outcome::of(&exited(1, &assertion), n, TEST),
            Outcome::BugDetected
        );
        // So is the exception the buggy code raises.
        let raised = traceback("/s/intervals/core.py", "ValueError: bad interval");
        assert_eq!(
            Outcome::of(&exited(1, &raised), n, TEST),
            Outcome::BugDetected
        );
    }

    #[test]
    fn crashes_of_the_test_itself_do_not() {
        let n = BugExit::Nonzero;
        let import = traceback(
            "reproduction.py",
            "ModuleNotFoundError: No module named 'nope'",
        );
        assert!(matches!(
            Outcome::of(&exited(1, &import), n, TEST),
            Outcome::Crash(w) if w.contains("ModuleNotFoundError")
        ));
        let syntax = "  File \"/s/reproduction.py\", line 2\n    x = )\n        ^\n\
                      SyntaxError: unmatched ')'\n";
        assert!(matches!(
            Outcome::of(&exited(1, syntax), n, TEST),
            Outcome::Crash(_)
        ));
        let typo = traceback(
            "/tmp/s/reproduction.py",
            "NameError: name 'mrege' is not defined",
        );
        assert!(matches!(
            Outcome::of(&exited(1, &typo), n, TEST),
            Outcome::Crash(_)
        ));
        // A NameError in the code under test is the bug showing.
        let lib = traceback(
            "/s/intervals/core.py",
            "NameError: name 'out' is not defined",
        );
        assert_eq!(Outcome::of(&exited(1, &lib), n, TEST), Outcome::BugDetected);
        let timed = RunResult {
            timed_out: true,
            ..RunResult::default()
        };
        assert_eq!(Outcome::of(&timed, n, TEST), Outcome::TimedOut);
        assert!(!Outcome::TimedOut.is_verdict());
    }

    #[test]
    fn a_fixed_code_must_match_exactly() {
        let one = BugExit::Code(1);
        assert_eq!(Outcome::of(&exited(1, ""), one, TEST), Outcome::BugDetected);
        assert_eq!(
            Outcome::of(&exited(2, ""), one, TEST),
            Outcome::OtherExit(2)
        );
        // An error message the test prints itself is not a crash.
        let printed = exited(1, "Error: merge() kept (1, 3)\n");
        assert_eq!(Outcome::of(&printed, one, TEST), Outcome::BugDetected);
    }

    #[test]
    fn pytest_runs_that_never_tested_anything_are_crashes() {
        let run = |code: i32, stdout: &str| RunResult {
            exit_code: Some(code),
            stdout: format!("===== test session starts =====\n{stdout}"),
            ..RunResult::default()
        };
        let n = BugExit::Nonzero;
        let tests = &["tests/test_merge.py"];
        assert!(
            matches!(Outcome::of(&run(5, ""), n, tests), Outcome::Crash(w) if w.contains("no test"))
        );
        assert!(matches!(
            Outcome::of(&run(2, ""), n, tests),
            Outcome::Crash(_)
        ));
        let failed = "    def test_touching():\n>       assert merge([(1, 3), (3, 5)]) == [(1, 5)]\n\
                      E       assert [(1, 3), (3, 5)] == [(1, 5)]\n\ntests/test_merge.py:4: AssertionError\n";
        assert_eq!(Outcome::of(&run(1, failed), n, tests), Outcome::BugDetected);
        let typo =
            "E   NameError: name 'mrege' is not defined\n\ntests/test_merge.py:4: NameError\n";
        assert!(matches!(
            Outcome::of(&run(1, typo), n, tests),
            Outcome::Crash(_)
        ));
        let setup =
            "E       fixture 'tmp_pth' not found\n\n=========== 1 error in 0.01s ===========\n";
        assert!(
            matches!(Outcome::of(&run(1, setup), n, tests), Outcome::Crash(w) if w.contains("1 error"))
        );
        let both = "=========== 1 failed, 1 error in 0.01s ===========\n";
        assert_eq!(Outcome::of(&run(1, both), n, tests), Outcome::BugDetected);
        let lib = "E   NameError: name 'out' is not defined\n\nintervals/core.py:9: NameError\n";
        assert_eq!(Outcome::of(&run(1, lib), n, tests), Outcome::BugDetected);
    }

    #[test]
    fn a_test_runner_that_is_not_installed_never_ran() {
        let run = exited(1, "/usr/bin/python3: No module named pytest\n");
        assert_eq!(
            Outcome::of(&run, BugExit::Nonzero, TEST),
            Outcome::NotRun("the test runner did not start (No module named pytest)".into())
        );
        assert!(!Outcome::of(&run, BugExit::Nonzero, TEST).is_verdict());
    }

    #[test]
    fn the_setting_reads_nonzero_or_a_code() {
        let v: BugExit = serde_json::from_value(serde_json::json!("nonzero")).unwrap();
        assert_eq!(v, BugExit::Nonzero);
        let v: BugExit = serde_json::from_value(serde_json::json!(2)).unwrap();
        assert_eq!(v, BugExit::Code(2));
        let e = serde_json::from_value::<BugExit>(serde_json::json!("any")).unwrap_err();
        assert!(e.to_string().contains("nonzero"), "{e}");
        assert!(BugExit::Code(0).check().is_err());
        assert_eq!(serde_json::to_value(BugExit::Nonzero).unwrap(), "nonzero");
    }

    #[test]
    fn tail_keeps_the_end() {
        let run = RunResult {
            stdout: "a".repeat(50),
            stderr: "the end".into(),
            ..RunResult::default()
        };
        let t = tail(&run, 10);
        assert!(t.starts_with("[...]") && t.ends_with("the end"), "{t}");
        assert_eq!(tail(&exited(0, "short\n"), 100), "short");
    }
}

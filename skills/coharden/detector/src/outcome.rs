//! What one run of the reproduction test says.

use critic_sdk::RunResult;

/// The meaning of one test run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0: no bug seen.
    Pass,
    /// Exit with the bug-present code and no crash.
    BugDetected,
    /// Ended by an uncaught exception; the exception line.
    Crash(String),
    /// Another exit code.
    OtherExit(i32),
    /// Killed at the time limit.
    TimedOut,
    /// Ended by a signal.
    Signal(i32),
    /// Could not run (patch did not apply, program missing...).
    NotRun(String),
}

impl Outcome {
    /// Classify `run`, where `bug_code` is the bug-present exit code.
    pub fn of(run: &RunResult, bug_code: i32) -> Outcome {
        if let Some(e) = &run.error {
            return Outcome::NotRun(e.clone());
        }
        if run.timed_out {
            return Outcome::TimedOut;
        }
        match (run.exit_code, run.signal) {
            (Some(0), _) => Outcome::Pass,
            (Some(code), _) => match crash_line(&run.stderr) {
                Some(line) => Outcome::Crash(line),
                None if code == bug_code => Outcome::BugDetected,
                None => Outcome::OtherExit(code),
            },
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
            Outcome::BugDetected => "exited with the bug-present code".into(),
            Outcome::Crash(line) => format!("crashed with an uncaught `{line}`"),
            Outcome::OtherExit(code) => format!("exited {code}"),
            Outcome::TimedOut => format!("did not finish within {timeout_secs} s"),
            Outcome::Signal(sig) => format!("was killed by signal {sig}"),
            Outcome::NotRun(why) => format!("could not run: {why}"),
        }
    }
}

/// The exception line when `stderr` ends with an uncaught Python exception:
/// a traceback, or the bare report Python prints for a syntax error in the
/// script itself.
pub fn crash_line(stderr: &str) -> Option<String> {
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
    (exception_like && (traceback || syntax)).then(|| last.to_string())
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

    fn exited(code: i32, stderr: &str) -> RunResult {
        RunResult {
            exit_code: Some(code),
            stderr: stderr.into(),
            ..RunResult::default()
        }
    }

    #[test]
    fn exit_codes_and_crashes() {
        assert_eq!(Outcome::of(&exited(0, ""), 1), Outcome::Pass);
        assert_eq!(
            Outcome::of(&exited(1, "bug: got [(1, 3)]\n"), 1),
            Outcome::BugDetected
        );
        assert_eq!(Outcome::of(&exited(2, ""), 1), Outcome::OtherExit(2));
        let tb = "Traceback (most recent call last):\n  File \"r.py\", line 3, in <module>\n    \
                  import nope\nModuleNotFoundError: No module named 'nope'\n";
        assert_eq!(
            Outcome::of(&exited(1, tb), 1),
            Outcome::Crash("ModuleNotFoundError: No module named 'nope'".into())
        );
        let syntax = "  File \"/s/reproduction.py\", line 2\n    x = )\n        ^\nSyntaxError: unmatched ')'\n";
        assert_eq!(
            Outcome::of(&exited(1, syntax), 1),
            Outcome::Crash("SyntaxError: unmatched ')'".into())
        );
        let assertion =
            "Traceback (most recent call last):\n  File \"r.py\", line 1\nAssertionError\n";
        assert_eq!(
            Outcome::of(&exited(1, assertion), 1),
            Outcome::Crash("AssertionError".into())
        );
        // An error message the test prints itself is not a crash.
        assert_eq!(
            Outcome::of(&exited(1, "Error: merge() kept (1, 3)\n"), 1),
            Outcome::BugDetected
        );
    }

    #[test]
    fn environment_failures_are_not_verdicts() {
        let timed = RunResult {
            timed_out: true,
            ..RunResult::default()
        };
        assert_eq!(Outcome::of(&timed, 1), Outcome::TimedOut);
        let missing = RunResult {
            error: Some("program not found".into()),
            ..RunResult::default()
        };
        assert!(!Outcome::of(&missing, 1).is_verdict());
        let killed = RunResult {
            signal: Some(9),
            ..RunResult::default()
        };
        assert_eq!(Outcome::of(&killed, 1), Outcome::Signal(9));
        assert!(Outcome::of(&exited(3, ""), 1).is_verdict());
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

//! What the paper's baseline arms share (feature `arms`). Each arm of the
//! CoHarden comparison (fix-only, brt-only, tdd, cogen, ralph) is a skill
//! whose one gate judges a finish the way that arm's loop did; all of them
//! name their arm in the verdict's metadata and, where they ran tests, the
//! fail-to-pass result, so a runner can tabulate the arms from verdicts
//! alone, without running anything again.
//!
//! Here: a config read with errors that name the field, the test command and
//! its `{test_files}` placeholder, the patch split into the diffs a run
//! applies, a run classified by the reproduction rules of
//! [`crate::reproduction`], and the metadata every arm writes.

use crate::reproduction::{tail, BugExit, Outcome};
use crate::{diff, DetectorInput, DetectorOutput, FileStatus, Patch, RunRequest, RunResult};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// The word of a test command that stands for the test files to run.
pub const TEST_FILES: &str = "{test_files}";

/// The test command unless configured: pytest on the test files, every
/// outcome reported (`-rA`), no cache written into the scratch copy.
pub const DEFAULT_TEST_COMMAND: &[&str] = &[
    "python3",
    "-m",
    "pytest",
    "-rA",
    "-p",
    "no:cacheprovider",
    TEST_FILES,
];

/// Seconds one test run may take unless configured.
pub const DEFAULT_TEST_TIMEOUT_SECS: u64 = 300;

/// Characters of a run's output a follow-up quotes unless configured.
pub const DEFAULT_OUTPUT_TAIL_CHARS: usize = 2000;

/// The signal's config as `T` (an absent config is `{}`), with errors that
/// name the field: `config.test_timeout_secs: invalid type: ...`.
pub fn config<T: DeserializeOwned>(input: &DetectorInput) -> Result<T, String> {
    let value = if input.config.is_null() {
        Value::Object(Map::new())
    } else {
        input.config.clone()
    };
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." {
            "config".to_string()
        } else {
            format!("config.{path}")
        };
        format!("{field}: {}", e.inner())
    })
}

/// A test command: argv words, where a word `{test_files}` stands for the
/// test files to run (none, one or many words).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TestCommand(pub Vec<String>);

impl Default for TestCommand {
    fn default() -> TestCommand {
        TestCommand(DEFAULT_TEST_COMMAND.iter().map(|w| w.to_string()).collect())
    }
}

impl TestCommand {
    /// `Err` naming `field` (`test_command`, `brt.command`) when the command
    /// cannot start anything.
    pub fn check(&self, field: &str) -> Result<(), String> {
        match self.0.first().map(String::as_str) {
            None | Some("") => Err(format!(
                "config.{field}: name a program and its arguments, such as \
                 [python3, -m, pytest, \"{TEST_FILES}\"]"
            )),
            Some(TEST_FILES) => Err(format!(
                "config.{field}: the first word must be the program; `{TEST_FILES}` can only \
                 be an argument"
            )),
            Some(_) => Ok(()),
        }
    }

    /// The argv with `{test_files}` replaced by `test_files`.
    pub fn argv(&self, test_files: &[String]) -> Vec<String> {
        self.0
            .iter()
            .flat_map(|word| {
                if word == TEST_FILES {
                    test_files.to_vec()
                } else {
                    vec![word.clone()]
                }
            })
            .collect()
    }

    /// [`TestCommand::argv`] as one line for a reader, words with blanks or
    /// quotes in single quotes.
    pub fn line(&self, test_files: &[String]) -> String {
        self.argv(test_files)
            .iter()
            .map(|w| {
                if w.is_empty() || w.contains(|c: char| c.is_whitespace() || "'\"\\$`".contains(c))
                {
                    format!("'{}'", w.replace('\'', r"'\''"))
                } else {
                    w.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The settings of an arm that runs the agent's own tests (brt-only, cogen):
/// the whole of their `config` block.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TestRuns {
    /// How to run the tests from the repository root; `{test_files}` stands
    /// for the patch's test files (see `test_file_suffixes`).
    pub test_command: TestCommand,
    /// The exit that means "bug present": `nonzero` or a code.
    pub bug_exit_code: BugExit,
    /// Time limit of one run, in seconds.
    pub test_timeout_secs: u64,
    /// Characters of a run's output quoted in a follow-up.
    pub output_tail_chars: usize,
    /// Which of the patch's test files `{test_files}` names: those ending
    /// with one of these (all of them when empty). A test runner given a
    /// data file refuses to run.
    pub test_file_suffixes: Vec<String>,
    /// Test files `{test_files}` never names, by file name (`*` matches any
    /// run of characters): the scratch scripts the prompts have the agent
    /// write first. pytest imports every file it is given, and a script that
    /// exits at import stops the whole run.
    pub skip_files: Vec<String>,
}

impl Default for TestRuns {
    fn default() -> TestRuns {
        TestRuns {
            test_command: TestCommand::default(),
            bug_exit_code: BugExit::default(),
            test_timeout_secs: DEFAULT_TEST_TIMEOUT_SECS,
            output_tail_chars: DEFAULT_OUTPUT_TAIL_CHARS,
            test_file_suffixes: vec![".py".into()],
            skip_files: vec!["reproduction.py".into(), "reproduce*.py".into()],
        }
    }
}

impl TestRuns {
    /// Check what serde cannot.
    pub fn validate(&self) -> Result<(), String> {
        self.test_command.check("test_command")?;
        check_run_limits(self.bug_exit_code, self.test_timeout_secs)
    }

    /// A run of `self.test_command` on `test_files`, in a scratch copy of the
    /// base with `patch` applied.
    pub fn request(&self, patch: &str, test_files: &[String]) -> RunRequest {
        RunRequest {
            patch: Some(patch.to_string()),
            argv: self.test_command.argv(test_files),
            timeout_ms: Some(self.test_timeout_secs.saturating_mul(1000)),
            ..RunRequest::default()
        }
    }

    /// `run` with its meaning, `test_files` being the tests it ran.
    pub fn judge(&self, run: &RunResult, test_files: &[String]) -> Judged {
        Judged::new(run, self.bug_exit_code, test_files, self.output_tail_chars)
    }
}

/// `Err` naming the field when `bug_exit_code` or `test_timeout_secs` cannot
/// work.
pub fn check_run_limits(bug_exit_code: BugExit, test_timeout_secs: u64) -> Result<(), String> {
    bug_exit_code
        .check()
        .map_err(|why| format!("config.bug_exit_code: {why}"))?;
    if test_timeout_secs == 0 {
        return Err("config.test_timeout_secs: must be at least 1".into());
    }
    Ok(())
}

/// A finish's patch as the runs of an arm need it: which files are tests
/// (the skill's `test_patterns`) and which are the fix, and the diffs a
/// scratch copy of the base applies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parts {
    /// Test files the patch adds or changes (not deletes), in patch order.
    pub tests: Vec<String>,
    /// Every other file the patch touches: the fix.
    pub fix: Vec<String>,
    /// The test files' sections of the diff: the tests alone on the base.
    pub test_diff: String,
    /// Every section of the diff but the binary ones: the whole patch.
    pub whole_diff: String,
    /// Binary files: a scratch copy cannot apply them, so runs go without.
    pub binary: Vec<String>,
}

impl Parts {
    /// Split `patch`. `Err` only when its text and its parsed files disagree,
    /// which a patch from the host never does.
    pub fn of(patch: &Patch) -> Result<Parts, String> {
        let sections = diff::sections(&patch.raw);
        if sections.len() != patch.files.len() {
            return Err(format!(
                "the patch names {} files but its text has {} `diff --git` sections",
                patch.files.len(),
                sections.len()
            ));
        }
        let mut parts = Parts::default();
        for (file, section) in patch.files.iter().zip(sections) {
            let path = file.path.clone();
            match (file.is_test, file.status) {
                (true, FileStatus::Deleted) => {}
                (true, _) => parts.tests.push(path.clone()),
                (false, _) => parts.fix.push(path.clone()),
            }
            if file.binary {
                parts.binary.push(path);
                continue;
            }
            if file.is_test {
                parts.test_diff.push_str(section);
            }
            parts.whole_diff.push_str(section);
        }
        Ok(parts)
    }

    /// The test files a run names for `{test_files}`: those the patch keeps,
    /// not binary, ending with one of `config.test_file_suffixes` (any, when
    /// empty), and not named in `config.skip_files`.
    pub fn runnable_tests(&self, config: &TestRuns) -> Vec<String> {
        let suffixes = &config.test_file_suffixes;
        self.tests
            .iter()
            .filter(|p| !self.binary.contains(p))
            .filter(|p| suffixes.is_empty() || suffixes.iter().any(|s| p.ends_with(s.as_str())))
            .filter(|p| {
                let name = p.rsplit('/').next().unwrap_or(p);
                !config.skip_files.iter().any(|g| name_matches(g, name))
            })
            .cloned()
            .collect()
    }

    /// A note for the verdict when binary files were left out of the runs.
    pub fn notes(&self) -> Vec<String> {
        if self.binary.is_empty() {
            return Vec::new();
        }
        vec![format!(
            "binary files left out of the test runs (a scratch copy cannot apply them): {}",
            self.binary.join(", ")
        )]
    }
}

/// One run and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    /// Its meaning under the reproduction rules.
    pub outcome: Outcome,
    /// The end of its output.
    pub tail: String,
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
}

impl Judged {
    /// Classify `run` of `test_files` with the bug-present exit `bug`,
    /// keeping the last `tail_chars` characters of its output.
    pub fn new(run: &RunResult, bug: BugExit, test_files: &[String], tail_chars: usize) -> Judged {
        let files: Vec<&str> = test_files.iter().map(String::as_str).collect();
        Judged {
            outcome: Outcome::of(run, bug, &files),
            tail: tail(run, tail_chars),
            exit_code: run.exit_code,
        }
    }

    /// Whether the run detected the bug (and did not crash).
    pub fn reproduces(&self) -> bool {
        self.outcome == Outcome::BugDetected
    }

    /// Whether the run passed.
    pub fn passes(&self) -> bool {
        self.outcome == Outcome::Pass
    }

    /// Why the run said nothing about the code, when it could not run at
    /// all: the setup is wrong, not the agent's work.
    pub fn not_run(&self) -> Option<&str> {
        match &self.outcome {
            Outcome::NotRun(why) => Some(why),
            _ => None,
        }
    }

    /// The run for the verdict's metadata.
    pub fn metadata(&self, timeout_secs: u64) -> Value {
        json!({
            "outcome": outcome_name(&self.outcome),
            "detail": self.outcome.describe(timeout_secs),
            "exit_code": self.exit_code,
        })
    }
}

/// Whether file name `name` matches `glob`, where `*` matches any run of
/// characters.
fn name_matches(glob: &str, name: &str) -> bool {
    let mut parts = glob.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// A stable name for an outcome, for metadata.
fn outcome_name(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Pass => "pass",
        Outcome::BugDetected => "bug_detected",
        Outcome::Crash(_) => "crash",
        Outcome::OtherExit(_) => "other_exit",
        Outcome::TimedOut => "timed_out",
        Outcome::Signal(_) => "signal",
        Outcome::NotRun(_) => "not_run",
    }
}

/// What a test run on the unfixed code should have done and did not, for a
/// follow-up (`None` when it reproduced the bug). `command` is the command
/// line as run.
pub fn not_a_reproduction(
    run: &Judged,
    command: &str,
    bug: BugExit,
    timeout_secs: u64,
) -> Option<String> {
    let did = run.outcome.describe(timeout_secs);
    let why = match &run.outcome {
        Outcome::BugDetected | Outcome::NotRun(_) => return None,
        Outcome::Pass => "It passes while the bug is present, so it does not detect the bug. \
                          Make it check the behavior the issue reports, with the inputs the \
                          issue gives, so that it fails while the bug is present"
            .to_string(),
        Outcome::Crash(_) => "A crash of the test itself is not a reproduction: it would fail \
                              for reasons unrelated to the bug. Make the test run and fail on \
                              the bug itself"
            .to_string(),
        Outcome::OtherExit(_) => format!(
            "The bug-present exit is {}; make the test fail with it while the bug is present",
            bug.phrase()
        ),
        Outcome::TimedOut | Outcome::Signal(_) => {
            "Make the test end on its own, quickly, with a bounded input or an explicit \
             timeout around the call that hangs"
                .to_string()
        }
    };
    Some(format!(
        "On the unfixed code, `{command}` {did}. {why}.{}",
        quote_output(&run.tail)
    ))
}

/// What a test run with the fix did instead of passing, for a follow-up
/// (`None` when it passed). `command` is the command line as run.
pub fn not_a_pass(run: &Judged, command: &str, timeout_secs: u64) -> Option<String> {
    if run.passes() || run.not_run().is_some() {
        return None;
    }
    Some(format!(
        "With the fix applied, `{command}` {}; it must pass (exit 0) there.{}",
        run.outcome.describe(timeout_secs),
        quote_output(&run.tail)
    ))
}

/// `tail` as a fenced block after a blank line (nothing when empty), the
/// fence longer than any run of backticks in it.
fn quote_output(tail: &str) -> String {
    if tail.trim().is_empty() {
        return String::new();
    }
    let longest = tail.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("\n\nOutput (last lines):\n{fence}\n{tail}\n{fence}")
}

/// The error for a run that could not start: the command, the setup or the
/// patch is wrong, not the agent's test.
pub fn cannot_run(field: &str, command: &str, why: &str) -> String {
    format!(
        "cannot run `{command}` in a scratch copy of the base: {why}; check config.{field} \
         (and that the patch applies to its base commit)"
    )
}

/// The fail-to-pass result of a finish, for tabulating arms: whether the
/// test failed on the base as a reproduction, and whether it passed with
/// the whole patch (`None` where the arm has no fix to run it with).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct F2p {
    /// The test, on the unfixed code, detected the bug (and did not crash).
    pub fails_on_base: bool,
    /// The test passed with the patch applied; `None`: not applicable.
    pub passes_on_patch: Option<bool>,
}

/// What the patch changes, for the verdict: each file with its status,
/// whether it is a test, and its added and removed lines, and the totals.
fn changes(patch: &Patch) -> Value {
    let files: Vec<Value> = patch
        .files
        .iter()
        .map(|f| {
            json!({
                "path": f.path,
                "status": f.status,
                "is_test": f.is_test,
                "binary": f.binary,
                "added": f.added,
                "removed": f.removed,
            })
        })
        .collect();
    let paths = |test: bool| -> Vec<&str> {
        patch
            .files
            .iter()
            .filter(|f| f.is_test == test)
            .map(|f| f.path.as_str())
            .collect()
    };
    json!({
        "files": files,
        "test_files": paths(true),
        "source_files": paths(false),
        "added": patch.files.iter().map(|f| f.added).sum::<usize>(),
        "removed": patch.files.iter().map(|f| f.removed).sum::<usize>(),
    })
}

/// An arm's answer: fired with `followup` when there is one, else passed;
/// its metadata `{"arm", "summary", "changes"}` and the keys of `extra`.
pub fn answer(
    arm: &str,
    patch: &Patch,
    followup: Option<String>,
    summary: impl Into<String>,
    extra: Value,
) -> DetectorOutput {
    let mut metadata = Map::new();
    metadata.insert("arm".into(), arm.into());
    metadata.insert("summary".into(), Value::String(summary.into()));
    metadata.insert("changes".into(), changes(patch));
    if let Value::Object(extra) = extra {
        metadata.extend(extra);
    }
    match followup {
        Some(text) => DetectorOutput::fire(text),
        None => DetectorOutput::pass(),
    }
    .with_metadata(Value::Object(metadata))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TestInput;

    const SOURCE: &str = "diff --git a/pkg/m.py b/pkg/m.py\n--- a/pkg/m.py\n+++ b/pkg/m.py\n\
                          @@ -1 +1 @@\n-x = 1\n+x = 2\n";
    const TEST: &str = "diff --git a/tests/test_m.py b/tests/test_m.py\nnew file mode 100644\n\
                        --- /dev/null\n+++ b/tests/test_m.py\n@@ -0,0 +1,2 @@\n+def test_x():\n\
                        +    assert 1\n";
    const DATA: &str = "diff --git a/tests/data.bin b/tests/data.bin\nnew file mode 100644\n\
                        Binary files /dev/null and b/tests/data.bin differ\n";
    const GONE: &str = "diff --git a/tests/test_old.py b/tests/test_old.py\ndeleted file mode \
                        100644\n--- a/tests/test_old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x = 1\n";

    fn input(diff: &str, config: Value) -> DetectorInput {
        TestInput::new().diff(diff).config(config).build()
    }

    #[test]
    fn config_errors_name_the_field() {
        let i = input("", json!({"test_timeout_secs": "ten"}));
        let e = config::<TestRuns>(&i).unwrap_err();
        assert!(
            e.starts_with("config.test_timeout_secs: invalid type"),
            "{e}"
        );
        let e = config::<TestRuns>(&input("", json!({"rounds": 3}))).unwrap_err();
        assert!(
            e.starts_with("config.rounds: unknown field `rounds`, expected one of"),
            "{e}"
        );
        let e = config::<TestRuns>(&input("", json!({"bug_exit_code": "any"}))).unwrap_err();
        assert!(e.starts_with("config.bug_exit_code: "), "{e}");
        let c: TestRuns = config(&input("", Value::Null)).unwrap();
        assert_eq!(c, TestRuns::default());
        c.validate().unwrap();
        let bad = TestRuns {
            test_command: TestCommand(vec![TEST_FILES.into()]),
            ..TestRuns::default()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .starts_with("config.test_command"));
        let bad = TestRuns {
            bug_exit_code: BugExit::Code(0),
            ..TestRuns::default()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .starts_with("config.bug_exit_code"));
        let bad = TestRuns {
            test_timeout_secs: 0,
            ..TestRuns::default()
        };
        assert!(bad
            .validate()
            .unwrap_err()
            .starts_with("config.test_timeout_secs"));
    }

    #[test]
    fn the_placeholder_expands_to_the_test_files() {
        let c = TestCommand::default();
        let files = vec!["tests/test_a.py".to_string(), "tests/b c.py".to_string()];
        assert_eq!(
            c.argv(&files)[5..],
            ["no:cacheprovider", "tests/test_a.py", "tests/b c.py"]
        );
        assert_eq!(
            c.line(&files),
            "python3 -m pytest -rA -p no:cacheprovider tests/test_a.py 'tests/b c.py'"
        );
        let script = TestCommand(vec!["python3".into(), "reproduction.py".into()]);
        assert_eq!(script.argv(&files), ["python3", "reproduction.py"]);
        assert!(TestCommand(vec![])
            .check("brt.command")
            .unwrap_err()
            .starts_with("config.brt.command"));
    }

    #[test]
    fn the_patch_splits_into_tests_and_fix() {
        let i = input(&format!("{SOURCE}{TEST}{DATA}{GONE}"), Value::Null);
        let p = Parts::of(&i.patch).unwrap();
        assert_eq!(p.tests, ["tests/test_m.py", "tests/data.bin"]);
        assert_eq!(p.fix, ["pkg/m.py"]);
        assert_eq!(p.test_diff, format!("{TEST}{GONE}"));
        assert_eq!(p.whole_diff, format!("{SOURCE}{TEST}{GONE}"));
        assert_eq!(p.binary, ["tests/data.bin"]);
        assert!(p.notes()[0].contains("tests/data.bin"));
        assert_eq!(p.runnable_tests(&TestRuns::default()), ["tests/test_m.py"]);
        let any_suffix = TestRuns {
            test_file_suffixes: Vec::new(),
            ..TestRuns::default()
        };
        assert_eq!(p.runnable_tests(&any_suffix), ["tests/test_m.py"]);
        let mut broken = i.patch.clone();
        broken.raw.clear();
        assert!(Parts::of(&broken).is_err());
    }

    fn exited(code: i32, stdout: &str) -> RunResult {
        RunResult {
            exit_code: Some(code),
            stdout: stdout.into(),
            ..RunResult::default()
        }
    }

    #[test]
    fn follow_ups_say_what_the_run_did_with_its_tail() {
        let c = TestRuns::default();
        let files = ["tests/test_m.py".to_string()];
        let passed = c.judge(&exited(0, "1 passed"), &files);
        let text = not_a_reproduction(&passed, "pytest", c.bug_exit_code, 1).unwrap();
        assert!(
            text.contains("`pytest` exited 0. It passes while the bug is present"),
            "{text}"
        );
        assert!(text.contains("```\n1 passed\n```"), "{text}");
        let failed = c.judge(&exited(1, "1 failed"), &files);
        assert!(failed.reproduces());
        assert_eq!(
            not_a_reproduction(&failed, "pytest", c.bug_exit_code, 1),
            None
        );
        let text = not_a_pass(&failed, "pytest", 1).unwrap();
        assert!(
            text.contains("With the fix applied, `pytest` failed"),
            "{text}"
        );
        assert_eq!(not_a_pass(&passed, "pytest", 1), None);
        let hung = c.judge(
            &RunResult {
                timed_out: true,
                ..RunResult::default()
            },
            &files,
        );
        assert!(not_a_reproduction(&hung, "pytest", c.bug_exit_code, 7)
            .unwrap()
            .contains("did not finish within 7 s"));
        let missing = c.judge(
            &RunResult {
                error: Some("program not found".into()),
                ..RunResult::default()
            },
            &files,
        );
        assert_eq!(missing.not_run(), Some("program not found"));
        assert_eq!(not_a_reproduction(&missing, "x", c.bug_exit_code, 1), None);
        assert_eq!(missing.metadata(1)["outcome"], "not_run");
        let no_pytest = RunResult {
            exit_code: Some(1),
            stderr: "/usr/bin/python3: No module named pytest\n".into(),
            ..RunResult::default()
        };
        assert_eq!(
            c.judge(&no_pytest, &files).not_run(),
            Some("the test runner did not start (No module named pytest)")
        );
        let raised = RunResult {
            exit_code: Some(1),
            stderr: "Traceback (most recent call last):\n  File \"tests/test_m.py\", line 1\n\
                     ValueError: No module named x\n"
                .into(),
            ..RunResult::default()
        };
        assert_eq!(c.judge(&raised, &files).not_run(), None);
    }

    #[test]
    fn scratch_scripts_are_not_handed_to_the_test_runner() {
        assert!(name_matches("reproduction.py", "reproduction.py"));
        assert!(name_matches("reproduce*.py", "reproduce_bug.py"));
        assert!(name_matches("reproduce*.py", "reproduce.py"));
        assert!(!name_matches("reproduce*.py", "test_reproduce.py"));
        assert!(name_matches("a*b*c", "aXbYc") && !name_matches("a*b*c", "aXcYb"));
        let parts = Parts {
            tests: vec![
                "reproduction.py".into(),
                "tests/test_m.py".into(),
                "tests/reproduce_it.py".into(),
            ],
            ..Parts::default()
        };
        assert_eq!(
            parts.runnable_tests(&TestRuns::default()),
            ["tests/test_m.py"]
        );
        let all = TestRuns {
            skip_files: Vec::new(),
            ..TestRuns::default()
        };
        assert_eq!(parts.runnable_tests(&all).len(), 3);
    }

    #[test]
    fn a_fence_outlasts_the_backticks_it_quotes() {
        let q = quote_output("a ```` b");
        assert!(q.contains("\n`````\na ```` b\n`````"), "{q}");
        assert_eq!(quote_output("  \n"), "");
    }

    #[test]
    fn answers_carry_the_arm_and_the_changes() {
        let i = input(&format!("{SOURCE}{TEST}"), Value::Null);
        let out = answer(
            "x",
            &i.patch,
            Some("again".into()),
            "s",
            json!({"f2p": null}),
        );
        assert!(out.triggered);
        let m = &out.metadata;
        assert_eq!(
            (m["arm"].as_str(), m["summary"].as_str()),
            (Some("x"), Some("s"))
        );
        assert!(m["f2p"].is_null() && m.get("f2p").is_some());
        assert_eq!(m["changes"]["test_files"], json!(["tests/test_m.py"]));
        assert_eq!(m["changes"]["source_files"], json!(["pkg/m.py"]));
        assert_eq!(
            (
                m["changes"]["added"].as_u64(),
                m["changes"]["removed"].as_u64()
            ),
            (Some(3), Some(1))
        );
        assert_eq!(m["changes"]["files"][1]["status"], "added");
        let f2p = serde_json::to_value(F2p {
            fails_on_base: true,
            passes_on_patch: None,
        })
        .unwrap();
        assert_eq!(f2p, json!({"fails_on_base": true, "passes_on_patch": null}));
    }
}

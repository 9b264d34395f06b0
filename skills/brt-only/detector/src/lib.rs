//! The BRT-only arm: test generation alone. The patch may change test files
//! only (the skill's `test_patterns`), and its tests, run on the base, must
//! detect the bug by the reproduction rules CoHarden's Round 0 uses: a
//! failing run that is not a crash of the test itself. A rejection says why,
//! with the end of the run's output; the manifest's `max_iterations` bounds
//! the retries.

use critic_sdk::arms::{
    self, answer, cannot_run, not_a_reproduction, F2p, Judged, Parts, TestRuns,
};
use critic_sdk::host::run;
use critic_sdk::{DetectorInput, DetectorOutput, Patch};
use serde_json::{json, Value};

/// The arm's name in the verdict's metadata.
pub const ARM: &str = "brt-only";

/// The detector.
pub fn detect(input: &DetectorInput) -> Result<DetectorOutput, String> {
    let config: TestRuns = arms::config(input)?;
    config.validate()?;
    let patch = &input.patch;
    let parts = Parts::of(patch)?;
    if let Some(out) = unfit(&config, patch, &parts) {
        return Ok(out);
    }
    let tests = parts.runnable_tests(&config);
    let result = run(&config.request(&parts.test_diff, &tests))?;
    judge(
        &config,
        patch,
        &parts,
        &tests,
        &config.judge(&result, &tests),
    )
}

/// The answer to a patch that cannot be run as this arm's test: one that
/// changes non-test files, or has no test to run. `None` when it can.
pub fn unfit(config: &TestRuns, patch: &Patch, parts: &Parts) -> Option<DetectorOutput> {
    let reject = |problem: &str, summary: String, text: String| {
        Some(answer(
            ARM,
            patch,
            Some(text),
            summary,
            json!({ "problem": problem, "f2p": Value::Null, "notes": parts.notes() }),
        ))
    };
    if !parts.fix.is_empty() {
        return reject(
            "source_edit",
            format!("the patch changes non-test files: {}", parts.fix.join(", ")),
            format!(
                "This task asks for tests only, but your patch also changes files that are not \
                 tests:\n{}\n\nRestore them (`git checkout -- <file>`, or delete a file you \
                 created) and keep your changes in test files, then call `finish` again.",
                parts
                    .fix
                    .iter()
                    .map(|p| format!("- `{p}`"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
        );
    }
    if parts.runnable_tests(config).is_empty() {
        let skipped = skipped_tests(config, parts);
        let have = if parts.tests.is_empty() {
            "Your patch has no test.".to_string()
        } else if !skipped.is_empty() {
            format!(
                "Your patch's only tests are {}, which the test command leaves out: a scratch \
                 script such as `reproduction.py` is not one of the project's tests.",
                skipped.join(", ")
            )
        } else {
            format!(
                "Your patch has no test file to run: the test command runs test files ending \
                 with {} only.",
                config.test_file_suffixes.join(" or ")
            )
        };
        return reject(
            "no_test",
            "the patch has no test to run".into(),
            format!(
                "{have} Write a test that fails on the current code because of the issue, \
                 integrated into the project's test framework, and call `finish` again."
            ),
        );
    }
    None
}

/// The patch's test files that have a test file's name but that the test
/// command leaves out (`skip_files`: scratch scripts), as `` `path` ``.
fn skipped_tests(config: &TestRuns, parts: &Parts) -> Vec<String> {
    let runnable = parts.runnable_tests(config);
    parts
        .tests
        .iter()
        .filter(|p| !runnable.contains(p))
        .filter(|p| {
            let suffixes = &config.test_file_suffixes;
            suffixes.is_empty() || suffixes.iter().any(|s| p.ends_with(s.as_str()))
        })
        .map(|p| format!("`{p}`"))
        .collect()
}

/// The answer once the tests ran on the base: accepted when they detect
/// the bug, else rejected with what they did and the output's tail.
pub fn judge(
    config: &TestRuns,
    patch: &Patch,
    parts: &Parts,
    tests: &[String],
    base: &Judged,
) -> Result<DetectorOutput, String> {
    let command = config.test_command.line(tests);
    if let Some(why) = base.not_run() {
        return Err(cannot_run("test_command", &command, why));
    }
    let timeout = config.test_timeout_secs;
    let problem = not_a_reproduction(base, &command, config.bug_exit_code, timeout);
    let summary = format!("on the base, the tests {}", base.outcome.describe(timeout));
    let metadata = json!({
        "problem": problem.as_ref().map(|_| "not_reproduced"),
        "test_files": tests,
        "test_command": command,
        "base": base.metadata(timeout),
        "f2p": F2p { fails_on_base: base.reproduces(), passes_on_patch: None },
        "notes": parts.notes(),
    });
    let followup = problem.map(|why| {
        format!(
            "Your tests must fail on the current code because of the issue. {why}\n\n\
             Fix the tests and call `finish` again."
        )
    });
    Ok(answer(ARM, patch, followup, summary, metadata))
}

critic_sdk::export_detector!(detect);

#[cfg(test)]
mod tests {
    use super::*;
    use critic_sdk::{RunResult, TestInput};

    const SOURCE: &str = "diff --git a/intervals/merge.py b/intervals/merge.py\n\
        --- a/intervals/merge.py\n+++ b/intervals/merge.py\n@@ -1 +1 @@\n-if a < b:\n+if a <= b:\n";
    const TEST: &str = "diff --git a/tests/test_touch.py b/tests/test_touch.py\nnew file mode \
        100644\n--- /dev/null\n+++ b/tests/test_touch.py\n@@ -0,0 +1,2 @@\n+def test_touch():\n\
        +    assert False\n";
    const DATA: &str = "diff --git a/tests/cases.json b/tests/cases.json\nnew file mode 100644\n\
        --- /dev/null\n+++ b/tests/cases.json\n@@ -0,0 +1 @@\n+[]\n";

    fn split(diff: &str) -> (Patch, Parts) {
        let patch = TestInput::new().diff(diff).build().patch;
        let parts = Parts::of(&patch).unwrap();
        (patch, parts)
    }

    fn exited(code: i32, stdout: &str, stderr: &str) -> RunResult {
        RunResult {
            exit_code: Some(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
            ..RunResult::default()
        }
    }

    fn judged(diff: &str, run: &RunResult) -> DetectorOutput {
        let config = TestRuns::default();
        let (patch, parts) = split(diff);
        let tests = parts.runnable_tests(&config);
        judge(&config, &patch, &parts, &tests, &config.judge(run, &tests)).unwrap()
    }

    #[test]
    fn a_source_edit_is_rejected_naming_the_files() {
        let (patch, parts) = split(&format!("{TEST}{SOURCE}"));
        let out = unfit(&TestRuns::default(), &patch, &parts).unwrap();
        assert!(out.triggered);
        let text = out.followup_text.unwrap();
        assert!(text.contains("- `intervals/merge.py`"), "{text}");
        assert!(!text.contains("tests/test_touch.py"), "{text}");
        assert_eq!(out.metadata["problem"], "source_edit");
        assert!(out.metadata["f2p"].is_null());
        assert_eq!(out.metadata["arm"], "brt-only");
    }

    #[test]
    fn a_patch_without_a_runnable_test_is_rejected() {
        let (patch, parts) = split("");
        let out = unfit(&TestRuns::default(), &patch, &parts).unwrap();
        assert!(out
            .followup_text
            .unwrap()
            .starts_with("Your patch has no test."));
        let (patch, parts) = split(DATA);
        let out = unfit(&TestRuns::default(), &patch, &parts).unwrap();
        let text = out.followup_text.unwrap();
        assert!(text.contains("no test file to run"), "{text}");
        assert!(text.contains("ending with .py only"), "{text}");
        let (patch, parts) = split(&format!("{TEST}{DATA}"));
        assert!(unfit(&TestRuns::default(), &patch, &parts).is_none());
    }

    #[test]
    fn a_scratch_script_alone_is_named_as_what_the_tests_leave_out() {
        let scratch = "diff --git a/reproduction.py b/reproduction.py\nnew file mode 100644\n\
                       --- /dev/null\n+++ b/reproduction.py\n@@ -0,0 +1 @@\n+assert False\n";
        // The skill's test_patterns make it a test file.
        let mut patch = TestInput::new().diff(scratch).build().patch;
        patch.files[0].is_test = true;
        let parts = Parts::of(&patch).unwrap();
        let text = unfit(&TestRuns::default(), &patch, &parts)
            .unwrap()
            .followup_text
            .unwrap();
        assert!(
            text.contains("`reproduction.py`, which the test command leaves out"),
            "{text}"
        );
        assert!(!text.contains("ending with"), "{text}");
    }

    #[test]
    fn a_test_that_fails_on_the_base_is_accepted() {
        let out = judged(
            TEST,
            &exited(1, "FAILED tests/test_touch.py::test_touch", ""),
        );
        assert!(!out.triggered, "{:?}", out.followup_text);
        let m = &out.metadata;
        assert_eq!(
            m["f2p"],
            json!({"fails_on_base": true, "passes_on_patch": null})
        );
        assert_eq!(m["base"]["outcome"], "bug_detected");
        assert!(m["problem"].is_null());
        assert_eq!(
            m["test_command"],
            "python3 -m pytest -rA -p no:cacheprovider tests/test_touch.py"
        );
    }

    #[test]
    fn a_passing_or_crashing_test_is_rejected_with_the_tail() {
        let out = judged(TEST, &exited(0, "1 passed in 0.01s", ""));
        assert!(out.triggered);
        let text = out.followup_text.unwrap();
        assert!(text.contains("exited 0"), "{text}");
        assert!(text.contains("1 passed in 0.01s"), "{text}");
        assert_eq!(out.metadata["f2p"]["fails_on_base"], false);
        assert_eq!(out.metadata["problem"], "not_reproduced");
        assert_eq!(out.metadata["base"]["outcome"], "pass");
        let crash = "Traceback (most recent call last):\n  File \"tests/test_touch.py\", line 1\n\
                     ImportError: cannot import name 'nope'\n";
        let out = judged(TEST, &exited(1, "", crash));
        let text = out.followup_text.unwrap();
        assert!(text.contains("crashed before checking anything"), "{text}");
        assert!(
            text.contains("ImportError: cannot import name 'nope'"),
            "{text}"
        );
        assert_eq!(out.metadata["base"]["outcome"], "crash");
    }

    #[test]
    fn a_run_that_cannot_start_is_an_error_naming_the_field() {
        let config = TestRuns::default();
        let (patch, parts) = split(TEST);
        let tests = parts.runnable_tests(&config);
        let missing = RunResult {
            error: Some("program not found".into()),
            ..RunResult::default()
        };
        let e = judge(
            &config,
            &patch,
            &parts,
            &tests,
            &config.judge(&missing, &tests),
        )
        .unwrap_err();
        assert!(
            e.contains("program not found") && e.contains("config.test_command"),
            "{e}"
        );
    }

    #[test]
    fn bad_config_names_the_field() {
        let e = TestInput::new()
            .config(json!({"test_command": []}))
            .run(detect)
            .unwrap_err();
        assert!(e.starts_with("config.test_command: "), "{e}");
        let e = TestInput::new()
            .config(json!({"gate": true}))
            .run(detect)
            .unwrap_err();
        assert!(e.starts_with("config.gate: unknown field"), "{e}");
    }
}

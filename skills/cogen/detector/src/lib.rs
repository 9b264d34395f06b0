//! The vanilla cogeneration arm: one agent writes the fix and its test
//! together, and the gate is fail-to-pass of the agent's own test. Its test
//! files alone, applied to the base, must detect the bug (the reproduction
//! rules CoHarden uses); the whole patch must make them pass. A patch
//! without a test or without a fix is rejected before anything runs; a
//! broken half is named, with the end of its run's output. The manifest's
//! `max_iterations` bounds the retries (0: the paper's single attempt,
//! judged but never sent back).

use critic_sdk::arms::{
    self, answer, cannot_run, not_a_pass, not_a_reproduction, F2p, Judged, Parts, TestRuns,
};
use critic_sdk::host::run_matrix;
use critic_sdk::{DetectorInput, DetectorOutput, Patch};
use serde_json::{json, Value};

/// The arm's name in the verdict's metadata.
pub const ARM: &str = "cogen";

/// How to check fail-to-pass by hand, closing every rejection after a run.
const CHECK_YOURSELF: &str = "Check fail-to-pass yourself before calling `finish`: set the fix \
aside (`git stash push <fix files>`), run your test (it must fail because of the bug), bring the \
fix back (`git stash pop`) and run it again (it must pass).";

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
    let requests = [
        config.request(&parts.test_diff, &tests),
        config.request(&parts.whole_diff, &tests),
    ];
    let results = run_matrix(&requests)?;
    let [base, fixed] = results.as_slice() else {
        return Err(format!(
            "the host answered {} runs for 2 requests",
            results.len()
        ));
    };
    judge(
        &config,
        patch,
        &parts,
        &tests,
        [&config.judge(base, &tests), &config.judge(fixed, &tests)],
    )
}

/// The patch's test files that have a test file's name but that the test
/// command leaves out (`skip_files`: scratch scripts), as `` `a`, `b` ``.
fn skipped_tests(config: &TestRuns, parts: &Parts) -> Option<String> {
    let runnable = parts.runnable_tests(config);
    let skipped: Vec<String> = parts
        .tests
        .iter()
        .filter(|p| !runnable.contains(p))
        .filter(|p| {
            let suffixes = &config.test_file_suffixes;
            suffixes.is_empty() || suffixes.iter().any(|s| p.ends_with(s.as_str()))
        })
        .map(|p| format!("`{p}`"))
        .collect();
    (!skipped.is_empty()).then(|| skipped.join(", "))
}

/// The answer to a patch that is not a fix and a test: one without a test
/// to run, or without a change to any other file. `None` when it is both.
pub fn unfit(config: &TestRuns, patch: &Patch, parts: &Parts) -> Option<DetectorOutput> {
    let (problem, summary, text) = if parts.runnable_tests(config).is_empty() {
        (
            "no_test",
            "the patch has no test to run",
            format!(
                "Your patch has no test{}. Both the fix and a test that reproduces the issue \
                 must be in your final patch: integrate the test into the project's test \
                 framework, next to the fix, and call `finish` again.",
                if parts.tests.is_empty() {
                    String::new()
                } else if let Some(skipped) = skipped_tests(config, parts) {
                    format!(
                        " in the project's test suite ({skipped} is left out by the test \
                         command: a scratch script such as `reproduction.py` is not one of the \
                         project's tests)"
                    )
                } else {
                    format!(
                        " file to run (the test command runs test files ending with {} only)",
                        config.test_file_suffixes.join(" or ")
                    )
                }
            ),
        )
    } else if parts.fix.is_empty() {
        (
            "no_fix",
            "the patch has a test but no fix",
            "Your patch holds a test but no fix: it changes test files only. Both the fix and \
             the test must be in your final patch: change the source files that contain the \
             bug, keep the test next to them, and call `finish` again."
                .to_string(),
        )
    } else {
        return None;
    };
    Some(answer(
        ARM,
        patch,
        Some(text),
        summary,
        json!({ "problem": problem, "f2p": Value::Null, "notes": parts.notes() }),
    ))
}

/// The answer once the test ran alone on the base and with the whole patch:
/// accepted when it went from failing (a reproduction) to passing.
pub fn judge(
    config: &TestRuns,
    patch: &Patch,
    parts: &Parts,
    tests: &[String],
    [base, fixed]: [&Judged; 2],
) -> Result<DetectorOutput, String> {
    let command = config.test_command.line(tests);
    if let Some(why) = base.not_run().or(fixed.not_run()) {
        return Err(cannot_run("test_command", &command, why));
    }
    let timeout = config.test_timeout_secs;
    let halves: Vec<String> = [
        not_a_reproduction(base, &command, config.bug_exit_code, timeout)
            .map(|why| format!("**Your test does not fail without your fix.** {why}")),
        not_a_pass(fixed, &command, timeout)
            .map(|why| format!("**Your test does not pass with your fix.** {why}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let f2p = F2p {
        fails_on_base: base.reproduces(),
        passes_on_patch: Some(fixed.passes()),
    };
    let summary = if halves.is_empty() {
        "fail-to-pass: the test detects the bug on the base and passes with the fix".to_string()
    } else {
        format!(
            "not fail-to-pass: on the base the test {}; with the fix it {}",
            base.outcome.describe(timeout),
            fixed.outcome.describe(timeout)
        )
    };
    let metadata = json!({
        "problem": (!halves.is_empty()).then_some("not_f2p"),
        "test_files": tests,
        "fix_files": parts.fix,
        "test_command": command,
        "base": base.metadata(timeout),
        "patch": fixed.metadata(timeout),
        "f2p": f2p,
        "notes": parts.notes(),
    });
    let followup = (!halves.is_empty()).then(|| {
        format!(
            "Your test must fail on the unfixed code (your test files alone, applied to the \
             base commit) and pass with your whole patch.\n\n{}\n\n{CHECK_YOURSELF}",
            halves.join("\n\n")
        )
    });
    Ok(answer(ARM, patch, followup, summary, metadata))
}

critic_sdk::export_detector!(detect);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_script_alone_is_named_as_what_the_tests_leave_out() {
        let scratch = "diff --git a/reproduction.py b/reproduction.py\nnew file mode 100644\n\
                       --- /dev/null\n+++ b/reproduction.py\n@@ -0,0 +1 @@\n+assert False\n";
        // The skill's test_patterns make it a test file.
        let mut patch = critic_sdk::TestInput::new().diff(scratch).build().patch;
        patch.files[0].is_test = true;
        let parts = Parts::of(&patch).unwrap();
        let text = unfit(&TestRuns::default(), &patch, &parts)
            .unwrap()
            .followup_text
            .unwrap();
        assert!(
            text.contains("(`reproduction.py` is left out by the test command"),
            "{text}"
        );
        assert!(!text.contains("ending with"), "{text}");
    }
    use critic_sdk::{RunResult, TestInput};

    const SOURCE: &str = "diff --git a/intervals/merge.py b/intervals/merge.py\n\
        --- a/intervals/merge.py\n+++ b/intervals/merge.py\n@@ -1 +1 @@\n-if a < b:\n+if a <= b:\n";
    const TEST: &str = "diff --git a/tests/test_touch.py b/tests/test_touch.py\nnew file mode \
        100644\n--- /dev/null\n+++ b/tests/test_touch.py\n@@ -0,0 +1,2 @@\n+def test_touch():\n\
        +    assert False\n";

    fn split(diff: &str) -> (Patch, Parts) {
        let patch = TestInput::new().diff(diff).build().patch;
        let parts = Parts::of(&patch).unwrap();
        (patch, parts)
    }

    fn exited(code: i32, stdout: &str) -> RunResult {
        RunResult {
            exit_code: Some(code),
            stdout: stdout.into(),
            ..RunResult::default()
        }
    }

    fn judged(base: &RunResult, fixed: &RunResult) -> Result<DetectorOutput, String> {
        let config = TestRuns::default();
        let (patch, parts) = split(&format!("{SOURCE}{TEST}"));
        let tests = parts.runnable_tests(&config);
        let (base, fixed) = (config.judge(base, &tests), config.judge(fixed, &tests));
        judge(&config, &patch, &parts, &tests, [&base, &fixed])
    }

    #[test]
    fn fail_to_pass_is_accepted() {
        let out = judged(&exited(1, "1 failed"), &exited(0, "1 passed")).unwrap();
        assert!(!out.triggered, "{:?}", out.followup_text);
        let m = &out.metadata;
        assert_eq!(m["arm"], "cogen");
        assert_eq!(
            m["f2p"],
            json!({"fails_on_base": true, "passes_on_patch": true})
        );
        assert_eq!(m["fix_files"], json!(["intervals/merge.py"]));
        assert!(m["problem"].is_null());
    }

    #[test]
    fn each_broken_half_is_named_with_its_tail() {
        let out = judged(&exited(0, "base: 1 passed"), &exited(0, "1 passed")).unwrap();
        let text = out.followup_text.unwrap();
        assert!(text.contains("does not fail without your fix"), "{text}");
        assert!(text.contains("base: 1 passed"), "{text}");
        assert!(!text.contains("does not pass with your fix"), "{text}");
        assert_eq!(
            out.metadata["f2p"],
            json!({"fails_on_base": false, "passes_on_patch": true})
        );
        let out = judged(&exited(1, "1 failed"), &exited(1, "fix: 1 failed")).unwrap();
        let text = out.followup_text.unwrap();
        assert!(text.contains("does not pass with your fix"), "{text}");
        assert!(text.contains("fix: 1 failed"), "{text}");
        assert!(text.contains("git stash push"), "{text}");
        assert_eq!(out.metadata["problem"], "not_f2p");
        assert_eq!(out.metadata["patch"]["outcome"], "bug_detected");
        let out = judged(&exited(0, ""), &exited(2, "")).unwrap();
        let text = out.followup_text.unwrap();
        assert!(text.contains("without your fix") && text.contains("with your fix"));
    }

    #[test]
    fn a_run_that_cannot_start_is_an_error() {
        let missing = RunResult {
            error: Some("the patch does not apply".into()),
            ..RunResult::default()
        };
        let e = judged(&exited(1, ""), &missing).unwrap_err();
        assert!(e.contains("the patch does not apply"), "{e}");
        assert!(e.contains("config.test_command"), "{e}");
    }

    #[test]
    fn a_patch_needs_a_test_and_a_fix() {
        let config = TestRuns::default();
        let (patch, parts) = split(SOURCE);
        let out = unfit(&config, &patch, &parts).unwrap();
        assert!(out
            .followup_text
            .unwrap()
            .starts_with("Your patch has no test."));
        assert_eq!(out.metadata["problem"], "no_test");
        assert!(out.metadata["f2p"].is_null());
        let (patch, parts) = split(TEST);
        let out = unfit(&config, &patch, &parts).unwrap();
        assert!(out
            .followup_text
            .unwrap()
            .contains("holds a test but no fix"));
        assert_eq!(out.metadata["problem"], "no_fix");
        let (patch, parts) = split(&format!("{SOURCE}{TEST}"));
        assert!(unfit(&config, &patch, &parts).is_none());
    }

    #[test]
    fn bad_config_names_the_field() {
        let e = TestInput::new()
            .config(json!({"bug_exit_code": 0}))
            .run(detect)
            .unwrap_err();
        assert!(e.starts_with("config.bug_exit_code: "), "{e}");
    }
}

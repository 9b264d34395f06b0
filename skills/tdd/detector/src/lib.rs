//! The TDD arm: the agent fixes the issue with a bug-reproduction test (BRT)
//! injected into its task. The BRT comes from the config (its files and the
//! command that runs them); each finish runs it on the base and on the
//! agent's patch, the BRT's files written over the patched tree so an edited
//! copy of the test does not count, and reports both in the verdict. The
//! paper does not gate on the BRT, so by default every finish is accepted;
//! with `gate: true` a BRT that does not pass on the patch rejects, with the
//! end of the run's output.

use critic_sdk::arms::{
    self, answer, cannot_run, check_run_limits, not_a_pass, F2p, Judged, Parts, TestCommand,
    DEFAULT_OUTPUT_TAIL_CHARS, DEFAULT_TEST_TIMEOUT_SECS,
};
use critic_sdk::host::run_matrix;
use critic_sdk::reproduction::BugExit;
use critic_sdk::{DetectorInput, DetectorOutput, Patch, RunRequest};
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeMap;

/// The arm's name in the verdict's metadata.
pub const ARM: &str = "tdd";

/// The injected bug-reproduction test.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Brt {
    /// The test files, by workspace-relative path, with their whole content.
    pub files: BTreeMap<String, String>,
    /// How to run them from the repository root; `{test_files}` stands for
    /// every path of `files`.
    #[serde(default)]
    pub command: TestCommand,
}

impl Brt {
    /// The BRT's paths, for `{test_files}`.
    pub fn paths(&self) -> Vec<String> {
        self.files.keys().cloned().collect()
    }

    /// The BRT's files as a run writes them over its scratch copy.
    fn written(&self) -> BTreeMap<String, Option<String>> {
        self.files
            .iter()
            .map(|(path, content)| (path.clone(), Some(content.clone())))
            .collect()
    }
}

/// The detector's configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The injected test; required.
    pub brt: Option<Brt>,
    /// Whether a BRT that does not pass on the patch rejects the finish.
    pub gate: bool,
    /// The exit that means "bug present": `nonzero` or a code.
    pub bug_exit_code: BugExit,
    /// Time limit of one run, in seconds.
    pub test_timeout_secs: u64,
    /// Characters of a run's output quoted in a follow-up.
    pub output_tail_chars: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            brt: None,
            gate: false,
            bug_exit_code: BugExit::default(),
            test_timeout_secs: DEFAULT_TEST_TIMEOUT_SECS,
            output_tail_chars: DEFAULT_OUTPUT_TAIL_CHARS,
        }
    }
}

impl Config {
    /// The BRT, once checked with the rest of the values serde cannot check.
    pub fn validate(&self) -> Result<&Brt, String> {
        check_run_limits(self.bug_exit_code, self.test_timeout_secs)?;
        let brt = self.brt.as_ref().ok_or(
            "config.brt: missing; give the injected test as \
             brt: {files: {<path>: <content>}, command: [<program>, <arg>...]}",
        )?;
        if brt.files.is_empty() {
            return Err("config.brt.files: give at least one test file".into());
        }
        if let Some(bad) = brt.files.keys().find(|p| !is_inside(p)) {
            return Err(format!(
                "config.brt.files: `{bad}` must be a relative path inside the repository"
            ));
        }
        brt.command.check("brt.command")?;
        Ok(brt)
    }
}

/// Whether `path` is relative and stays inside the repository.
fn is_inside(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && path
            .split(['/', '\\'])
            .all(|part| !part.is_empty() && part != "..")
}

/// The detector.
pub fn detect(input: &DetectorInput) -> Result<DetectorOutput, String> {
    let config: Config = arms::config(input)?;
    let brt = config.validate()?;
    let patch = &input.patch;
    let parts = Parts::of(patch)?;
    let request = |diff: Option<&str>| RunRequest {
        patch: diff.map(str::to_string),
        files: brt.written(),
        argv: brt.command.argv(&brt.paths()),
        timeout_ms: Some(config.test_timeout_secs.saturating_mul(1000)),
        ..RunRequest::default()
    };
    let results = run_matrix(&[request(None), request(Some(&parts.whole_diff))])?;
    let [base, fixed] = results.as_slice() else {
        return Err(format!(
            "the host answered {} runs for 2 requests",
            results.len()
        ));
    };
    let judge = |run| {
        Judged::new(
            run,
            config.bug_exit_code,
            &brt.paths(),
            config.output_tail_chars,
        )
    };
    report(&config, brt, patch, &parts, [&judge(base), &judge(fixed)])
}

/// The verdict on the BRT's runs on the base and on the patch: always a
/// report; a rejection only with `gate` and a BRT that does not pass.
pub fn report(
    config: &Config,
    brt: &Brt,
    patch: &Patch,
    parts: &Parts,
    [base, fixed]: [&Judged; 2],
) -> Result<DetectorOutput, String> {
    let paths = brt.paths();
    let command = brt.command.line(&paths);
    if let Some(why) = base.not_run().or(fixed.not_run()) {
        return Err(cannot_run("brt.command", &command, why));
    }
    let timeout = config.test_timeout_secs;
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let summary = format!(
        "injected test: fails on the base: {}; passes on the patch: {}",
        yes_no(base.reproduces()),
        yes_no(fixed.passes())
    );
    let touched: Vec<&str> = patch
        .files
        .iter()
        .map(|f| f.path.as_str())
        .filter(|p| brt.files.contains_key(*p))
        .collect();
    let metadata = json!({
        "gate": config.gate,
        "brt_files": paths,
        "test_command": command,
        "base": base.metadata(timeout),
        "patch": fixed.metadata(timeout),
        "f2p": F2p { fails_on_base: base.reproduces(), passes_on_patch: Some(fixed.passes()) },
        "patch_touches_brt": touched,
        "notes": parts.notes(),
    });
    let followup = not_a_pass(fixed, &command, timeout)
        .filter(|_| config.gate)
        .map(|why| {
            format!(
                "The reproduction test does not pass with your changes. {why}\n\n\
                 Fix the source code so that the test passes. The test is judged as it was \
                 given to you (its files are written over your copies), so changing it does \
                 not help."
            )
        });
    Ok(answer(ARM, patch, followup, summary, metadata))
}

critic_sdk::export_detector!(detect);

#[cfg(test)]
mod tests {
    use super::*;
    use critic_sdk::{RunResult, TestInput};
    use serde_json::Value;

    const SOURCE: &str = "diff --git a/intervals/merge.py b/intervals/merge.py\n\
        --- a/intervals/merge.py\n+++ b/intervals/merge.py\n@@ -1 +1 @@\n-if a < b:\n+if a <= b:\n";
    const BRT_EDIT: &str = "diff --git a/tests/test_brt.py b/tests/test_brt.py\n\
        --- a/tests/test_brt.py\n+++ b/tests/test_brt.py\n@@ -1 +1 @@\n-assert 0\n+assert 1\n";

    fn config(gate: bool) -> Config {
        serde_json::from_value(json!({
            "gate": gate,
            "brt": {"files": {"tests/test_brt.py": "def test_x():\n    assert 0\n"}},
        }))
        .unwrap()
    }

    fn exited(code: i32, stdout: &str) -> RunResult {
        RunResult {
            exit_code: Some(code),
            stdout: stdout.into(),
            ..RunResult::default()
        }
    }

    fn reported(gate: bool, base: &RunResult, fixed: &RunResult) -> DetectorOutput {
        let config = config(gate);
        let brt = config.validate().unwrap();
        let patch = TestInput::new()
            .diff(&format!("{SOURCE}{BRT_EDIT}"))
            .build()
            .patch;
        let parts = Parts::of(&patch).unwrap();
        let judge = |run| Judged::new(run, config.bug_exit_code, &brt.paths(), 100);
        report(&config, brt, &patch, &parts, [&judge(base), &judge(fixed)]).unwrap()
    }

    #[test]
    fn without_the_gate_a_failing_brt_is_reported_not_rejected() {
        let out = reported(false, &exited(1, "1 failed"), &exited(1, "still 1 failed"));
        assert!(!out.triggered);
        let m = &out.metadata;
        assert_eq!(m["arm"], "tdd");
        assert_eq!(m["gate"], false);
        assert_eq!(
            m["f2p"],
            json!({"fails_on_base": true, "passes_on_patch": false})
        );
        assert_eq!(m["patch"]["outcome"], "bug_detected");
        assert_eq!(m["patch_touches_brt"], json!(["tests/test_brt.py"]));
        assert_eq!(
            m["test_command"],
            "python3 -m pytest -rA -p no:cacheprovider tests/test_brt.py"
        );
        assert_eq!(
            m["summary"],
            "injected test: fails on the base: yes; passes on the patch: no"
        );
    }

    #[test]
    fn with_the_gate_a_failing_brt_rejects_with_the_tail() {
        let out = reported(true, &exited(1, "1 failed"), &exited(1, "still 1 failed"));
        assert!(out.triggered);
        let text = out.followup_text.unwrap();
        assert!(text.contains("does not pass with your changes"), "{text}");
        assert!(text.contains("still 1 failed"), "{text}");
        let out = reported(true, &exited(1, "1 failed"), &exited(0, "1 passed"));
        assert!(!out.triggered);
        assert_eq!(out.metadata["f2p"]["passes_on_patch"], true);
    }

    #[test]
    fn a_brt_that_cannot_run_is_an_error_naming_the_field() {
        let config = config(false);
        let brt = config.validate().unwrap();
        let patch = Patch::default();
        let missing = Judged::new(
            &RunResult {
                error: Some("program not found".into()),
                ..RunResult::default()
            },
            BugExit::Nonzero,
            &[],
            10,
        );
        let ok = Judged::new(&exited(1, ""), BugExit::Nonzero, &[], 10);
        let e = report(&config, brt, &patch, &Parts::default(), [&ok, &missing]).unwrap_err();
        assert!(e.contains("config.brt.command"), "{e}");
    }

    #[test]
    fn the_brt_is_required_and_checked() {
        let run = |config: Value| TestInput::new().config(config).run(detect).unwrap_err();
        assert!(run(Value::Null).starts_with("config.brt: missing"));
        let e = run(json!({"brt": {"files": {}}}));
        assert!(e.starts_with("config.brt.files: give at least one"), "{e}");
        let e = run(json!({"brt": {"files": {"../x.py": ""}}}));
        assert!(e.contains("`../x.py` must be a relative path"), "{e}");
        let e = run(json!({"brt": {"files": {"t.py": ""}, "command": [""]}}));
        assert!(e.starts_with("config.brt.command: "), "{e}");
        let e = run(json!({"brt": {"files": {"t.py": ""}, "cmd": ["x"]}}));
        assert!(e.starts_with("config.brt.cmd: unknown field"), "{e}");
        let e = run(json!({"gate": "yes"}));
        assert!(e.starts_with("config.gate: invalid type"), "{e}");
    }
}

//! Round 0, lax-init: the finish must add the reproduction test and nothing
//! else, and the test must detect the bug on the base: fail (by default any
//! non-zero exit; a failing `assert` counts) without crashing before it
//! checks anything. Success stores t0 and asks for Round 1.

use crate::change::{syntax_problem, Change};
use crate::state::{Phase, State};
use crate::{Ctx, Step};
use critic_sdk::host::run;
use critic_sdk::reproduction::{tail, Outcome};
use critic_sdk::RunRequest;
use serde_json::{json, Value};

/// Judge a Round 0 finish.
pub fn evaluate(ctx: &Ctx, state: &mut State) -> Result<Step, String> {
    let config = &ctx.config;
    let change = Change::read(&ctx.input.patch, &config.python_suffixes)
        .map_err(|u| format!("cannot read `{}` from the workspace: {}", u.path, u.reason))?;
    let mut problem = json!({
        "test_files": [config.test_file],
        "test_command": config.command_line(),
        "bug_exit": config.bug_exit_code.phrase(),
        "output_tail": "",
        "source_files": change.fix_paths,
    });
    let current = change.present_tests();
    let mut reject = |kind: &str, extra: Value, summary: String| -> Result<Step, String> {
        state.retries += 1;
        problem["problem"] = kind.into();
        if let (Value::Object(p), Value::Object(e)) = (&mut problem, extra) {
            p.extend(e);
        }
        let text = ctx.prompts.render("round0", &problem)?;
        let f2p = extra_f2p(&problem);
        Ok(Step::reject(summary, text)
            .with_metadata(json!({ "problem": kind, "f2p": f2p }))
            .with_tests(current.clone()))
    };
    if !change.fix_paths.is_empty() {
        let summary = format!(
            "Round 0 must change test files only; it also changes {}",
            change.fix_paths.join(", ")
        );
        return reject("source_edit", json!({}), summary);
    }
    let tests = change.present_tests();
    if tests.is_empty() {
        return reject("no_test", json!({}), "Round 0 has no test file".into());
    }
    if let Some((path, e)) = syntax_problem(&tests, &config.python_suffixes) {
        let summary = format!("`{path}` is not valid Python ({e})");
        return reject(
            "syntax_error",
            json!({ "path": path, "detail": e }),
            summary,
        );
    }
    let result = run(&RunRequest {
        files: tests.clone(),
        argv: config.test_command.clone(),
        timeout_ms: Some(config.test_timeout_secs * 1000),
        ..RunRequest::default()
    })?;
    let output_tail = tail(&result, config.output_tail_chars);
    let secs = config.test_timeout_secs;
    let paths: Vec<&str> = tests.keys().map(String::as_str).collect();
    let outcome = Outcome::of(&result, config.bug_exit_code, &paths);
    let (kind, detail) = match &outcome {
        Outcome::BugDetected => {
            state.t0 = tests.clone();
            state.t_ref = tests;
            state.phase = Phase::Hardening;
            state.round = 1;
            let text = ctx.prompts.render(
                "bootstrap",
                json!({
                    "test_files": state.t0.keys().collect::<Vec<_>>(),
                    "test_command": config.command_line(),
                    "bug_exit": config.bug_exit_code.phrase(),
                }),
            )?;
            return Ok(Step::reject(
                "Round 0 complete: the test detects the bug; on to Round 1",
                text,
            )
            .with_metadata(json!({
                "problem": null,
                "t0": state.t0.keys().collect::<Vec<_>>(),
                "f2p": {"fails_on_base": true, "passes_on_patch": null},
            }))
            .with_tests(current.clone()));
        }
        Outcome::NotRun(why) => return Err(config.cannot_run(why)),
        Outcome::Pass => ("passes_on_base", String::new()),
        Outcome::Crash(what) => ("crash", what.clone()),
        Outcome::OtherExit(code) => ("wrong_exit", code.to_string()),
        Outcome::TimedOut => ("timeout", format!("{secs} s")),
        Outcome::Signal(sig) => ("killed", sig.to_string()),
    };
    let summary = format!(
        "Round 0 test does not detect the bug: on the base it {}",
        outcome.describe(secs)
    );
    reject(
        kind,
        json!({ "detail": detail, "output_tail": output_tail, "ran": true }),
        summary,
    )
}

/// F->P as far as Round 0 knows it: whether the test failed on the base, when
/// it ran there; no fix yet.
fn extra_f2p(problem: &Value) -> Value {
    if problem.get("ran").is_some() {
        json!({"fails_on_base": false, "passes_on_patch": null})
    } else {
        Value::Null
    }
}

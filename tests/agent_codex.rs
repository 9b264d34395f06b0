//! The real Codex CLI (npm `@openai/codex`, `codex exec`) with the critic as
//! its `Stop` hook, installed by `critic hook install`, against a scripted
//! stand-in for the OpenAI Responses API.

mod common;

use common::agents::{
    assert_rejected_then_accepted, events_of, files_under, harness_state, home, install_hook,
    npm_bin, Standin, RAN_TESTS_FOLLOWUP,
};
use common::{skill, Repo};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};

/// Run `codex exec` on `repo` with `prompt` against `standin`. The project's
/// hooks run only in a trusted project with trusted hooks: this is the
/// command line's way of saying both.
fn codex(repo: &Path, prompt: &str, standin: &Standin, dir: &Path) -> Output {
    let codex_home = dir.join("codex-home");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            r#"model = "gpt-5.5"
model_provider = "standin"

[model_providers.standin]
name = "stand-in"
base_url = "{}/v1"
wire_api = "responses"
env_key = "STANDIN_API_KEY"

[analytics]
enabled = false

[features]
plugins = false
"#,
            standin.url()
        ),
    )
    .unwrap();
    Command::new(npm_bin("codex"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap())
        .env("HOME", home(dir))
        .env("CODEX_HOME", &codex_home)
        .env("STANDIN_API_KEY", "stand-in-key")
        .env("CRITIC_CACHE_DIR", common::cache_dir())
        .args(["exec", "--trust", "--dangerously-bypass-hook-trust"])
        .args(["-s", "workspace-write", "-C"])
        .arg(repo)
        .arg(prompt)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn input_of(request: &Value) -> String {
    request["body"]["input"].to_string()
}

#[test]
fn a_rejected_stop_sends_the_followup_to_the_model_and_the_next_stop_is_accepted() {
    let repo = Repo::new(&[("calc.py", "def add(a, b):\n    return a - b\n")]);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    install_hook("codex", repo.path(), &skill("ran-tests"), &state, &[]);
    let standin = Standin::start(
        "codex",
        &json!([
            {"tool_calls": [{"name": "apply_patch", "input":
                "*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n*** End Patch\n"}]},
            {"text": "Fixed add()."},
            // Codex yields after 10 s unless told to wait (at most 30 s).
            {"tool_calls": [{"name": "exec_command", "input": {"cmd": "python3 -m pytest -q; true", "yield_time_ms": 30000}}]},
            {"text": "Fixed add(); the tests ran."}
        ]),
    );
    let out = codex(repo.path(), "Fix add in calc.py", &standin, dir.path());
    let log = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{log}");

    let turns = standin.turns();
    let inputs: Vec<String> = turns.iter().map(input_of).collect();
    let calc = repo.path().join("calc.py");
    assert_rejected_then_accepted(&inputs, Some(&calc), &state, &log);
    let followup = RAN_TESTS_FOLLOWUP;

    // The reader on the rollout Codex just wrote.
    let rollouts = files_under(&dir.path().join("codex-home/sessions"), ".jsonl");
    assert_eq!(rollouts.len(), 1, "{rollouts:?}");
    let events = events_of(&rollouts[0]);
    let of = |kind: &'static str| events.iter().filter(move |e| e["kind"] == kind);
    let patch = of("action")
        .find(|e| e["tool"] == "apply_patch")
        .expect("the patch");
    assert!(patch["arguments"]["input"]
        .as_str()
        .unwrap()
        .contains("a + b"));
    let test_run = of("observation")
        .find(|e| e["tool"] == "exec_command")
        .expect("the test run's result");
    assert_eq!(test_run["exit_code"], 0, "`; true` makes it pass");
    let finishes: Vec<&Value> = of("finish").collect();
    assert_eq!(finishes.len(), 2, "both stops are finishes");
    assert_eq!(finishes[1]["text"], "Fixed add(); the tests ran.");
    assert!(
        of("message").all(|e| !e["text"].as_str().unwrap_or("").contains(followup)),
        "the hook's prompt is not a user message"
    );
}

#[test]
fn the_cap_ends_a_loop_codex_itself_would_never_end() {
    // Nothing is ever edited, so empty-patch rejects every stop; Codex has
    // no cap of its own, so only the critic's ends this.
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    install_hook(
        "codex",
        repo.path(),
        &skill("empty-patch"),
        &state,
        &["--max-rejections", "2"],
    );
    // The install keeps its settings out of the work tree's changes.
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    let standin = Standin::start("codex", &json!([{"text": "Nothing to change."}]));
    let out = codex(repo.path(), "Look around", &standin, dir.path());
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert_eq!(standin.turns().len(), 3);
    let states = harness_state(&state, "empty-patch");
    assert_eq!(
        (
            states[0]["iteration"].as_u64(),
            states[0]["rejections"].as_u64()
        ),
        (Some(3), Some(2))
    );
}

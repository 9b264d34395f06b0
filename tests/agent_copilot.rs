//! The real GitHub Copilot CLI (npm `@github/copilot`, `copilot -p`) with
//! the critic as its `agentStop` hook, installed by `critic hook install`,
//! against a scripted stand-in for an OpenAI-compatible chat API (Copilot's
//! bring-your-own-model mode, offline).

mod common;

use common::agents::{
    assert_rejected_then_accepted, events_of, files_under, home, install_hook, npm_bin, Standin,
    RAN_TESTS_FOLLOWUP,
};
use common::{skill, Repo};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};

/// Run `copilot -p` in `repo` (a folder it trusts, so the project's hooks
/// run) against `standin`.
fn copilot(repo: &Path, prompt: &str, standin: &Standin, dir: &Path) -> Output {
    Command::new(npm_bin("copilot"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap())
        .env("HOME", home(dir))
        // Copilot unpacks itself here on first use (about 235 MB): shared.
        .env(
            "XDG_CACHE_HOME",
            common::root().join("target/agents/copilot-cache"),
        )
        .env("COPILOT_OFFLINE", "true")
        .env("COPILOT_PROVIDER_BASE_URL", format!("{}/v1", standin.url()))
        .env("COPILOT_PROVIDER_API_KEY", "stand-in-key")
        .env("COPILOT_MODEL", "gpt-4.1")
        .env("CRITIC_CACHE_DIR", common::cache_dir())
        .args(["-p", prompt, "--allow-all-tools", "--trust-folder"])
        .args([
            "--no-auto-update",
            "--disable-client-telemetry",
            "--no-color",
        ])
        .current_dir(repo)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn messages_of(request: &Value) -> String {
    request["body"]["messages"].to_string()
}

#[test]
fn a_rejected_stop_sends_the_followup_to_the_model_and_the_next_stop_is_accepted() {
    let repo = Repo::new(&[("calc.py", "def add(a, b):\n    return a - b\n")]);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    install_hook("copilot", repo.path(), &skill("ran-tests"), &state, &[]);
    let calc = repo.path().join("calc.py");
    let standin = Standin::start(
        "copilot",
        &json!([
            {"tool_calls": [{"name": "edit", "input": {
                "path": calc, "old_str": "a - b", "new_str": "a + b"}}]},
            {"text": "Fixed add()."},
            {"tool_calls": [{"name": "bash", "input": {
                "command": "python3 -m pytest -q; true", "description": "Run the tests"}}]},
            {"text": "Fixed add(); the tests ran."}
        ]),
    );
    let out = copilot(repo.path(), "Fix add in calc.py", &standin, dir.path());
    let log = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{log}");
    let turns = standin.turns();
    let inputs: Vec<String> = turns.iter().map(messages_of).collect();
    assert_rejected_then_accepted(&inputs, Some(&calc), &state, &log);
    let followup = RAN_TESTS_FOLLOWUP;

    let logs = files_under(
        &dir.path().join("home/.copilot/session-state"),
        "events.jsonl",
    );
    assert_eq!(logs.len(), 1, "{logs:?}");
    let events = events_of(&logs[0]);
    let of = |kind: &'static str| events.iter().filter(move |e| e["kind"] == kind);
    assert!(of("action").any(|e| e["tool"] == "edit"));
    let run = of("observation")
        .find(|e| e["tool"] == "bash")
        .expect("the test run");
    assert_eq!(run["exit_code"], 0);
    let finishes: Vec<&Value> = of("finish").collect();
    assert_eq!(finishes.len(), 2, "both stops are finishes");
    assert!(
        of("message").all(|e| !e["text"].as_str().unwrap_or("").contains(followup)),
        "the hook's follow-up is not the user's message"
    );
}

//! The real Gemini CLI (npm `@google/gemini-cli`, `gemini -p`) with the
//! critic as its `AfterAgent` hook, installed by `critic hook install`,
//! against a scripted stand-in for the Gemini API.

mod common;

use common::agents::{
    assert_rejected_then_accepted, events_of, files_under, harness_state, home, install_hook,
    npm_bin, Standin,
};
use common::{skill, Repo};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};

/// Run `gemini -p` in `repo` against `standin`, with an API key (the
/// stand-in's), no telemetry and the workspace trusted, so the project's
/// hooks run.
fn gemini(repo: &Path, prompt: &str, standin: &Standin, dir: &Path) -> Output {
    let home = home(dir);
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(
        home.join(".gemini/settings.json"),
        json!({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": false},
            "telemetry": {"enabled": false},
            "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false}
        })
        .to_string(),
    )
    .unwrap();
    Command::new(npm_bin("gemini"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap())
        .env("HOME", &home)
        .env("GEMINI_API_KEY", "stand-in-key")
        .env("GOOGLE_GEMINI_BASE_URL", standin.url())
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .env("NO_COLOR", "1")
        .env("CRITIC_CACHE_DIR", common::cache_dir())
        .args([
            "-m",
            "gemini-2.5-pro",
            "-p",
            prompt,
            "--approval-mode",
            "yolo",
        ])
        .current_dir(repo)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn contents_of(request: &Value) -> String {
    request["body"]["contents"].to_string()
}

#[test]
fn a_rejected_stop_sends_the_followup_to_the_model_and_the_next_stop_is_accepted() {
    let repo = Repo::new(&[("calc.py", "def add(a, b):\n    return a - b\n")]);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    install_hook("gemini", repo.path(), &skill("ran-tests"), &state, &[]);
    let standin = Standin::start(
        "gemini",
        &json!([
            {"tool_calls": [{"name": "replace", "input": {
                "file_path": "calc.py", "instruction": "fix add",
                "old_string": "a - b", "new_string": "a + b"}}]},
            {"text": "Fixed add()."},
            {"tool_calls": [{"name": "run_shell_command", "input": {
                "command": "python3 -m pytest -q; true", "description": "Run the tests"}}]},
            {"text": "Fixed add(); the tests ran."}
        ]),
    );
    let out = gemini(repo.path(), "Fix add in calc.py", &standin, dir.path());
    let log = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{log}");
    let turns = standin.turns();
    let inputs: Vec<String> = turns.iter().map(contents_of).collect();
    let calc = repo.path().join("calc.py");
    assert_rejected_then_accepted(&inputs, Some(&calc), &state, &log);

    let chats = files_under(&dir.path().join("home/.gemini/tmp"), ".jsonl");
    assert_eq!(chats.len(), 1, "{chats:?}");
    let events = events_of(&chats[0]);
    let of = |kind: &'static str| events.iter().filter(move |e| e["kind"] == kind);
    assert!(of("action").any(|e| e["tool"] == "replace"));
    let run = of("observation")
        .find(|e| e["tool"] == "run_shell_command")
        .expect("the test run");
    assert_eq!(run["exit_code"], 0);
    let finishes: Vec<&Value> = of("finish").collect();
    assert_eq!(finishes.len(), 2, "both stops are finishes");
    assert_eq!(finishes[1]["text"], "Fixed add(); the tests ran.");
}

#[test]
fn the_cap_ends_a_loop_gemini_itself_would_never_end() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    install_hook(
        "gemini",
        repo.path(),
        &skill("empty-patch"),
        &state,
        &["--max-rejections", "2"],
    );
    // The install keeps its settings out of the work tree's changes.
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    let standin = Standin::start(
        "gemini",
        &json!([{"text": "Nothing to change."}, {"text": "Still nothing."}, {"text": "Done."}]),
    );
    let out = gemini(repo.path(), "Look around", &standin, dir.path());
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

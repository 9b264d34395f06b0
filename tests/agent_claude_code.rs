//! The real Claude Code (npm `@anthropic-ai/claude-code`, run in print mode)
//! with the critic as its `Stop` hook, installed by `critic hook install`,
//! against a scripted stand-in for the Anthropic Messages API.

mod common;

use common::agents::{
    assert_rejected_then_accepted, events_of, files_under, harness_state, home, install_hook,
    npm_bin, Standin, RAN_TESTS_FOLLOWUP,
};
use common::{skill, Repo};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};

/// Run Claude Code on `repo` with `prompt` against `standin`.
fn claude(repo: &Path, prompt: &str, standin: &Standin, dir: &Path) -> Output {
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    Command::new(npm_bin("claude"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap())
        .env("HOME", home(dir))
        .env("LANG", "C.UTF-8")
        .env("ANTHROPIC_BASE_URL", standin.url())
        .env("ANTHROPIC_API_KEY", "sk-ant-test-stand-in")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_TMPDIR", &tmp)
        .env("CRITIC_CACHE_DIR", common::cache_dir())
        .args(["-p", prompt])
        .args(["--tools", "Bash,Edit,Write,Read"])
        .args(["--allowedTools", "Bash,Edit,Write,Read"])
        .args(["--output-format", "text"])
        .current_dir(repo)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn install(repo: &Path, skill: &Path, state: &Path, more: &[&str]) {
    install_hook("claude-code", repo, skill, state, more);
}

fn texts(request: &Value) -> String {
    request["body"]["messages"].to_string()
}

#[test]
fn a_rejected_stop_sends_the_followup_to_the_model_and_the_next_stop_is_accepted() {
    let repo = Repo::new(&[("calc.py", "def add(a, b):\n    return a - b\n")]);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    install(repo.path(), &skill("ran-tests"), &state, &[]);
    let calc = repo.path().join("calc.py");
    let standin = Standin::start(
        "claude_code",
        &json!([
            {"tool_calls": [{"name": "Edit", "input": {
                "file_path": calc, "old_string": "a - b", "new_string": "a + b"}}]},
            {"text": "Fixed add()."},
            {"tool_calls": [{"name": "Bash", "input": {
                "command": "python3 -m pytest -q; true", "description": "Run the tests"}}]},
            {"text": "Fixed add(); the tests ran."}
        ]),
    );
    let out = claude(repo.path(), "Fix add in calc.py", &standin, dir.path());
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("the tests ran"));

    let turns = standin.turns();
    // The follow-up is the model's next input after the first stop, and
    // not before it.
    let inputs: Vec<String> = turns.iter().map(texts).collect();
    assert_rejected_then_accepted(&inputs, Some(&calc), &state, &format!("{turns:#?}"));
    let followup = RAN_TESTS_FOLLOWUP;

    // The reader on the transcript Claude Code just wrote.
    let transcripts = files_under(&dir.path().join("home/.claude/projects"), ".jsonl");
    assert_eq!(transcripts.len(), 1, "{transcripts:?}");
    let events = events_of(&transcripts[0]);
    let of = |kind: &'static str| events.iter().filter(move |e| e["kind"] == kind);
    let edit = of("action")
        .find(|e| e["tool"] == "Edit")
        .expect("the edit");
    assert_eq!(edit["arguments"]["new_string"], "a + b");
    let test_run = of("observation")
        .find(|e| e["tool"] == "Bash")
        .expect("the test run's result");
    assert!(test_run["exit_code"].is_i64());
    let finishes: Vec<&Value> = of("finish").collect();
    assert_eq!(finishes.len(), 2, "both stops are finishes");
    assert_eq!(finishes[1]["text"], "Fixed add(); the tests ran.");
    assert!(
        of("message").all(|e| !e["text"].as_str().unwrap_or("").contains(followup)),
        "the hook's feedback is not a user message"
    );
}

#[test]
fn the_cap_ends_a_loop_the_skill_would_never_end() {
    // Nothing is ever edited, so empty-patch rejects every stop.
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    install(
        repo.path(),
        &skill("empty-patch"),
        &state,
        &["--max-rejections", "2"],
    );
    // The hook's settings are not a change the agent made: the install
    // keeps them out of the work tree's changes.
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    let standin = Standin::start("claude_code", &json!([{"text": "Nothing to change."}]));
    let out = claude(repo.path(), "Look around", &standin, dir.path());
    assert!(out.status.success(), "{}", common::stderr(&out));
    // Two rejections, then the third stop is let through: three model
    // calls, well before Claude Code's own cap of eight blocks.
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

#[test]
fn a_skill_that_cannot_load_lets_the_agent_stop() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken-skill");
    common::copy_tree(&skill("empty-patch"), &broken);
    let state = dir.path().join("state");
    install(repo.path(), &broken, &state, &[]);
    std::fs::write(broken.join("critic.yaml"), "name: [unclosed\n").unwrap();
    let standin = Standin::start("claude_code", &json!([{"text": "Done."}]));
    let out = claude(repo.path(), "Do nothing", &standin, dir.path());
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert_eq!(standin.turns().len(), 1, "no block, no second model call");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Done."));
}

#[test]
fn breaking_its_own_repository_does_not_let_the_agent_stop() {
    // The attack as found: after a rejection the model breaks its
    // repository (HEAD on a missing branch) so that the critic cannot diff.
    // That stop is rejected too, with a follow-up that names the problem;
    // once mended, the finish is judged.
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    install(repo.path(), &skill("empty-patch"), &state, &[]);
    // The install keeps its settings out of the work tree's changes.
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    let bash = |command: &str| {
        json!({"tool_calls": [{"name": "Bash", "input": {
            "command": command, "description": "Run a command"}}]})
    };
    let standin = Standin::start(
        "claude_code",
        &json!([
            {"text": "Nothing to change."},
            bash("git symbolic-ref HEAD refs/heads/missing"),
            {"text": "Done."},
            bash("git symbolic-ref HEAD refs/heads/main && echo b > b.txt"),
            {"text": "Mended and changed."},
        ]),
    );
    let out = claude(repo.path(), "Change something", &standin, dir.path());
    assert!(out.status.success(), "{}", common::stderr(&out));
    let inputs: Vec<String> = standin.turns().iter().map(texts).collect();
    assert_eq!(inputs.len(), 5, "{inputs:#?}");
    // The model's input after the stop with the broken repository.
    assert!(
        inputs[3].contains("could not read your changes"),
        "{}",
        inputs[3]
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Mended and changed."));
    let states = harness_state(&state, "empty-patch");
    assert_eq!(states[0]["rejections"], 2, "{states:#?}");
}

//! A real OpenHands SDK conversation (PyPI `openhands-sdk`, real
//! `terminal` and `file_editor` tools, the SDK's scripted `TestLLM` as its
//! model) with the critic as its `stop` hook, installed by `critic hook
//! install`. The program that runs the conversation is
//! `tests/agents/openhands/driver.py`.

mod common;

use common::agents::{
    assert_rejected_then_accepted, harness_state, home, install_hook, python_env,
    python_with_package,
};
use common::{root, skill, Repo};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Output;

/// Run one conversation in `repo` with `script` as its model's turns; the
/// model calls it logged, in order.
fn openhands(repo: &Path, prompt: &str, script: &Value, dir: &Path) -> (Output, Vec<Value>) {
    let script_file = dir.join("script.json");
    std::fs::write(&script_file, script.to_string()).unwrap();
    let log = dir.join("calls.jsonl");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let out = std::process::Command::new(python_env())
        .arg(root().join("tests/agents/openhands/driver.py"))
        .arg("--workspace")
        .arg(repo)
        .arg("--persist")
        .arg(dir.join("persist"))
        .args(["--prompt", prompt, "--script"])
        .arg(&script_file)
        .arg("--log")
        .arg(&log)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap())
        .env("HOME", home(dir))
        .env("TMPDIR", &tmp)
        .env("CRITIC_CACHE_DIR", common::cache_dir())
        .output()
        .unwrap();
    let calls = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (out, calls)
}

#[test]
fn a_rejected_finish_sends_the_followup_to_the_model_and_the_next_finish_is_accepted() {
    let repo = Repo::new(&[("calc.py", "def add(a, b):\n    return a - b\n")]);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let persist = dir.path().join("persist");
    install_hook(
        "openhands",
        repo.path(),
        &skill("ran-tests"),
        &state,
        &["--events", persist.to_str().unwrap()],
    );
    let calc = repo.path().join("calc.py");
    let (out, calls) = openhands(
        repo.path(),
        "Fix add in calc.py",
        &json!([
            {"tool_calls": [{"name": "file_editor", "input": {
                "command": "str_replace", "path": calc, "old_str": "a - b", "new_str": "a + b"}}]},
            {"tool_calls": [{"name": "finish", "input": {"message": "Fixed add()."}}]},
            {"tool_calls": [{"name": "terminal", "input": {"command": "python3 -m pytest -q; true"}}]},
            {"tool_calls": [{"name": "finish", "input": {"message": "Fixed add(); the tests ran."}}]}
        ]),
        dir.path(),
    );
    let log = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{log}");
    let inputs: Vec<String> = calls
        .iter()
        .map(|c| c["body"]["messages"].to_string())
        .collect();
    assert_rejected_then_accepted(&inputs, Some(&calc), &state, &log);
    let states = harness_state(&state, "ran-tests");
    let run: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(run["execution_status"], "finished");
    assert_eq!(
        states[0]["session"].as_str().unwrap().replace('-', ""),
        run["conversation_id"].as_str().unwrap().replace('-', "")
    );
}

#[test]
fn pluggable_critic_drives_the_sdks_own_refinement_loop() {
    let python = python_with_package();
    let repo = Repo::new(&[("calc.py", "def add(a, b):\n    return a - b\n")]);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let calc = repo.path().join("calc.py");
    let script = json!([
        {"tool_calls": [{"name": "file_editor", "input": {
            "command": "str_replace", "path": calc, "old_str": "a - b", "new_str": "a + b"}}]},
        {"tool_calls": [{"name": "finish", "input": {"message": "Fixed add()."}}]},
        {"tool_calls": [{"name": "terminal", "input": {"command": "python3 -m pytest -q; true"}}]},
        {"tool_calls": [{"name": "finish", "input": {"message": "Fixed add(); the tests ran."}}]}
    ]);
    let script_file = dir.path().join("script.json");
    std::fs::write(&script_file, script.to_string()).unwrap();
    let log = dir.path().join("calls.jsonl");
    let out = std::process::Command::new(python)
        .arg(root().join("tests/agents/openhands/driver.py"))
        .arg("--workspace")
        .arg(repo.path())
        .arg("--persist")
        .arg(dir.path().join("persist"))
        .args([
            "--prompt",
            "Fix add in calc.py",
            "--hooks",
            "none",
            "--script",
        ])
        .arg(&script_file)
        .arg("--log")
        .arg(&log)
        .arg("--critic-skill")
        .arg(skill("ran-tests"))
        .arg("--critic-bin")
        .arg(env!("CARGO_BIN_EXE_critic"))
        .arg("--critic-state")
        .arg(&state)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap())
        .env("HOME", home(dir.path()))
        .env("CRITIC_CACHE_DIR", common::cache_dir())
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    let calls: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let inputs: Vec<String> = calls
        .iter()
        .map(|c| c["body"]["messages"].to_string())
        .collect();
    assert_rejected_then_accepted(&inputs, Some(&calc), &state, &text);
}

#[test]
fn the_python_host_client_gets_the_same_verdict_from_a_server_and_the_binary() {
    let python = python_with_package();
    let repo = Repo::demo();
    repo.apply(&common::demo_patch(3));
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("critic.sock");
    let mut server = common::critic()
        .args(["serve", "--socket"])
        .arg(&socket)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::BufRead;
        let mut line = String::new();
        std::io::BufReader::new(server.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.contains("listening"), "{line}");
    }
    let script = r#"
import json, sys
from pluggable_critic import CriticHost
skill, workspace, events, state, socket, critic = sys.argv[1:7]
lines = [json.loads(l) for l in open(events) if l.strip()]
out = {}
for name, server, bin in [("server", socket, None), ("binary", None, critic)]:
    host = CriticHost(skill=skill, workspace=workspace, session=name, state_dir=state,
                      server=server, critic_bin=bin)
    v = host.check(lines)
    out[name] = {k: v[k] for k in ("accepted", "score", "message", "iteration")}
print(json.dumps(out))
"#;
    let out = std::process::Command::new(python)
        .args(["-c", script])
        .arg(skill("ran-tests"))
        .arg(repo.path())
        .arg(common::demo_events(3))
        .arg(dir.path().join("state"))
        .arg(&socket)
        .arg(env!("CARGO_BIN_EXE_critic"))
        .env("CRITIC_CACHE_DIR", common::cache_dir())
        .env_remove("CRITIC_SERVER")
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let both: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(both["server"], both["binary"], "{both}");
    assert_eq!(both["server"]["iteration"], 1);
}

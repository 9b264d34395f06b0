//! The real mini-swe-agent (PyPI `mini-swe-agent`, its `mini` command) with
//! `pluggable_critic.minisweagent.CriticAgent` (examples/openhands) judging
//! each submission, against a scripted stand-in for an OpenAI-compatible
//! chat API (mini-swe-agent's litellm model, offline).

mod common;

use common::agents::{assert_rejected_then_accepted, home, python_with_package, Standin};
use common::{skill, Repo};
use serde_json::json;

#[test]
fn a_rejected_submission_sends_the_followup_to_the_model_and_the_next_is_accepted() {
    let python = python_with_package();
    let mini = python.parent().unwrap().join("mini");
    let repo = Repo::new(&[("calc.py", "def add(a, b):\n    return a - b\n")]);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let bash =
        |command: &str| json!({"tool_calls": [{"name": "bash", "input": {"command": command}}]});
    let standin = Standin::start(
        "mini_swe_agent",
        &json!([
            bash("sed -i 's/a - b/a + b/' calc.py"),
            bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff"),
            bash("python3 -m pytest -q; true"),
            bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff"),
        ]),
    );
    let trajectory = dir.path().join("run.traj.json");
    let home = home(dir.path());
    let out = std::process::Command::new(mini)
        .args([
            "-y",
            "--exit-immediately",
            "-m",
            "openai/stand-in",
            "-c",
            "mini.yaml",
        ])
        .args(["--agent-class", "pluggable_critic.minisweagent.CriticAgent"])
        .arg("-c")
        .arg(format!("model.model_kwargs.api_base={}/v1", standin.url()))
        .args(["-c", "model.model_kwargs.api_key=stand-in-key"])
        .arg("-c")
        .arg(format!(
            "agent.critic_skill={}",
            skill("ran-tests").display()
        ))
        .arg("-c")
        .arg(format!("agent.critic_bin={}", env!("CARGO_BIN_EXE_critic")))
        .arg("-c")
        .arg(format!("agent.critic_state_dir={}", state.display()))
        .args(["-t", "Fix add in calc.py", "-o"])
        .arg(&trajectory)
        .current_dir(repo.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap())
        .env("HOME", &home)
        .env("MSWEA_GLOBAL_CONFIG_DIR", home.join("mini-swe-agent"))
        .env("MSWEA_CONFIGURED", "true")
        .env("MSWEA_COST_TRACKING", "ignore_errors")
        .env("MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT", "1")
        .env("LITELLM_OFFLINE_MODE", "true")
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("CRITIC_CACHE_DIR", common::cache_dir())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let log = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{log}");
    let turns = standin.turns();
    let inputs: Vec<String> = turns
        .iter()
        .map(|t| t["body"]["messages"].to_string())
        .collect();
    let calc = repo.path().join("calc.py");
    assert_rejected_then_accepted(&inputs, Some(&calc), &state, &log);
    // The reader on the trajectory mini-swe-agent wrote.
    let events = common::agents::events_of(&trajectory);
    let finishes = events.iter().filter(|e| e["kind"] == "finish").count();
    assert_eq!(finishes, 2, "both submissions are finishes");
    assert!(events
        .iter()
        .any(|e| e["kind"] == "observation" && e["exit_code"] == 0));
}

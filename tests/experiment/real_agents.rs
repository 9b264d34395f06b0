//! The real agent programs run the arms offline, each against a scripted
//! stand-in for its model API: Claude Code, Codex, mini-swe-agent and
//! OpenHands.

use super::*;

/// The script for one instance (textutil) and both arms, run in order
/// (one worker): fix-only's empty first finish is sent back, then the fix;
/// brt-only writes a test that fails on the bug. `shell` makes a tool call
/// that runs a command in the workspace.
fn agent_script(shell: impl Fn(&str) -> Value) -> Value {
    json!([
        {"text": "Nothing to change."},
        shell("sed -i 's/join(words)/join(w.lower() for w in words)/' textutil/__init__.py && env > \"$HOME/agent-env.txt\""),
        {"text": "Fixed slugify."},
        shell("printf 'from textutil import slugify\\n\\n\\ndef test_issue():\\n    assert slugify(\"Hello World\") == \"hello-world\"\\n' > tests/test_issue.py"),
        {"text": "Test written."},
    ])
}

/// Run the two-arm experiment on textutil with a real agent behind
/// `adapter`, its model the stand-in; check what came out.
fn real_agent_experiment(adapter: &str, program: &Path, standin: &Standin) -> (Lab, Value) {
    real_agent_experiment_with(adapter, program, standin, &[])
}

/// [`real_agent_experiment`] with `env` added to `critic`'s.
fn real_agent_experiment_with(
    adapter: &str,
    program: &Path,
    standin: &Standin,
    env: &[(&str, &str)],
) -> (Lab, Value) {
    let lab = Lab::new();
    let agent = format!(
        "agent:\n  adapter: {adapter}\n  program: {}\n  timeout: 300s\n\
model: {{base_url: \"{}\", model: stand-in-model, api_key_env: STANDIN_API_KEY, \
price: {{input_per_mtok: 3, output_per_mtok: 15}}}}\n",
        program.display(),
        standin.url()
    );
    let file = lab.write_with(&agent, "filter: {ids: [acme__textutil-1]}\n");
    let mut env = env.to_vec();
    env.push(("STANDIN_API_KEY", "stand-in-key"));
    let out = lab.run_with_env(&file, "out", &env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = results(&lab.path("out"));
    let fix = &r[&key("textutil", "fix-only")];
    assert_eq!(fix["status"], "ok", "{fix}");
    assert_eq!(fix["resolved"], true, "{fix}");
    assert_eq!(
        (fix["finishes"].clone(), fix["rounds"].clone()),
        (json!(2), json!(2)),
        "{fix}"
    );
    let brt = &r[&key("textutil", "brt-only")];
    assert_eq!(brt["status"], "ok", "{brt}");
    assert_eq!(
        brt["f2p"],
        json!({"fails_on_base": true, "passes_on_golden": true}),
        "{brt}"
    );
    // The follow-up of the rejected stop reached the model, after that stop.
    let turns = standin.turns();
    assert_eq!(turns.len(), 5, "{turns:#?}");
    let run = lab.path("out/runs/acme__textutil-1/fix-only/0");
    let first: Value =
        serde_json::from_slice(&std::fs::read(run.join("round-1/verdict.json")).unwrap()).unwrap();
    assert_eq!(first["accepted"], false);
    let followup = first["followup"].as_str().unwrap();
    let seen = |t: &Value| {
        t["body"]
            .to_string()
            .contains(&followup[..40.min(followup.len())].replace('"', "\\\""))
    };
    assert!(!seen(&turns[0]) && seen(&turns[1]), "{followup}");
    // Every finish's patch is kept beside its verdict (`critic hook` or
    // `critic check --verdict-log` saves them).
    assert_eq!(
        std::fs::read_to_string(run.join("round-1/patch.diff")).unwrap(),
        ""
    );
    assert!(std::fs::read_to_string(run.join("round-2/patch.diff"))
        .unwrap()
        .contains("+    return \"-\".join(w.lower() for w in words)"));
    // Tokens are the runner's count of what the model answered (through
    // the run's proxy), priced by the model's price.
    let tokens = fix["tokens"].as_u64().expect("the proxy counted usage");
    assert!(tokens > 0);
    assert_eq!(fix["usage_source"], "proxy", "{fix}");
    let requests = standin.requests();
    let answered: u64 = requests
        .iter()
        .filter_map(|r| r.get("usage"))
        .map(|u| u["input_tokens"].as_u64().unwrap() + u["output_tokens"].as_u64().unwrap())
        .sum();
    if answered > 0 {
        assert_eq!(
            tokens + r[&key("textutil", "brt-only")]["tokens"].as_u64().unwrap(),
            answered
        );
    }
    // The model got the real key, the agent only its run's token: neither
    // its environment nor any file of the run holds the key.
    assert!(!requests.is_empty());
    for r in &requests {
        assert_eq!(r["key"], "stand-in-key", "{r}");
    }
    let holders = files_holding(&lab.path("out"), b"stand-in-key");
    assert!(holders.is_empty(), "the key is in {holders:?}");
    if let Ok(env) = std::fs::read_to_string(run.join("agent/home/agent-env.txt")) {
        assert!(
            env.contains("critic-run-"),
            "the agent has its token: {env}"
        );
    }
    let cost = fix["cost"].as_f64().unwrap();
    assert!(
        cost >= tokens as f64 * 3e-6 && cost <= tokens as f64 * 15e-6,
        "{fix}"
    );
    // The agent's own transcript is kept and readable.
    // OpenHands keeps its events as a directory of its conversation.
    let conversation = std::fs::read_dir(run.join("agent/openhands"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("events"))
        .next();
    let transcript = ["transcript.jsonl", "transcript.json"]
        .iter()
        .map(|f| run.join(f))
        .find(|f| f.is_file())
        .or(conversation)
        .expect("the agent's transcript is kept");
    let events = run_events(&transcript);
    assert!(events.iter().any(|e| e["kind"] == "finish"), "{events:#?}");
    (lab, r[&key("textutil", "fix-only")].clone())
}

fn run_events(transcript: &Path) -> Vec<Value> {
    let out = run(critic()
        .args(["events", "--output", "json"])
        .arg(transcript));
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn claude_code_runs_the_arms_with_the_critic_as_its_stop_hook() {
    let bash = |command: &str| json!({"tool_calls": [{"name": "Bash", "input": {"command": command, "description": "Edit"}}]});
    let standin = Standin::start("claude_code", &agent_script(bash));
    let (lab, _) = real_agent_experiment("claude-code", &npm_bin("claude"), &standin);
    // A user-scope hook in the agent's own home, asking the session's
    // judge (the agent runs confined, where a check cannot).
    let settings =
        lab.path("out/runs/acme__textutil-1/fix-only/0/agent/home/.claude/settings.json");
    let settings = std::fs::read_to_string(settings).unwrap();
    assert!(
        settings.contains("--server http://127.0.0.1:") && !settings.contains("verdict-log"),
        "{settings}"
    );
    let ws_files =
        std::fs::read_to_string(lab.path("out/runs/acme__textutil-1/fix-only/0/final.patch"))
            .unwrap();
    assert!(
        !ws_files.contains(".claude"),
        "nothing of the hook in the patch: {ws_files}"
    );
    // With the model stopped, the recording answers a replay in full.
    drop(standin);
    let file = lab.path("exp.yaml");
    replays_equal(&lab, &file, "out", "again");
    // An arm whose task changed departs at the first call that carries the
    // task: its run ends `replay_diverged` there, the other replays.
    let recorded = jsonl(&lab.path("out/runs/acme__textutil-1/fix-only/0/model.jsonl"));
    let first = recorded
        .iter()
        .find(|e| e["request"].to_string().contains("slugs must be lowercase"))
        .expect("a call carries the task")["call"]
        .clone();
    let task = lab.path("changed-task.md.j2");
    std::fs::write(
        &task,
        std::fs::read_to_string(root().join("skills/fix-only/templates/task.md.j2")).unwrap()
            + "\nKeep the change small.\n",
    )
    .unwrap();
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "fix-only: {skill: ",
        &format!("fix-only: {{task: {}, skill: ", task.display()),
    );
    std::fs::write(&file, text).unwrap();
    let changed = run(critic()
        .args(["experiment", "run"])
        .arg(&file)
        .arg("--output-dir")
        .arg(lab.path("changed"))
        .arg("--replay")
        .arg(lab.path("out")));
    assert_eq!(changed.status.code(), Some(2), "{}", stderr(&changed));
    let r = results(&lab.path("changed"));
    let fix = &r[&key("textutil", "fix-only")];
    assert_eq!(fix["status"], "replay_diverged", "{fix}");
    let why = fix["error"]["message"].as_str().unwrap();
    assert!(
        why.starts_with(&format!("round 1, call {first}: ")),
        "{why}"
    );
    assert_eq!(r[&key("textutil", "brt-only")]["status"], "ok");
}

/// The real agents, installed by the tests inside this checkout, with the
/// checkout under the user's home (its parent made `HOME`), as a researcher
/// keeps projects: the confined turns cover the home and bind back the
/// agents' programs with their packages, the interpreter and `critic`.
#[test]
fn the_real_agents_run_from_a_checkout_under_the_home() {
    let home = root().parent().unwrap().to_path_buf();
    let real_home = std::env::var_os("HOME").map(PathBuf::from).unwrap();
    let toolchain = |var: &str, usual: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .unwrap_or_else(|| real_home.join(usual))
            .to_string_lossy()
            .into_owned()
    };
    let (cargo, rustup) = (
        toolchain("CARGO_HOME", ".cargo"),
        toolchain("RUSTUP_HOME", ".rustup"),
    );
    let env = [
        ("HOME", home.to_str().unwrap()),
        ("CARGO_HOME", cargo.as_str()),
        ("RUSTUP_HOME", rustup.as_str()),
    ];
    let bash = |command: &str| json!({"tool_calls": [{"name": "Bash", "input": {"command": command, "description": "Edit"}}]});
    let standin = Standin::start("claude_code", &agent_script(bash));
    real_agent_experiment_with("claude-code", &npm_bin("claude"), &standin, &env);
    let exec = |command: &str| codex_exec(command);
    let standin = Standin::start("codex", &agent_script(exec));
    real_agent_experiment_with("codex", &npm_bin("codex"), &standin, &env);
}

#[test]
fn codex_runs_the_arms_with_the_critic_as_its_stop_hook() {
    let exec = |command: &str| codex_exec(command);
    let standin = Standin::start("codex", &agent_script(exec));
    let (lab, fix) = real_agent_experiment("codex", &npm_bin("codex"), &standin);
    // The stand-in answers each of the run's three calls with 100 input and
    // 20 output tokens; Codex keeps the running total.
    assert_eq!(fix["tokens"], 360);
    assert!((fix["cost"].as_f64().unwrap() - (300.0 * 3e-6 + 60.0 * 15e-6)).abs() < 1e-12);
    let hooks = lab.path("out/runs/acme__textutil-1/fix-only/0/agent/codex-home/hooks.json");
    assert!(std::fs::read_to_string(hooks)
        .unwrap()
        .contains("--server http://127.0.0.1:"));
    drop(standin);
    replays_equal(&lab, &lab.path("exp.yaml"), "out", "again");
}

#[test]
fn mini_swe_agent_runs_the_arms_with_its_critic_agent_class() {
    let bash =
        |command: &str| json!({"tool_calls": [{"name": "bash", "input": {"command": command}}]});
    let submit = || bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff");
    // The script of agent_script, with mini-swe-agent's own way to finish.
    let standin = Standin::start(
        "mini_swe_agent",
        &json!([
            submit(),
            bash("sed -i 's/join(words)/join(w.lower() for w in words)/' textutil/__init__.py"),
            submit(),
            bash("printf 'from textutil import slugify\\n\\n\\ndef test_issue():\\n    assert slugify(\"Hello World\") == \"hello-world\"\\n' > tests/test_issue.py"),
            submit(),
        ]),
    );
    let mini = python_with_package().parent().unwrap().join("mini");
    real_agent_experiment("mini-swe-agent", &mini, &standin);
}

/// An agent installed as npm installs a program, a link in a project's
/// `node_modules/.bin` into its package, in a project under the user's home:
/// the confined turn covers the home, and binds back the package the link
/// points into, read-only, so the agent starts and its package's own
/// modules load.
#[test]
fn an_agent_linked_into_its_package_under_the_home_starts_confined() {
    let lab = Lab::new();
    let home = lab.path("home");
    let package = home.join("project/node_modules/agentpkg");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::write(package.join("real_agent.py"), AGENT).unwrap();
    let entry = package.join("agent.py");
    std::fs::write(
        &entry,
        "#!/usr/bin/env python3\nimport os, runpy\nrunpy.run_path(os.path.join(os.path.dirname(os.path.realpath(__file__)), 'real_agent.py'), run_name='__main__')\n",
    )
    .unwrap();
    std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = home.join("project/node_modules/.bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink("../agentpkg/agent.py", bin.join("agent")).unwrap();
    std::fs::write(lab.path("plan.json"), plan().to_string()).unwrap();
    let agent = format!(
        "agent:\n  command: [{}, \"{{prompt_file}}\"]\n  timeout: 60s\n  env: {{AGENT_PLAN: {}}}\n",
        bin.join("agent").display(),
        lab.path("plan.json").display()
    );
    let file = lab.write_with(&agent, "filter: {ids: [acme__textutil-1]}\n");
    let out = lab.run_with_env(&file, "out", &[("HOME", home.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = results(&lab.path("out"));
    let run = &r[&key("textutil", "fix-only")];
    assert_eq!(
        (run["status"].as_str(), run["resolved"].as_bool()),
        (Some("ok"), Some(true)),
        "{run}"
    );
}

#[test]
fn openhands_runs_the_arms_with_the_critic_as_its_stop_hook() {
    let terminal = |command: &str| json!({"tool_calls": [{"name": "terminal", "input": {"command": command}}]});
    let finish =
        |message: &str| json!({"tool_calls": [{"name": "finish", "input": {"message": message}}]});
    // The script of agent_script, with OpenHands' own tools and finish.
    let standin = Standin::start(
        "mini_swe_agent",
        &json!([
            finish("Nothing to change."),
            terminal("sed -i 's/join(words)/join(w.lower() for w in words)/' textutil/__init__.py"),
            finish("Fixed slugify."),
            terminal("printf 'from textutil import slugify\\n\\n\\ndef test_issue():\\n    assert slugify(\"Hello World\") == \"hello-world\"\\n' > tests/test_issue.py"),
            finish("Test written."),
        ]),
    );
    let (lab, _) = real_agent_experiment("openhands", &python_with_package(), &standin);
    let hooks = lab.path("out/runs/acme__textutil-1/fix-only/0/agent/home/.openhands/hooks.json");
    assert!(std::fs::read_to_string(hooks).unwrap().contains("--events"));
}

/// A Codex `exec_command` call of `command` that waits for it to end: by
/// default Codex yields after 10 s and the turn goes on while the command
/// runs, so on a loaded machine the finish could come before the file the
/// command writes (30 s is the longest wait Codex allows).
fn codex_exec(command: &str) -> Value {
    json!({"tool_calls": [{"name": "exec_command", "input": {"cmd": command, "yield_time_ms": 30000}}]})
}

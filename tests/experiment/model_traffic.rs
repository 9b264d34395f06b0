//! The model's traffic, which the runner owns: token budgets and the cost cap,
//! and an experiment replayed from its recording with the model stopped.

use super::*;

#[test]
fn token_budgets_end_a_run_and_the_cost_cap_stops_new_ones() {
    let lab = Lab::new();
    let step = json!({"tokens": 80});
    let plan = json!({
        // Never writes anything, so fix-only rejects every finish.
        "textutil": {"fix-only": {"1": step, "2": step, "3": step},
                     "brt-only": {"1": step}},
        "stats": {}, "bounds": {},
    });
    let file = lab.write(
        &plan,
        "filter: {ids: [acme__textutil-1]}\nbudget: {tokens: 100}\n",
    );
    let out = lab.run(&file, "out", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = results(&lab.path("out"));
    let fix = &r[&key("textutil", "fix-only")];
    assert_eq!(fix["status"], "agent_fail", "{fix}");
    assert_eq!(fix["error"]["class"], "token_budget");
    assert_eq!(
        (fix["rounds"].clone(), fix["tokens"].clone()),
        (json!(2), json!(160))
    );

    // Through the run's model proxy the runner counts the model's answers
    // itself, and refuses the call that would go past the budget: the
    // third round's call, with 160 of 100 tokens used.
    let UsageModel { url, heads, .. } = usage_model(|_| "ok".into());
    let model = format!("model: {{base_url: \"{url}\", model: m, api_key_env: USAGE_MODEL_KEY}}\n");
    let file = lab.write(
        &plan,
        &format!("filter: {{ids: [acme__textutil-1]}}\n{model}budget: {{tokens: 100}}\n"),
    );
    let out = lab.run_with_env(&file, "proxied", &[("USAGE_MODEL_KEY", "the-real-key")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = results(&lab.path("proxied"));
    let fix = &r[&key("textutil", "fix-only")];
    assert_eq!(
        (fix["status"].as_str(), fix["error"]["class"].as_str()),
        (Some("agent_fail"), Some("budget")),
        "{fix}"
    );
    assert!(
        fix["error"]["message"]
            .as_str()
            .unwrap()
            .contains("160 tokens used, budget.tokens is 100"),
        "{fix}"
    );
    assert_eq!(
        (fix["rounds"].clone(), fix["tokens"].clone()),
        (json!(3), json!(160))
    );
    assert_eq!(fix["usage_source"], "proxy", "{fix}");
    // The model saw the real key, on each of the calls the proxy let through.
    let fix_calls = jsonl(&lab.path("proxied/runs/acme__textutil-1/fix-only/0/model.jsonl"));
    assert_eq!(fix_calls.len(), 3);
    assert_eq!(
        fix_calls[2]["refused"]
            .as_str()
            .map(|s| s.contains("budget")),
        Some(true)
    );
    assert!(heads
        .lock()
        .unwrap()
        .iter()
        .all(|h| h.to_ascii_lowercase().contains("x-api-key: the-real-key")));

    // Priced at a dollar a token, the first run's first call costs $80:
    // past the cap of $50, its next call is refused and the second run is
    // not started; a rerun with a higher cap makes it.
    let priced = format!(
        "model: {{base_url: \"{url}\", model: m, price: {{input_per_mtok: 1000000, output_per_mtok: 0}}}}\n"
    );
    let capped =
        format!("filter: {{ids: [acme__textutil-1]}}\n{priced}budget: {{total_cost: 50}}\n");
    let file = lab.write(&plan, &capped);
    let out = lab.run(&file, "capped", &["--workers", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("1 runs were not started"),
        "{}",
        stderr(&out)
    );
    let r = results(&lab.path("capped"));
    assert_eq!(r.len(), 1, "{r:#?}");
    let first = r.values().next().unwrap();
    assert_eq!(first["cost"], json!(80.0), "{first}");
    assert_eq!(first["error"]["class"], "budget", "{first}");
    let file = lab.write(&plan, &capped.replace("total_cost: 50", "total_cost: 1000"));
    let out = lab.run(&file, "capped", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(results(&lab.path("capped")).len(), 2);
}

/// The model's answer for a request of the command agent: the files to
/// write for what it asks (textutil's fix, or its reproduction test).
fn textutil_files(asked: &Value) -> String {
    let text = PACKAGES.iter().find(|p| p.name == "textutil").unwrap();
    let mut files = serde_json::Map::new();
    match asked["ask"].as_str() {
        Some("fix") => files.insert(text.module.into(), text.fixed().into()),
        Some("test") => files.insert("tests/test_issue.py".into(), text.good_brt.into()),
        _ => None,
    };
    Value::Object(files).to_string()
}

#[test]
fn a_command_agents_experiment_replays_from_its_recording_with_the_model_stopped() {
    // The agent writes what its model answers: a replay that did not answer
    // from the recording could not make the same patches.
    let lab = Lab::new();
    let model = usage_model(textutil_files);
    let plan = json!({
        "textutil": {
            "fix-only": {"1": {"tokens": 10, "ask": "nothing"}, "2": {"tokens": 20, "ask": "fix"}},
            "brt-only": {"1": {"tokens": 5, "ask": "test"}},
        },
        "stats": {}, "bounds": {},
    });
    let settings = format!(
        "filter: {{ids: [acme__textutil-1]}}\n\
model: {{base_url: \"{}\", model: m, api_key_env: USAGE_MODEL_KEY}}\n",
        model.url
    );
    let file = lab.write(&plan, &settings);
    let out = lab.run_with_env(&file, "out", &[("USAGE_MODEL_KEY", "the-real-key")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = results(&lab.path("out"));
    let (fix, brt) = (
        &r[&key("textutil", "fix-only")],
        &r[&key("textutil", "brt-only")],
    );
    assert_eq!(
        (
            &fix["status"],
            &fix["resolved"],
            &fix["rounds"],
            &fix["tokens"],
            &fix["model_calls"]
        ),
        (&json!("ok"), &json!(true), &json!(2), &json!(30), &json!(2)),
        "{fix}"
    );
    assert_eq!(brt["f2p"]["fails_on_base"], true, "{brt}");
    let calls = model.heads.lock().unwrap().len();
    assert_eq!(calls, 3);
    // The answers were streamed, and the recording keeps the events.
    let recorded = jsonl(&lab.path("out/runs/acme__textutil-1/fix-only/0/model.jsonl"));
    assert!(recorded.iter().all(|c| c["stream"] == true
        && c["raw"]
            .as_str()
            .unwrap()
            .contains("event: content_block_delta")));
    let holders = files_holding(&lab.path("out"), b"the-real-key");
    assert!(holders.is_empty(), "the key is in {holders:?}");

    // With the model answering nothing, the replay makes the same runs
    // from the recording alone and never calls it.
    model
        .stopped
        .store(true, std::sync::atomic::Ordering::SeqCst);
    replays_equal(&lab, &file, "out", "again");
    assert_eq!(model.heads.lock().unwrap().len(), calls);
    let replayed = jsonl(&lab.path("again/runs/acme__textutil-1/fix-only/0/model.jsonl"));
    assert!(
        replayed.len() == 2 && replayed.iter().all(|c| c["source"] == "replayed"),
        "{replayed:#?}"
    );

    // A changed task departs at fix-only's first call, which carries the
    // prompt; `--replay-then-live` takes that run on against the model.
    let changed = std::fs::read_to_string(&file).unwrap().replace(
        "fix-only: {skill: ",
        &format!(
            "fix-only: {{task: {}, skill: ",
            lab.path("task.md.j2").display()
        ),
    );
    std::fs::write(lab.path("task.md.j2"), "Fix this: {{ issue }}\n").unwrap();
    std::fs::write(&file, changed).unwrap();
    let diverged = lab.run(
        &file,
        "changed",
        &["--replay", &lab.path("out").to_string_lossy()],
    );
    assert_eq!(diverged.status.code(), Some(2), "{}", stderr(&diverged));
    let r = results(&lab.path("changed"));
    let fix = &r[&key("textutil", "fix-only")];
    assert_eq!(fix["status"], "replay_diverged", "{fix}");
    let why = fix["error"]["message"].as_str().unwrap();
    assert!(
        why.starts_with("round 1, call 1: ") && why.contains("/prompt"),
        "{why}"
    );
    assert_eq!(r[&key("textutil", "brt-only")]["status"], "ok");
    model
        .stopped
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let live = run(critic()
        .args(["experiment", "run"])
        .arg(&file)
        .arg("--output-dir")
        .arg(lab.path("changed"))
        .arg("--replay")
        .arg(lab.path("out"))
        .arg("--replay-then-live")
        .env("USAGE_MODEL_KEY", "the-real-key"));
    assert_eq!(live.status.code(), Some(0), "{}", stderr(&live));
    let fix = &results(&lab.path("changed"))[&key("textutil", "fix-only")];
    assert_eq!(
        (&fix["status"], &fix["resolved"]),
        (&json!("ok"), &json!(true)),
        "{fix}"
    );
    assert_eq!(model.heads.lock().unwrap().len(), calls + 2);
}

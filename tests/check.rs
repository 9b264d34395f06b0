//! `critic check` end to end: the real binary, real git repos, real components.

mod common;

use common::*;
use serde_json::Value;

fn gates(signals: &str) -> tempfile::TempDir {
    temp_skill(&format!(
        "name: t\nversion: 0.1.0\nthreshold: 0.5\nmax_iterations: 2\ncapabilities: [log, read-file]\nsignals:\n{signals}"
    ))
}

#[test]
fn demo_run_finishes_get_the_recorded_verdicts() {
    let skill = root().join("examples/demo-skill");
    let state = tempfile::tempdir().unwrap();
    let mut seen = Vec::new();
    let repo = Repo::demo();
    for n in 1..=3 {
        repo.git(&["checkout", "-q", "--", "."]);
        repo.git(&["clean", "-q", "-f", "-d"]);
        repo.apply(&demo_patch(n));
        let out =
            run(check(&skill, repo.path(), &demo_events(n), state.path())
                .args(["--session", "demo"]));
        let v = json_out(&out);
        assert_schema("verdict.schema.json", &v);
        seen.push((
            out.status.code(),
            v["message"].as_str().unwrap().to_string(),
        ));
        assert_eq!(v["iteration"], n);
    }
    assert_eq!(seen[0].0, Some(1), "{seen:?}");
    assert!(seen[0].1.contains("empty-patch"), "{seen:?}");
    assert_eq!(seen[1].0, Some(1), "{seen:?}");
    assert!(seen[1].1.contains("ran-tests"), "{seen:?}");
    assert_eq!(seen[2].0, Some(0), "{seen:?}");
}

#[test]
fn a_verdict_log_keeps_every_verdict_and_the_patch_it_judged() {
    let skill = root().join("examples/demo-skill");
    let state = tempfile::tempdir().unwrap();
    let record = tempfile::tempdir().unwrap();
    let log = record.path().join("verdicts.jsonl");
    let repo = Repo::demo();
    let verdict_log = |n: usize, session: &str, extra: &[&str]| {
        run(check(&skill, repo.path(), &demo_events(n), state.path())
            .args(["--session", session, "--verdict-log"])
            .arg(&log)
            .args(extra))
    };
    repo.apply(&demo_patch(1));
    let first = verdict_log(1, "logged", &[]);
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    repo.git(&["checkout", "-q", "--", "."]);
    repo.git(&["clean", "-q", "-f", "-d"]);
    repo.apply(&demo_patch(2));
    let second = verdict_log(2, "logged", &[]);
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(
        lines[1],
        json_out(&second),
        "the logged verdict is the printed one"
    );
    let added = std::fs::read_to_string(demo_patch(2)).unwrap();
    let added = added
        .lines()
        .find(|l| l.starts_with('+') && !l.starts_with("+++"))
        .unwrap()
        .to_string();
    let saved = std::fs::read_to_string(record.path().join("round-2/patch.diff")).unwrap();
    assert!(saved.contains(&added), "{saved}");
    assert!(record.path().join("round-1/patch.diff").is_file());

    // With --patch, the file judged is the patch kept; a round directory
    // that is a link is refused, and the verdict still stands.
    repo.git(&["checkout", "-q", "--", "."]);
    repo.git(&["clean", "-q", "-f", "-d"]);
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), record.path().join("round-3")).unwrap();
    let patch = demo_patch(3);
    let third = verdict_log(3, "logged", &["--patch", patch.to_str().unwrap()]);
    assert_eq!(json_out(&third)["iteration"], 3);
    assert!(
        stderr(&third).contains("not a directory; the patch is not saved"),
        "{}",
        stderr(&third)
    );
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    std::fs::remove_file(record.path().join("round-3")).unwrap();
    // A FIFO in the log's place is not waited on: the verdict comes at once.
    let fifo_dir = tempfile::tempdir().unwrap();
    let fifo = fifo_dir.path().join("verdicts.jsonl");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let started = std::time::Instant::now();
    let out = run(check(&skill, repo.path(), &demo_events(1), state.path())
        .args(["--session", "fifo", "--verdict-log"])
        .arg(&fifo));
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(json_out(&out)["iteration"], 1);
    assert!(stderr(&out).contains("--verdict-log"), "{}", stderr(&out));

    let fourth = verdict_log(3, "other", &["--patch", patch.to_str().unwrap()]);
    assert_eq!(json_out(&fourth)["iteration"], 1);
    assert_eq!(
        std::fs::read_to_string(record.path().join("round-1/patch.diff")).unwrap(),
        std::fs::read_to_string(&patch).unwrap()
    );
}

#[test]
fn first_triggered_gate_short_circuits() {
    let skill = gates(&format!(
        "  - {{name: a, type: hard_gate, detector: {m}, config: {{mode: pass}}}}\n  - {{name: b, type: hard_gate, detector: {m}, config: {{mode: fire, text: stop here}}}}\n  - {{name: c, type: hard_gate, detector: {m}, config: {{mode: fire}}}}\n  - {{name: d, type: soft, weight: 1, detector: {m}}}\n",
        m = misbehave_wasm().display()
    ));
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let out = run(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let v = json_out(&out);
    assert_schema("verdict.schema.json", &v);
    let status: Vec<&str> = v["signals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["status"].as_str().unwrap())
        .collect();
    assert_eq!(status, ["passed", "triggered", "skipped", "skipped"]);
    assert_eq!(v["score"], 0.0);
    assert_eq!(v["followup"], "stop here");
}

#[test]
fn soft_weights_score_against_the_threshold() {
    let m = misbehave_wasm();
    let skill = |threshold: f64| {
        temp_skill(&format!(
            "name: t\nversion: 0.1.0\nthreshold: {threshold}\nsignals:\n  - {{name: a, type: soft, weight: 1, detector: {m}, config: {{mode: fire, text: A}}}}\n  - {{name: b, type: soft, weight: 3, detector: {m}, config: {{mode: pass}}}}\n  - {{name: c, type: soft, weight: 1, detector: {m}, config: {{mode: fire, text: C}}}}\n",
            m = m.display()
        ))
    };
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let high = skill(0.7);
    let out = run(&mut check(
        high.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    let v = json_out(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!((v["score"].as_f64().unwrap() - 0.6).abs() < 1e-9, "{v}");
    assert_eq!(v["followup"], "A\n\nC");
    let low = skill(0.6);
    let out = run(&mut check(
        low.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn rejection_budget_ends_the_loop() {
    let skill = gates(&format!(
        "  - {{name: g, type: hard_gate, detector: {}, config: {{mode: fire}}}}\n",
        misbehave_wasm().display()
    ));
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let mut codes = Vec::new();
    let mut last = Value::Null;
    for _ in 0..3 {
        let out = run(&mut check(
            skill.path(),
            repo.path(),
            &demo_events(3),
            state.path(),
        ));
        codes.push(out.status.code().unwrap());
        last = json_out(&out);
    }
    assert_eq!(codes, [1, 1, 0]);
    assert_eq!(last["budget_exhausted"], true);
    assert!(
        last["message"]
            .as_str()
            .unwrap()
            .contains("rejection budget ran out"),
        "{last}"
    );
    assert!(last.get("followup").is_none());
}

#[test]
fn detector_state_persists_per_session_and_resets_for_a_new_instance() {
    let skill = gates(&format!(
        "  - {{name: n, type: hard_gate, detector: {}, config: {{mode: count, until: 3}}}}\n",
        misbehave_wasm().display()
    ));
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let count = |session: &str| {
        let out = run(
            check(skill.path(), repo.path(), &demo_events(3), state.path())
                .args(["--session", session]),
        );
        json_out(&out)["signals"][0]["metadata"]["count"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(count("a"), 1);
    assert_eq!(count("a"), 2);
    assert_eq!(count("b"), 1, "another session has its own state");
    assert_eq!(count("a"), 3);
    // A new base commit is a new instance: the session starts over.
    repo.write("NOTES.md", "more\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "next"]);
    let out = run(
        check(skill.path(), repo.path(), &demo_events(3), state.path()).args(["--session", "a"]),
    );
    let v = json_out(&out);
    assert_eq!(v["signals"][0]["metadata"]["count"], 1);
    assert_eq!(v["iteration"], 1);
    assert!(
        v["warnings"][0].as_str().unwrap().contains("starting over"),
        "{v}"
    );
}

#[test]
fn default_state_dir_is_outside_the_workspace_and_keyed_by_it() {
    let skill = gates(&format!(
        "  - {{name: e, type: hard_gate, detector: {}, config: {{mode: echo}}}}\n",
        misbehave_wasm().display()
    ));
    let repo = Repo::demo();
    let xdg = tempfile::tempdir().unwrap();
    let mut cmd = critic();
    cmd.args(["check", "--skill"])
        .arg(skill.path())
        .arg("--workspace")
        .arg(repo.path())
        .arg("--events")
        .arg(demo_events(1))
        .env("XDG_STATE_HOME", xdg.path());
    for _ in 0..2 {
        let out = run(&mut cmd);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let v = json_out(&out);
        assert_eq!(
            v["signals"][0]["metadata"]["files"],
            serde_json::json!([]),
            "{v}"
        );
    }
    let root = xdg.path().join("pluggable-critic/workspaces");
    let dirs: Vec<_> = std::fs::read_dir(&root).unwrap().flatten().collect();
    assert_eq!(dirs.len(), 1);
    let name = dirs[0].file_name().to_string_lossy().into_owned();
    let base = repo
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .replace('.', "_");
    assert!(name.starts_with(&base), "{name} names the workspace");
    assert!(dirs[0].path().join("t/default/harness.json").is_file());
    assert!(!repo.path().join(".git/critic").exists());
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
    // Without a state directory to use, a clear error.
    let out = run(cmd.env_remove("XDG_STATE_HOME").env_remove("HOME"));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--state-dir"), "{}", stderr(&out));
}

#[test]
fn patch_includes_untracked_files_and_leaves_the_index_alone() {
    let skill = gates(&format!(
        "  - {{name: e, type: hard_gate, detector: {}, config: {{mode: echo}}}}\n",
        misbehave_wasm().display()
    ));
    let repo = Repo::demo();
    repo.write(
        "intervals/merge.py",
        "def merge(intervals):\n    return []\n",
    );
    repo.write("tests/test_new.py", "def test_x():\n    assert True\n");
    repo.write("scratch.pyc", "ignored by .gitignore");
    std::fs::remove_file(repo.path().join("README.md")).unwrap();
    repo.write("staged.txt", "staged\n");
    repo.git(&["add", "staged.txt"]);
    // Same content, new timestamp: git refreshes such entries as it diffs,
    // and would save the refresh into the index it is given.
    std::fs::File::options()
        .write(true)
        .open(repo.path().join("pyproject.toml"))
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
        .unwrap();
    let status = || repo.git(&["--no-optional-locks", "status", "--porcelain"]);
    let index_before = std::fs::read(repo.path().join(".git/index")).unwrap();
    let status_before = status();
    let state = tempfile::tempdir().unwrap();
    let out = run(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(1),
        state.path(),
    ));
    let v = json_out(&out);
    let files = v["signals"][0]["metadata"]["files"]
        .as_array()
        .unwrap()
        .clone();
    let find = |p: &str| files.iter().find(|f| f["path"] == p).cloned();
    assert_eq!(find("intervals/merge.py").unwrap()["status"], "modified");
    let t = find("tests/test_new.py").expect("untracked test included");
    assert_eq!(
        (t["status"].as_str(), t["is_test"].as_bool()),
        (Some("added"), Some(true))
    );
    assert_eq!(find("README.md").unwrap()["status"], "deleted");
    assert_eq!(find("staged.txt").unwrap()["status"], "added");
    assert!(find("scratch.pyc").is_none(), "ignored files stay out");
    assert_eq!(
        std::fs::read(repo.path().join(".git/index")).unwrap(),
        index_before
    );
    assert_eq!(status(), status_before);
}

#[test]
fn base_revision_can_be_chosen() {
    let skill = gates(&format!(
        "  - {{name: e, type: hard_gate, detector: {}, config: {{mode: echo}}}}\n",
        misbehave_wasm().display()
    ));
    let repo = Repo::demo();
    let base = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    repo.write("extra.py", "x = 1\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "agent commit"]);
    let state = tempfile::tempdir().unwrap();
    let out = run(
        check(skill.path(), repo.path(), &demo_events(1), state.path()).args(["--base", &base]),
    );
    let v = json_out(&out);
    assert_eq!(v["signals"][0]["metadata"]["base"], base);
    assert_eq!(v["signals"][0]["metadata"]["files"][0]["path"], "extra.py");
    let out = run(
        check(skill.path(), repo.path(), &demo_events(1), state.path())
            .args(["--base", "no-such-rev"]),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--base \"no-such-rev\" is not a commit"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn text_output_is_readable() {
    let skill = root().join("examples/demo-skill");
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let out =
        run(check(&skill, repo.path(), &demo_events(1), state.path()).args(["--output", "text"]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("REJECT demo-bugfix-gates"), "{text}");
    assert!(text.contains("follow-up for the agent:"), "{text}");
}

#[test]
fn artifacts_are_written_for_the_agent_and_kept_out_of_the_patch() {
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let manifest = |path: &str| {
        format!(
            "name: fb\nversion: 0.1.0\nsignals:\n  - {{name: a, type: hard_gate, detector: {{misbehave}}, config: {{mode: artifacts, artifacts: [{{path: {path:?}, content: \"mutant 1 survived\\n\"}}]}}}}\n"
        )
    };
    let skill = temp_skill(&manifest("latest.md"));
    for _ in 0..2 {
        let out = run(&mut check(
            skill.path(),
            repo.path(),
            &demo_events(1),
            state.path(),
        ));
        let v = json_out(&out);
        assert_eq!(
            v["signals"][0]["artifacts"],
            serde_json::json!([".critic/feedback/fb/latest.md"])
        );
        assert_schema("verdict.schema.json", &v);
    }
    let written =
        std::fs::read_to_string(repo.path().join(".critic/feedback/fb/latest.md")).unwrap();
    assert_eq!(written, "mutant 1 survived\n");
    assert_eq!(
        repo.git(&["status", "--porcelain"]),
        "",
        "the feedback never shows in the patch"
    );
    assert!(
        !std::fs::read_to_string(repo.path().join(".git/info/exclude"))
            .unwrap_or_default()
            .contains(".critic"),
        "the repository's own files are not touched"
    );

    let skill = temp_skill(&manifest("../escape.md"));
    let out = run(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(1),
        state.path(),
    ));
    let v = json_out(&out);
    let err = v["signals"][0]["error"].as_str().unwrap();
    assert!(
        err.contains("artifact path \"../escape.md\" refused"),
        "{err}"
    );
    assert!(!repo.path().join(".critic/feedback/escape.md").exists());
}

#[test]
fn a_time_limit_stops_every_signal_and_slow_code_never_passes() {
    // A signal whose run sleeps is still going when the check's second is
    // up: stopped, it fails, whatever its `on_error` says, since the
    // agent's code may be what was slow. A signal that runs no code and
    // times out is decided by its `on_error`.
    let sleeping_run = |on_error: &str| {
        format!(
            "capabilities: [run]\nsignals:\n  - {{name: tests, type: soft, weight: 1, \
             detector: {{misbehave}}, timeout: 10m, on_error: {on_error}, config: {{mode: run, \
             request: {{argv: [sleep, \"30\"]}}}}}}\n"
        )
    };
    let sleeping_detector = "signals:\n  - {name: judge, type: soft, weight: 1, \
        detector: {misbehave}, timeout: 10m, on_error: fail_open, config: {mode: sleep, ms: 30000}}\n";
    let repo = Repo::demo();
    repo.apply(&demo_patch(3));
    for (signals, accepted) in [
        (sleeping_run("fail_closed"), false),
        (sleeping_run("fail_open"), false),
        (sleeping_detector.to_string(), true),
    ] {
        let skill = temp_skill(&format!(
            "name: t\nversion: 0.1.0\nthreshold: 0.5\n{signals}"
        ));
        let state = tempfile::tempdir().unwrap();
        let started = std::time::Instant::now();
        let out = run(
            check(skill.path(), repo.path(), &demo_events(3), state.path())
                .args(["--time-limit", "1"]),
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(8),
            "{:?}",
            started.elapsed()
        );
        let v = json_out(&out);
        assert_eq!(v["accepted"], accepted, "{signals}: {v:#}");
        assert_eq!(out.status.code(), Some(if accepted { 0 } else { 1 }));
        let signal = &v["signals"][0];
        assert_eq!(signal["status"], "error", "{v:#}");
        assert!(
            signal["error"]
                .as_str()
                .unwrap()
                .contains("time limit of 1.0 s"),
            "{v:#}"
        );
    }
    let out = run(check(
        &root().join("examples/demo-skill"),
        repo.path(),
        &demo_events(3),
        tempfile::tempdir().unwrap().path(),
    )
    .arg("--time-limit=-1"));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--time-limit"), "{}", stderr(&out));
}

// A mistake on the command line is the user's to fix: a workspace or events
// path that names nothing, or a forced format that finds none of its events
// in the file, is an error (exit 2) and counts no finish. `critic state`
// lists what was counted and starts a session over.
#[test]
fn mistakes_on_the_command_line_cost_nothing_and_state_starts_a_session_over() {
    let skill = gates(&format!(
        "  - {{name: g, type: hard_gate, detector: {}, config: {{mode: fire}}}}\n",
        misbehave_wasm().display()
    ));
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let listed = || {
        let out = run(critic()
            .args(["state", "list", "--output", "json", "--state-dir"])
            .arg(state.path()));
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        json_out(&out)
    };
    let nowhere = repo.path().join("no-such-dir");
    let out = run(&mut check(
        skill.path(),
        &nowhere,
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--workspace"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no such directory"),
        "{}",
        stderr(&out)
    );
    let out = run(&mut check(
        skill.path(),
        repo.path(),
        &repo.path().join("typo.jsonl"),
        state.path(),
    ));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--events"), "{}", stderr(&out));
    let out = run(
        check(skill.path(), repo.path(), &demo_events(3), state.path())
            .args(["--events-format", "codex"]),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("holds no codex events"),
        "{}",
        stderr(&out)
    );
    let sessions = listed();
    assert!(
        sessions
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["finishes"] == 0),
        "nothing was counted: {sessions}"
    );

    // A real rejection counts; a reset starts the session over.
    let out = run(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let sessions = listed();
    assert_eq!(sessions[0]["session"], "default", "{sessions}");
    assert_eq!(sessions[0]["finishes"], 1, "{sessions}");
    let text = run(critic()
        .args(["state", "list", "--state-dir"])
        .arg(state.path()));
    assert!(
        String::from_utf8_lossy(&text.stdout)
            .contains("t / default: 1 finishes judged, 1 rejected"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
    let show = run(critic()
        .args(["state", "show", "default", "--state-dir"])
        .arg(state.path()));
    assert!(String::from_utf8_lossy(&show.stdout).contains("\"iteration\": 1"));
    let missing = run(critic()
        .args(["state", "reset", "nope", "--state-dir"])
        .arg(state.path()));
    assert_eq!(missing.status.code(), Some(2));
    let reset = run(critic()
        .args(["state", "reset", "default", "--state-dir"])
        .arg(state.path()));
    assert_eq!(reset.status.code(), Some(0), "{}", stderr(&reset));
    assert_eq!(listed(), serde_json::json!([]));
    let out = run(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(json_out(&out)["iteration"], 1, "the count starts over");
    // A record planted to name a place outside the state directory is data,
    // not a path: `reset --all` leaves that place alone and says so.
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(outside.path().join("planted")).unwrap();
    std::fs::write(outside.path().join("planted/precious.txt"), "keep\n").unwrap();
    let record = state.path().join("t/default/harness.json");
    let mut harness: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    let planted = state.path().join("t/planted");
    std::fs::create_dir_all(&planted).unwrap();
    harness["skill"] = serde_json::json!(outside.path());
    harness["session"] = serde_json::json!("planted");
    std::fs::write(planted.join("harness.json"), harness.to_string()).unwrap();
    let reset = run(critic()
        .args(["state", "reset", "--all", "--state-dir"])
        .arg(state.path())
        .env("CRITIC_LOG", "warn"));
    assert_eq!(reset.status.code(), Some(0), "{}", stderr(&reset));
    assert!(
        stderr(&reset).contains("whose place is not this directory"),
        "{}",
        stderr(&reset)
    );
    assert!(outside.path().join("planted/precious.txt").is_file());
    assert!(planted.join("harness.json").is_file(), "left as it is");
}

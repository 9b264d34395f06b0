//! What the server judges: the verdicts the command line gives, for every
//! shipped skill and inline events; each finish counted once however many
//! sessions ask; a skill reloaded when it changes; a check in flight
//! finished on SIGTERM; a pinned server's one session; a broken repository
//! a counted rejection.

use super::*;

#[test]
fn health_answers_with_the_version() {
    let server = Server::start(&[]);
    let (status, body) = server.call("GET", "/v1/health", b"");
    assert_eq!(status, 200);
    assert_eq!(body["status"], "ok");
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&server.socket)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(
        mode & 0o077,
        0,
        "socket mode {mode:o}: others could connect"
    );
}

#[test]
fn every_shipped_skill_gives_the_server_the_verdict_it_gives_the_cli() {
    let server = Server::start(&[]);
    let mut skills: Vec<PathBuf> = std::fs::read_dir(root().join("skills"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("critic.yaml").is_file())
        .collect();
    skills.push(root().join("examples/demo-skill"));
    skills.sort();
    assert!(skills.len() >= 8, "{skills:?}");
    for skill in &skills {
        // Two finishes each, so round state carries over the same way.
        let (cli_ws, server_ws) = (demo_workspace(), demo_workspace());
        let (cli_state, server_state) =
            (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        for n in [2, 3] {
            let out = run(
                check(skill, cli_ws.path(), &demo_events(n), cli_state.path())
                    .args(["--session", "s"]),
            );
            assert!(out.status.code().unwrap() < 2, "{}", stderr(&out));
            let cli = json_out(&out);
            let (status, served) = server.check(&json!({
                "skill": skill,
                "workspace": server_ws.path(),
                "events": demo_events(n),
                "session": "s",
                "state_dir": server_state.path(),
            }));
            assert_eq!(status, 200, "{}: {served}", skill.display());
            assert_schema("verdict.schema.json", &served);
            let (mut cli, mut served) = (comparable(cli), comparable(served));
            // The base commits differ (two repositories, two commit times).
            cli["metadata"]["patch"]["base"] = Value::Null;
            served["metadata"]["patch"]["base"] = Value::Null;
            assert_eq!(cli, served, "{} finish {n}", skill.display());
        }
    }
}

#[test]
fn inline_events_judge_like_a_file() {
    let server = Server::start(&[]);
    let ws = demo_workspace();
    let text = std::fs::read_to_string(demo_events(3)).unwrap();
    let array: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut verdicts = Vec::new();
    for events in [
        json!({"events": demo_events(3)}),
        json!({"events_inline": text}),
        json!({"events_inline": array}),
    ] {
        let state = tempfile::tempdir().unwrap();
        let mut request = json!({
            "skill": root().join("examples/demo-skill"),
            "workspace": ws.path(),
            "state_dir": state.path(),
        });
        request
            .as_object_mut()
            .unwrap()
            .extend(events.as_object().unwrap().clone());
        let (status, v) = server.check(&request);
        assert_eq!(status, 200, "{v}");
        verdicts.push(comparable(v));
    }
    assert_eq!(verdicts[0], verdicts[1]);
    assert_eq!(verdicts[0], verdicts[2]);
}

#[test]
fn concurrent_sessions_count_every_finish_exactly_once() {
    let server = Server::start(&["--concurrency", "4"]);
    let skill = temp_skill(
        "name: t\nversion: 0.1.0\nmax_iterations: 1000\nsignals:\n  - {name: c, type: hard_gate, detector: {misbehave}, config: {mode: count}}\n",
    );
    let ws = demo_workspace();
    let state = tempfile::tempdir().unwrap();
    let (sessions, finishes, clients) = (6, 5, 8);
    let results = std::sync::Mutex::new(Vec::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..clients {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if i >= sessions * finishes {
                    break;
                }
                let session = format!("s{}", i % sessions);
                let (status, v) = server.check(&json!({
                    "skill": skill.path(),
                    "workspace": ws.path(),
                    "events": demo_events(3),
                    "session": session,
                    "state_dir": state.path(),
                }));
                assert_eq!(status, 200, "{v}");
                let count = v["signals"][0]["metadata"]["count"].as_u64().unwrap();
                results
                    .lock()
                    .unwrap()
                    .push((session, v["iteration"].as_u64().unwrap(), count));
            });
        }
    });
    let results = results.into_inner().unwrap();
    for s in 0..sessions {
        let session = format!("s{s}");
        let mut iterations: Vec<u64> = results
            .iter()
            .filter(|r| r.0 == session)
            .map(|r| r.1)
            .collect();
        let mut counts: Vec<u64> = results
            .iter()
            .filter(|r| r.0 == session)
            .map(|r| r.2)
            .collect();
        iterations.sort();
        counts.sort();
        let want: Vec<u64> = (1..=finishes as u64).collect();
        assert_eq!(iterations, want, "{session}");
        assert_eq!(counts, want, "{session}: the detector's own state");
    }
    // A CLI check of one of those sessions continues its count.
    let out = run(
        check(skill.path(), ws.path(), &demo_events(3), state.path()).args(["--session", "s0"]),
    );
    assert_eq!(
        json_out(&out)["iteration"],
        finishes as u64 + 1,
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_skill_changed_on_disk_is_loaded_again() {
    let server = Server::start(&[]);
    let skill = temp_skill(
        "name: first\nversion: 0.1.0\nsignals:\n  - {name: a, type: hard_gate, detector: {misbehave}, config: {mode: pass}}\n",
    );
    let ws = demo_workspace();
    let state = tempfile::tempdir().unwrap();
    let ask = || {
        let (status, v) = server.check(&json!({
            "skill": skill.path(), "workspace": ws.path(), "events": demo_events(3), "state_dir": state.path(),
        }));
        assert_eq!(status, 200, "{v}");
        v
    };
    // Past the window in which a load of fresh files is redone anyway, so
    // what follows tests that a change itself is seen.
    std::thread::sleep(Duration::from_millis(2100));
    let v = ask();
    assert_eq!(
        (v["skill"]["name"].as_str(), v["accepted"].as_bool()),
        (Some("first"), Some(true))
    );
    assert_eq!(ask()["skill"]["name"], "first");
    // The manifest changes (same size even), right after the last load.
    std::fs::write(
        skill.path().join("critic.yaml"),
        "name: secnd\nversion: 0.1.0\nsignals:\n  - {name: a, type: hard_gate, detector: {misbehave}, config: {mode: fire}}\n"
            .replace("{misbehave}", "misbehave.wasm"),
    )
    .unwrap();
    let v = ask();
    assert_eq!(
        (v["skill"]["name"].as_str(), v["accepted"].as_bool()),
        (Some("secnd"), Some(false)),
        "{v}"
    );
    // The detector changes: another component under the same name.
    std::fs::copy(
        root().join("skills/empty-patch/empty_patch.wasm"),
        skill.path().join("misbehave.wasm"),
    )
    .unwrap();
    let v = ask();
    assert_eq!(
        v["accepted"], true,
        "the empty-patch gate passes a non-empty patch: {v}"
    );
    // A broken manifest is reported, not served from memory.
    std::fs::write(skill.path().join("critic.yaml"), "name: [").unwrap();
    let (status, v) = server.check(&json!({
        "skill": skill.path(), "workspace": ws.path(), "events": demo_events(3), "state_dir": state.path(),
    }));
    assert_eq!(status, 422, "{v}");
}

#[test]
fn sigterm_lets_the_check_in_flight_finish_then_stops() {
    let server = Server::start(&[]);
    let skill = temp_skill(
        "name: t\nversion: 0.1.0\nsignals:\n  - {name: s, type: hard_gate, detector: {misbehave}, config: {mode: sleep, ms: 2500}}\n",
    );
    let ws = demo_workspace();
    let state = tempfile::tempdir().unwrap();
    let request = json!({
        "skill": skill.path(), "workspace": ws.path(), "events": demo_events(3), "state_dir": state.path(),
    });
    let in_flight = {
        let socket = server.socket.clone();
        std::thread::spawn(move || {
            raw_call(
                &socket,
                "POST",
                "/v1/check",
                request.to_string().as_bytes(),
                &[],
            )
        })
    };
    // The check is under way once it holds its session.
    wait_for_a_session(state.path());
    let sent = Instant::now();
    server.signal(libc::SIGTERM);
    let (status, v) = in_flight.join().unwrap();
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["signals"][0]["metadata"]["count"], 1);
    let mut server = server;
    let code = server.child.wait().unwrap();
    assert!(code.success(), "{code:?}");
    assert!(sent.elapsed() < Duration::from_secs(10));
    assert!(!server.socket.exists(), "the socket is removed");
}

#[test]
fn a_repository_the_agent_broke_is_a_counted_rejection_from_the_server_too() {
    let server = Server::start(&[]);
    let ws = demo_workspace();
    let config = ws.path().join(".git/config");
    let good = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{good}[core")).unwrap();
    let state = tempfile::tempdir().unwrap();
    let request = json!({
        "skill": root().join("examples/demo-skill"), "workspace": ws.path(),
        "events": demo_events(3), "state_dir": state.path(),
    });
    for iteration in 1..=2 {
        let (status, v) = server.check(&request);
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["accepted"], false, "{v}");
        assert_eq!(v["iteration"], iteration, "{v}");
        assert!(
            v["followup"]
                .as_str()
                .unwrap()
                .contains("could not read your changes"),
            "{v}"
        );
    }
    // Mended, the finish is judged again (and counted on).
    std::fs::write(&config, good).unwrap();
    let (status, v) = server.check(&request);
    assert_eq!(status, 200, "{v}");
    assert!(v["metadata"]["unjudged"].is_null(), "{v}");
    assert_eq!(v["signals"].as_array().unwrap().len(), 4);
}

// A server pinned to one session (an experiment's judge, which a confined
// agent can reach): what an agent would send to judge elsewhere, reset its
// count or read another file is refused; the session's own finish is
// judged in the pinned state and logged, with its patch, by the server.
#[test]
fn a_pinned_server_judges_its_session_only_and_logs_each_verdict() {
    let ws = demo_workspace();
    let other = demo_workspace();
    let run = tempfile::tempdir().unwrap();
    let agent_dir = run.path().join("agent");
    std::fs::create_dir_all(&agent_dir).unwrap();
    let events = agent_dir.join("events.jsonl");
    // A finish that ran no tests: rejected.
    std::fs::copy(demo_events(2), &events).unwrap();
    let secret = run.path().join("secret.txt");
    std::fs::write(&secret, "SECRET\n").unwrap();
    std::os::unix::fs::symlink(&secret, agent_dir.join("link.jsonl")).unwrap();
    let skill = root().join("examples/demo-skill");
    let state = run.path().join("state");
    let log = run.path().join("verdicts.jsonl");
    let pin = |flag: &str, path: &Path| [flag.to_string(), path.display().to_string()];
    let mut flags: Vec<String> = Vec::new();
    flags.extend(pin("--pin-skill", &skill));
    flags.extend(pin("--pin-workspace", ws.path()));
    flags.extend(pin("--pin-state-dir", &state));
    flags.extend(pin("--pin-events-under", &agent_dir));
    flags.extend(pin("--verdict-log", &log));
    flags.extend(["--pin-max-rejections".to_string(), "1".to_string()]);
    let server = Server::start(&flags.iter().map(String::as_str).collect::<Vec<_>>());
    let base = json!({"skill": skill, "workspace": ws.path(), "events": events});
    let with = |key: &str, value: Value| {
        let mut r = base.clone();
        r[key] = value;
        r
    };
    let elsewhere = tempfile::tempdir().unwrap();
    for (what, request) in [
        ("another workspace", with("workspace", json!(other.path()))),
        (
            "another skill",
            with("skill", json!(root().join("skills/fix-only"))),
        ),
        ("another state", with("state_dir", json!(elsewhere.path()))),
        ("a base", with("base", json!("HEAD"))),
        ("a file of the user's", with("events", json!(secret))),
        (
            "a link to one",
            with("events", json!(agent_dir.join("link.jsonl"))),
        ),
    ] {
        let (status, v) = server.check(&request);
        assert_eq!(status, 403, "{what}: {v}");
        assert!(!v.to_string().contains("SECRET"), "{what}: {v}");
    }
    assert!(!log.exists(), "nothing was judged");
    assert!(listing_is_empty(elsewhere.path()));
    // The session's own finishes: judged in the pinned state, under the
    // pinned cap whatever the request asks, and logged.
    let mut asked = base.clone();
    asked["max_rejections"] = json!(50);
    let (status, first) = server.check(&asked);
    assert_eq!(status, 200, "{first}");
    let (_, second) = server.check(&asked);
    assert!(state.is_dir());
    let logged: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(logged.len(), 2);
    assert_eq!(logged[0]["iteration"], 1);
    assert_eq!(logged[1]["iteration"], 2);
    assert_eq!(first["accepted"], false, "{first}");
    assert_eq!(
        second["budget_exhausted"], true,
        "the pinned cap of 1: {second}"
    );
    assert!(run.path().join("round-1/patch.diff").is_file());
}

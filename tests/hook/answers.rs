//! What the hook answers, in each agent's own protocol: bad input and bad
//! command lines never block, `--fail-closed` does, each agent's transcript
//! is found and read, and a closed stderr or a FIFO holds nothing up.

use super::*;

#[test]
fn bad_hook_input_and_bad_command_lines_never_block() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let ran_tests = skill("ran-tests");
    let s = ran_tests.to_str().unwrap();
    for agent in AGENTS {
        for (stdin, why) in [
            (&b"not json"[..], "not JSON"),
            (b"[1, 2]", "expected a JSON object"),
            (b"{}", "names no transcript"),
            (b"", "not JSON"),
        ] {
            let out = hook(agent, &["--skill", s], stdin, repo.path());
            assert_eq!(out.status.code(), Some(0), "{agent} {stdin:?}");
            assert!(!blocks(agent, &out), "{agent} {stdin:?}");
            if *agent != "openhands" || why != "names no transcript" {
                assert!(
                    stderr(&out).contains(why),
                    "{agent} {stdin:?}: {}",
                    stderr(&out)
                );
            }
        }
        // A typo in the hook's configuration: clap would exit 2, which
        // several agents read as "block".
        for args in [
            &["--skil", s][..],
            &[][..],
            &["--skill", s, "--max-rejections", "lots"][..],
        ] {
            let out = hook(agent, args, b"{}", repo.path());
            assert_eq!(
                out.status.code(),
                Some(0),
                "{agent} {args:?}: {}",
                stderr(&out)
            );
            assert!(!blocks(agent, &out));
        }
    }
    let out = hook("no-such-agent", &["--skill", s], b"{}", repo.path());
    assert_eq!(out.status.code(), Some(1), "not 2: {}", stderr(&out));
    assert!(stderr(&out).contains("unknown agent"));
    // `hook install` is the user's command, not a hook call: a misspelt
    // agent is an error (2), naming the agents there are.
    for args in [
        &["install", "claud-code", "--skill", s][..],
        &["uninstall", "claud-code"],
    ] {
        let verb = args[0];
        let out = run(critic().arg("hook").args(args).current_dir(repo.path()));
        assert_eq!(out.status.code(), Some(2), "{verb}: {}", stderr(&out));
        assert!(stderr(&out).contains("claude-code"), "{}", stderr(&out));
    }
}

#[test]
fn fail_closed_turns_a_failure_into_a_block() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    for agent in ["claude-code", "codex", "gemini", "cursor"] {
        let out = hook(
            agent,
            &["--skill", "/no/such/skill", "--fail-closed"],
            b"{}",
            repo.path(),
        );
        assert_eq!(out.status.code(), Some(0));
        assert!(
            blocks(agent, &out),
            "{agent}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
fn cursor_gets_a_followup_message_and_aborted_turns_are_not_judged() {
    let (repo, _) = finished_without_tests();
    let transcript = common::fixture("transcripts/cursor.reconstructed.jsonl");
    let ran_tests = skill("ran-tests");
    let state_dir = outside_state();
    let state = state_dir.path();
    let args = [
        "--skill",
        ran_tests.to_str().unwrap(),
        "--state-dir",
        state.to_str().unwrap(),
    ];
    let out = hook(
        "cursor",
        &args,
        &input("cursor", "c1", repo.path(), &transcript),
        repo.path(),
    );
    let reply: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        reply["followup_message"]
            .as_str()
            .unwrap()
            .contains("run the tests"),
        "{reply}"
    );
    let mut aborted: Value =
        serde_json::from_slice(&input("cursor", "c1", repo.path(), &transcript)).unwrap();
    aborted["status"] = "aborted".into();
    let mut with_bom = b"\xEF\xBB\xBF".to_vec();
    with_bom.extend(aborted.to_string().bytes());
    let out = hook("cursor", &args, &with_bom, repo.path());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "{}");
    assert!(stderr(&out).contains("aborted"), "{}", stderr(&out));
}

#[test]
fn openhands_finds_the_sessions_events_in_the_persistence_directory() {
    let repo = Repo::demo();
    repo.apply(&common::demo_patch(1));
    let persistence = tempfile::tempdir().unwrap();
    let events = persistence.path().join("0123abcd/events");
    std::fs::create_dir_all(&events).unwrap();
    let recorded = std::fs::read_to_string(common::demo_events(1)).unwrap();
    for (i, line) in recorded
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
    {
        std::fs::write(events.join(format!("event-{i:05}-x.json")), line).unwrap();
    }
    let state_dir = outside_state();
    let state = state_dir.path();
    let ran_tests = skill("ran-tests");
    let out = hook(
        "openhands",
        &[
            "--skill",
            ran_tests.to_str().unwrap(),
            "--state-dir",
            state.to_str().unwrap(),
            "--events",
            persistence.path().to_str().unwrap(),
        ],
        &input("openhands", "0123-abcd", repo.path(), Path::new("-")),
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    let states = common::agents::harness_state(state, "ran-tests");
    assert_eq!(states.len(), 1);
    assert_eq!(states[0]["session"], "0123-abcd");
}

#[test]
fn critic_events_shows_what_detectors_see() {
    let transcript = common::fixture("transcripts/cursor.reconstructed.jsonl");
    let out = run(critic().arg("events").arg(&transcript));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("action") && text.contains("[Write]") && text.contains("finish"),
        "{text}"
    );
    let out = run(critic()
        .args(["events", "--output", "json"])
        .arg(&transcript));
    let events: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        events.iter().all(|e| e.get("raw").is_none()),
        "detectors get no raw JSON inline"
    );
    let out = run(critic()
        .args(["events", "--events-format", "codex"])
        .arg(&transcript));
    assert!(out.status.success(), "a forced format reads what it can");
    let out = run(critic().args(["events", "/no/such/file.jsonl"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("/no/such/file.jsonl"));
}

#[test]
fn a_fifo_transcript_does_not_hold_the_copilot_hook() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let fifo = repo.path().join("events.jsonl");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let mut data: Value =
        serde_json::from_slice(&input("copilot", "s", repo.path(), &fifo)).unwrap();
    data["timestamp"] = 42.into();
    let started = std::time::Instant::now();
    let out = hook(
        "copilot",
        &["--skill", skill("ran-tests").to_str().unwrap()],
        data.to_string().as_bytes(),
        repo.path(),
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(0));
    // Not a transcript the agent may stop on: a rejection naming it.
    assert!(blocks("copilot", &out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("events.jsonl"));
}

#[test]
fn a_closed_stderr_does_not_keep_the_answer_from_the_agent() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    for agent in ["claude-code", "gemini"] {
        let mut child = critic()
            .args(["hook", agent, "--skill", "/no/such/skill"])
            .current_dir(repo.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stderr.take());
        let _ = child.stdin.take().unwrap().write_all(b"{}");
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{agent}");
        assert!(!out.stdout.is_empty(), "{agent}: the answer is written");
    }
}

#[test]
fn flags_before_the_agent_still_answer_in_its_protocol() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let out = run(critic()
        .args(["hook", "--skill", "/x", "gemini"])
        .current_dir(repo.path()));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .trim_start()
            .chars()
            .next(),
        Some('{')
    );
    let out = run(critic().args(["hook"]));
    assert_eq!(out.status.code(), Some(1));
}

// git missing from PATH is the host's failure, not the agent's: the agent
// stops (loudly), and nothing is counted against it.
#[test]
fn a_host_without_git_lets_the_agent_stop_and_counts_nothing() {
    let (repo, transcript) = finished_without_tests();
    let state = tempfile::tempdir().unwrap();
    let ran_tests = skill("ran-tests");
    let args = [
        "--skill",
        ran_tests.to_str().unwrap(),
        "--state-dir",
        state.path().to_str().unwrap(),
    ];
    let stdin = input("claude-code", "s", repo.path(), &transcript);
    let mut child = critic()
        .args(["hook", "claude-code"])
        .args(args)
        .current_dir(repo.path())
        .env("PATH", "/nonexistent")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(!blocks("claude-code", &out), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("NOT CHECKED") && err.contains("git"), "{err}");
    // The finish counted while git was looked for was taken back.
    let harness = state.path().join("ran-tests/s/harness.json");
    if let Ok(text) = std::fs::read_to_string(&harness) {
        let h: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (h["iteration"].as_u64(), h["rejections"].as_u64()),
            (Some(0), Some(0)),
            "{h}"
        );
    }
}

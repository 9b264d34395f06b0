//! `critic hook <agent>` as every agent calls it, fed hook inputs directly:
//! what it answers to a broken transcript, a hook input missing fields, a
//! bad command line, two sessions in one workspace; and `critic hook
//! install` / `uninstall` on configuration files holding other hooks. The
//! end-to-end runs with the real agents are in `tests/agent_*.rs`.

mod common;

use common::{critic, run, skill, stderr, Repo};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const AGENTS: &[&str] = &[
    "claude-code",
    "codex",
    "copilot",
    "gemini",
    "cursor",
    "openhands",
];

/// `critic hook <agent> [args]` with `input` on stdin.
fn hook(agent: &str, args: &[&str], input: &[u8], cwd: &Path) -> Output {
    let mut child = critic()
        .args(["hook", agent])
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A hook refused at its command line exits without reading.
    let _ = child.stdin.take().unwrap().write_all(input);
    child.wait_with_output().unwrap()
}

/// Whether `out` is the agent's "block" / "continue" answer.
fn blocks(agent: &str, out: &Output) -> bool {
    let stdout: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    match agent {
        "cursor" => stdout.get("followup_message").is_some(),
        "gemini" | "openhands" => stdout["decision"] == "deny",
        _ => stdout["decision"] == "block",
    }
}

/// A hook input in `agent`'s words naming `session`, `workspace` and `transcript`.
fn input(agent: &str, session: &str, workspace: &Path, transcript: &Path) -> Vec<u8> {
    let v = match agent {
        "copilot" => json!({"sessionId": session, "cwd": workspace, "transcriptPath": transcript,
                            "stopReason": "end_turn", "stop_hook_active": false}),
        "cursor" => json!({"conversation_id": session, "status": "completed", "loop_count": 0,
                           "workspace_roots": [workspace], "transcript_path": transcript}),
        "openhands" => {
            json!({"event_type": "Stop", "session_id": session, "working_dir": workspace})
        }
        _ => json!({"session_id": session, "cwd": workspace, "transcript_path": transcript,
                    "hook_event_name": "Stop", "stop_hook_active": false}),
    };
    v.to_string().into_bytes()
}

/// A state directory outside every work tree: a hook refuses state the
/// agent could reset.
fn outside_state() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// A repo with an uncommitted change and a Claude Code transcript of a
/// finish that never ran the tests (so ran-tests rejects it).
fn finished_without_tests() -> (Repo, std::path::PathBuf) {
    let repo = Repo::new(&[("a.py", "x = 1\n")]);
    repo.write("a.py", "x = 2\n");
    let transcript = repo.path().join(".transcript.jsonl");
    let lines = [
        json!({"type": "user", "sessionId": "s", "message": {"role": "user", "content": "change x"}}),
        json!({"type": "assistant", "sessionId": "s", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "Edit", "input": {"file_path": "a.py"}}]}}),
        json!({"type": "user", "sessionId": "s", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}}),
        json!({"type": "assistant", "sessionId": "s", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Done."}]}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&transcript, text).unwrap();
    repo.git(&["add", ".transcript.jsonl"]);
    repo.git(&["commit", "-q", "-m", "transcript"]);
    (repo, transcript)
}

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
fn two_sessions_in_one_workspace_keep_separate_counts_and_null_ids_share_nothing() {
    let (repo, transcript) = finished_without_tests();
    let state_dir = outside_state();
    let state = state_dir.path();
    let ran_tests = skill("ran-tests");
    let args = [
        "--skill",
        ran_tests.to_str().unwrap(),
        "--state-dir",
        state.to_str().unwrap(),
    ];
    let call = |session: &str| {
        hook(
            "claude-code",
            &args,
            &input("claude-code", session, repo.path(), &transcript),
            repo.path(),
        )
    };
    for _ in 0..2 {
        assert!(blocks("claude-code", &call("alpha")));
    }
    assert!(blocks("claude-code", &call("beta")));
    let sessions = common::agents::harness_state(state, "ran-tests");
    let mut counts: Vec<(String, u64)> = sessions
        .iter()
        .map(|s| {
            (
                s["session"].as_str().unwrap().to_string(),
                s["rejections"].as_u64().unwrap(),
            )
        })
        .collect();
    counts.sort();
    assert_eq!(counts, vec![("alpha".into(), 2), ("beta".into(), 1)]);

    // "null" and "" are not sessions: each falls back to its transcript,
    // so they count with nobody else.
    for id in ["null", ""] {
        assert!(blocks("claude-code", &call(id)));
    }
    let after = common::agents::harness_state(state, "ran-tests");
    let names: Vec<&str> = after
        .iter()
        .map(|s| s["session"].as_str().unwrap())
        .collect();
    assert!(
        !names.contains(&"null") && !names.contains(&""),
        "{names:?}"
    );
    let fallback: Vec<&Value> = after
        .iter()
        .filter(|s| s["session"].as_str().unwrap().starts_with("transcript-"))
        .collect();
    assert_eq!(fallback.len(), 1, "one transcript, one session: {names:?}");
    assert_eq!(fallback[0]["rejections"], 2);
}

#[test]
fn the_rejection_cap_holds_whatever_the_skill_allows() {
    let (repo, transcript) = finished_without_tests();
    let state_dir = outside_state();
    let state = state_dir.path();
    let ran_tests = skill("ran-tests");
    let args = [
        "--skill",
        ran_tests.to_str().unwrap(),
        "--state-dir",
        state.to_str().unwrap(),
        "--max-rejections",
        "1",
    ];
    let stdin = input("codex", "s", repo.path(), &transcript);
    let first = hook("codex", &args, &stdin, repo.path());
    assert!(blocks("codex", &first));
    let second = hook("codex", &args, &stdin, repo.path());
    assert!(!blocks("codex", &second));
    assert!(stderr(&second).contains("the cap"), "{}", stderr(&second));
    // Codex rejects output fields it does not know: only its own.
    let out: Value = serde_json::from_slice(&second.stdout).unwrap();
    assert_eq!(
        out.as_object().unwrap().keys().collect::<Vec<_>>(),
        vec!["systemMessage"]
    );
}

// The attack as it was found: after one rejection the agent breaks its own
// repository (`[core` appended to `.git/config`, HEAD on a missing branch,
// `.git` gone) so that the critic cannot diff. Each such finish is a
// rejection that names the problem, counted toward the cap, for every agent.
#[test]
fn breaking_the_repository_does_not_switch_the_critic_off() {
    let ran_tests = skill("ran-tests");
    for agent in AGENTS {
        let (repo, transcript) = finished_without_tests();
        let state = tempfile::tempdir().unwrap();
        let mut args = vec![
            "--skill",
            ran_tests.to_str().unwrap(),
            "--state-dir",
            state.path().to_str().unwrap(),
        ];
        if *agent == "openhands" {
            args.extend(["--events", transcript.to_str().unwrap()]);
        }
        let ask = |session: &str| {
            let stdin = input(agent, session, repo.path(), &transcript);
            hook(agent, &args, &stdin, repo.path())
        };
        let first = ask("s");
        assert!(blocks(agent, &first), "{agent}: {}", stderr(&first));
        let config = repo.path().join(".git/config");
        let good = std::fs::read_to_string(&config).unwrap();
        std::fs::write(&config, format!("{good}[core")).unwrap();
        let broken_config = ask("s");
        let said = String::from_utf8_lossy(&broken_config.stdout).into_owned();
        assert!(
            blocks(agent, &broken_config),
            "{agent}: {said} {}",
            stderr(&broken_config)
        );
        assert!(
            said.contains("could not read your changes"),
            "{agent}: {said}"
        );
        std::fs::write(&config, &good).unwrap();
        let head = repo.path().join(".git/HEAD");
        let good_head = std::fs::read_to_string(&head).unwrap();
        std::fs::write(&head, "ref: refs/heads/missing\n").unwrap();
        let missing_head = ask("s");
        assert!(
            blocks(agent, &missing_head),
            "{agent}: {}",
            stderr(&missing_head)
        );
        std::fs::write(&head, &good_head).unwrap();
        // The skill's three rejections are spent: the next finish ends
        // the loop, and says loudly that it was not checked.
        std::fs::rename(repo.path().join(".git"), repo.path().join("gone")).unwrap();
        let capped = ask("s");
        assert!(!blocks(agent, &capped), "{agent}: the loop must end");
        assert!(
            stderr(&capped).contains("UNCHECKED"),
            "{agent}: {}",
            stderr(&capped)
        );
        // Another session meets the missing repository as a rejection.
        let no_git = ask("t");
        assert!(blocks(agent, &no_git), "{agent}: {}", stderr(&no_git));
    }
}

/// [`hook`], failing the test (not hanging it) when the hook has not
/// answered within `limit`.
fn hook_within(agent: &str, args: &[&str], input: &[u8], cwd: &Path, limit: Duration) -> Output {
    let mut child = critic()
        .args(["hook", agent])
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(input);
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            panic!("the hook gave no answer within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

// The state directory is out of the workspace but not out of the agent's
// reach: whatever it plants where the critic keeps a session (a FIFO, a
// link to a device, a file in place of the directory, a hard link to a
// file of the user's) is a rejection that says so, answered at once, with
// nothing of the user's written; the next finish is judged again.
#[test]
fn tampered_state_is_a_rejection_answered_in_time() {
    let ran_tests = skill("ran-tests");
    let (repo, transcript) = finished_without_tests();
    let state = outside_state();
    let theirs = state.path().join("theirs.txt");
    std::fs::write(&theirs, "precious\n").unwrap();
    let args = [
        "--skill",
        ran_tests.to_str().unwrap(),
        "--state-dir",
        state.path().to_str().unwrap(),
        "--fail-closed",
    ];
    let mkfifo = |path: &Path| {
        assert!(std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap()
            .success())
    };
    type Plant<'a> = (&'a str, &'a dyn Fn(&Path));
    let plants: [Plant; 6] = [
        ("a FIFO as the lock", &|dir| {
            std::fs::remove_file(dir.join(".lock")).unwrap();
            mkfifo(&dir.join(".lock"))
        }),
        ("a FIFO as the count", &|dir| {
            std::fs::remove_file(dir.join("harness.json")).unwrap();
            mkfifo(&dir.join("harness.json"))
        }),
        ("a link to /dev/zero as the count", &|dir| {
            std::fs::remove_file(dir.join("harness.json")).unwrap();
            std::os::unix::fs::symlink("/dev/zero", dir.join("harness.json")).unwrap()
        }),
        ("a FIFO as the locked-out count", &|dir| {
            mkfifo(&dir.join("locked-rejections"))
        }),
        ("a hard link to the user's file", &|dir| {
            std::fs::hard_link(&theirs, dir.join("locked-rejections")).unwrap()
        }),
        ("a file in place of the session", &|dir| {
            std::fs::remove_dir_all(dir).unwrap();
            std::fs::write(dir, "not a directory").unwrap()
        }),
    ];
    for (i, (what, plant)) in plants.iter().enumerate() {
        let session = format!("s{i}");
        let stdin = input("claude-code", &session, repo.path(), &transcript);
        let ask = || {
            hook_within(
                "claude-code",
                &args,
                &stdin,
                repo.path(),
                Duration::from_secs(30),
            )
        };
        let first = ask();
        assert!(blocks("claude-code", &first), "{what}: {}", stderr(&first));
        plant(&state.path().join("ran-tests").join(&session));
        let tampered = ask();
        let said = String::from_utf8_lossy(&tampered.stdout).into_owned();
        assert!(
            blocks("claude-code", &tampered),
            "{what}: {said} {}",
            stderr(&tampered)
        );
        assert!(
            said.contains("state directory is not yours"),
            "{what}: {said}"
        );
        // Set aside, and the finish after it judged as usual.
        let again = ask();
        let said = String::from_utf8_lossy(&again.stdout).into_owned();
        assert!(blocks("claude-code", &again), "{what}: {said}");
        assert!(
            !said.contains("state directory is not yours"),
            "{what}: {said}"
        );
    }
    assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "precious\n");
}

// The hook judges the project, wherever the agent's shell is: a fresh,
// clean repository the agent made inside its project and `cd`'ed into is a
// rejection that says why, whether the agent names its project (Claude
// Code's CLAUDE_PROJECT_DIR) or the session's first finish recorded it
// (Codex names none); a plain subdirectory is the project.
#[test]
fn a_cwd_in_another_repository_is_a_rejection_not_a_clean_tree() {
    let ran_tests = skill("ran-tests");
    let (repo, transcript) = finished_without_tests();
    let nested = Repo::new(&[("clean.txt", "nothing to see\n")]);
    let inside = repo.path().join("scratch");
    std::fs::rename(nested.path(), &inside).unwrap();
    std::fs::create_dir(repo.path().join("sub")).unwrap();
    let state = outside_state();
    let args = [
        "--skill",
        ran_tests.to_str().unwrap(),
        "--state-dir",
        state.path().to_str().unwrap(),
    ];
    let ask = |agent: &str, session: &str, cwd: &Path, project: Option<&Path>| {
        let mut cmd = critic();
        cmd.args(["hook", agent])
            .args(args)
            .current_dir(cwd)
            .env_remove("CLAUDE_PROJECT_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(project) = project {
            cmd.env("CLAUDE_PROJECT_DIR", project);
        }
        let mut child = cmd.spawn().unwrap();
        let stdin = input(agent, session, cwd, &transcript);
        child.stdin.take().unwrap().write_all(&stdin).unwrap();
        let out = child.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        (blocks(agent, &out), said, stderr(&out))
    };
    let elsewhere = "inside another git repository";
    let (blocked, said, err) = ask("claude-code", "a", &inside, Some(repo.path()));
    assert!(blocked, "{said} {err}");
    assert!(said.contains(elsewhere), "{said}");
    let (blocked, said, err) = ask(
        "claude-code",
        "b",
        &repo.path().join("sub"),
        Some(repo.path()),
    );
    assert!(blocked, "{said} {err}");
    assert!(!said.contains(elsewhere), "{said}");
    // Codex names no project: the session's first finish is in it.
    let (blocked, said, err) = ask("codex", "c", repo.path(), None);
    assert!(blocked && !said.contains(elsewhere), "{said} {err}");
    let (blocked, said, err) = ask("codex", "c", &inside, None);
    assert!(blocked, "{said} {err}");
    assert!(said.contains(elsewhere), "{said}");
    // A --workspace that names no directory is the user's mistake: never a
    // rejection counted against the agent.
    let stdin = input("claude-code", "d", &inside, &transcript);
    let mut wrong = args.to_vec();
    wrong.extend(["--workspace", "/no/such/project"]);
    let out = hook("claude-code", &wrong, &stdin, &inside);
    assert!(!blocks("claude-code", &out), "{}", stderr(&out));
    assert!(stderr(&out).contains("not a directory"), "{}", stderr(&out));
}

// A transcript the agent broke is a counted rejection too, while a skill
// that cannot load (the user's side) lets the agent stop and says so.
#[test]
fn a_broken_transcript_is_a_rejection_and_a_broken_skill_lets_the_agent_stop() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let state_dir = outside_state();
    let state = state_dir.path();
    let broken = repo.path().join("broken.jsonl");
    std::fs::write(&broken, "{\"type\": \"user\", \"sessionId\": \n").unwrap();
    let ran_tests = skill("ran-tests");
    for agent in AGENTS {
        let mut args = vec![
            "--skill",
            ran_tests.to_str().unwrap(),
            "--state-dir",
            state.to_str().unwrap(),
        ];
        if *agent == "openhands" {
            args.extend(["--events", broken.to_str().unwrap()]);
        }
        let out = hook(
            agent,
            &args,
            &input(agent, &format!("s-{agent}"), repo.path(), &broken),
            repo.path(),
        );
        assert_eq!(out.status.code(), Some(0), "{agent}: {}", stderr(&out));
        assert!(
            blocks(agent, &out),
            "{agent} was let off by its own transcript"
        );
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            said.contains("broken.jsonl") && said.contains("transcript"),
            "{agent}: {said}"
        );

        let mut missing = vec!["--skill", "/no/such/skill"];
        if *agent == "openhands" {
            missing.extend(["--events", broken.to_str().unwrap()]);
        }
        let out = hook(
            agent,
            &missing,
            &input(agent, "s1", repo.path(), &broken),
            repo.path(),
        );
        assert_eq!(out.status.code(), Some(0), "{agent}");
        assert!(!blocks(agent, &out));
        let err = stderr(&out);
        assert!(
            err.contains("/no/such/skill") && err.contains("NOT CHECKED"),
            "{agent}: {err}"
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

/// A configuration file of `agent` holding a hook and a setting of someone else's.
fn foreign_config(agent: &str) -> (&'static str, Value) {
    let theirs = json!({"type": "command", "command": "notify-send done", "timeout": 5});
    match agent {
        "claude-code" => (
            ".claude/settings.json",
            json!({"model": "x", "hooks": {"Stop": [{"hooks": [theirs]}]}}),
        ),
        "codex" => (
            ".codex/hooks.json",
            json!({"hooks": {"Stop": [{"hooks": [theirs]}], "PreToolUse": [{"hooks": [theirs]}]}}),
        ),
        "gemini" => (
            ".gemini/settings.json",
            json!({"hooksConfig": {"enabled": true}, "hooks": {"AfterAgent": [{"hooks": [theirs]}]}}),
        ),
        "openhands" => (
            ".openhands/hooks.json",
            json!({"hooks": {"Stop": [{"matcher": "*", "hooks": [theirs]}]}}),
        ),
        "copilot" => (
            ".github/hooks/pluggable-critic.json",
            json!({"version": 1, "hooks": {"agentStop": [{"type": "command", "bash": "./audit.sh"}]}}),
        ),
        "cursor" => (
            ".cursor/hooks.json",
            json!({"version": 1, "hooks": {"stop": [{"command": "./audit.sh"}], "afterFileEdit": [{"command": "./fmt.sh"}]}}),
        ),
        _ => unreachable!(),
    }
}

#[test]
fn install_and_uninstall_leave_every_foreign_hook_intact() {
    let project = tempfile::tempdir().unwrap();
    let ran_tests = skill("ran-tests");
    for agent in AGENTS {
        let (rel, foreign) = foreign_config(agent);
        let file = project.path().join(rel);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let written = serde_json::to_string_pretty(&foreign).unwrap();
        std::fs::write(&file, &written).unwrap();
        let install = || {
            run(critic()
                .args(["hook", "install", agent, "--project"])
                .arg(project.path())
                .arg("--skill")
                .arg(&ran_tests)
                .args(["--", "--max-rejections", "3"]))
        };
        let out = install();
        assert!(out.status.success(), "{agent}: {}", stderr(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("added"),
            "{agent}"
        );
        let installed = std::fs::read_to_string(&file).unwrap();
        assert!(
            installed.contains("hook") && installed.contains(&format!("hook {agent} --skill")),
            "{agent}: {installed}"
        );
        assert!(installed.contains("--max-rejections 3"));
        // Idempotent.
        let out = install();
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("already"),
            "{agent}"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), installed);

        let out = run(critic()
            .args(["hook", "uninstall", agent, "--project"])
            .arg(project.path()));
        assert!(out.status.success(), "{agent}: {}", stderr(&out));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), written, "{agent}");
    }
}

/// The agents' own settings files (`tests/fixtures/agent-settings/`, whose
/// README names where each comes from): the place `critic hook install`
/// writes to, the file, and where in it the agent then finds the command.
const AGENT_SETTINGS: &[(&str, &str, &str, &str)] = &[
    // Claude Code's settings and hook examples (anthropics/claude-code).
    (
        "claude-code",
        ".claude/settings.json",
        "claude-code.settings.json",
        "/hooks/Stop/1/hooks/0/command",
    ),
    // Codex's hooks.json (developers.openai.com/codex/hooks).
    (
        "codex",
        ".codex/hooks.json",
        "codex.hooks.json",
        "/hooks/Stop/1/hooks/0/command",
    ),
    // Gemini CLI's configuration and hooks docs (google-gemini/gemini-cli).
    (
        "gemini",
        ".gemini/settings.json",
        "gemini.settings.json",
        "/hooks/AfterAgent/0/hooks/0/command",
    ),
    // Copilot CLI's hooks reference (docs.github.com).
    (
        "copilot",
        ".github/hooks/pluggable-critic.json",
        "copilot.hooks.json",
        "/hooks/agentStop/1/bash",
    ),
    // Cursor's hooks docs (cursor.com/docs/agent/hooks).
    (
        "cursor",
        ".cursor/hooks.json",
        "cursor.hooks.json",
        "/hooks/stop/1/command",
    ),
];

#[test]
fn install_and_uninstall_keep_the_agents_example_settings_byte_for_byte() {
    for &(agent, rel, fixture, command_at) in AGENT_SETTINGS {
        let original =
            std::fs::read_to_string(common::fixture("agent-settings").join(fixture)).unwrap();
        assert_install_round_trip(agent, rel, &original, command_at);
    }
}

// Gemini CLI's package ships an example hooks file of its own: installed
// into, then uninstalled from, it comes back byte for byte.
#[test]
fn install_and_uninstall_keep_gemini_clis_own_example_hooks_file() {
    let gemini = common::agents::npm_bin("gemini");
    let package = gemini
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("@google/gemini-cli/bundle/examples/hooks/hooks/hooks.json");
    let original =
        std::fs::read_to_string(&package).unwrap_or_else(|e| panic!("{}: {e}", package.display()));
    assert_install_round_trip(
        "gemini",
        ".gemini/settings.json",
        &original,
        "/hooks/AfterAgent/0/hooks/0/command",
    );
}

/// `critic hook install` into `original` (the agent's file `rel` of a
/// project) adds one run of text and changes no other byte, puts the
/// command at `command_at`, changes nothing when run again, and `uninstall`
/// gives `original` back byte for byte.
fn assert_install_round_trip(agent: &str, rel: &str, original: &str, command_at: &str) {
    let ran_tests = skill("ran-tests");
    let project = tempfile::tempdir().unwrap();
    let file = project.path().join(rel);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, original).unwrap();
    let install = || {
        run(critic()
            .args(["hook", "install", agent, "--project"])
            .arg(project.path())
            .arg("--skill")
            .arg(&ran_tests))
    };
    let out = install();
    assert!(out.status.success(), "{agent}: {}", stderr(&out));
    let installed = std::fs::read_to_string(&file).unwrap();
    // The install inserted one run of text, and every other byte is the
    // file's own: no number, escape or line of it was rewritten.
    let head = common_prefix(original, &installed);
    let tail = common_prefix(
        &original[head..].chars().rev().collect::<String>(),
        &installed[head..].chars().rev().collect::<String>(),
    );
    assert_eq!(head + tail, original.len(), "{agent}:\n{installed}");
    let added = &installed[head..installed.len() - tail];
    assert!(
        added.contains(&format!("hook {agent} --skill")),
        "{agent}: {added}"
    );
    // ... where the agent reads it.
    let doc: Value = serde_json::from_str(&installed).unwrap();
    let command = doc.pointer(command_at).and_then(Value::as_str);
    assert!(
        command.is_some_and(|c| c.contains(&format!("hook {agent} --skill"))),
        "{agent}: {installed}"
    );
    let out = install();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("already"),
        "{agent}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        installed,
        "{agent}"
    );

    let out = run(critic()
        .args(["hook", "uninstall", agent, "--project"])
        .arg(project.path()));
    assert!(out.status.success(), "{agent}: {}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original, "{agent}");
}

/// The length in bytes of the longest common prefix of `a` and `b`, whole
/// characters only.
fn common_prefix(a: &str, b: &str) -> usize {
    a.chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len_utf8())
        .sum()
}

#[test]
fn install_refuses_a_skill_it_cannot_load_and_a_file_it_cannot_read() {
    let project = tempfile::tempdir().unwrap();
    let out = run(critic()
        .args([
            "hook",
            "install",
            "claude-code",
            "--skill",
            "/no/such/skill",
            "--project",
        ])
        .arg(project.path()));
    assert!(!out.status.success());
    assert!(stderr(&out).contains("/no/such/skill"));
    assert!(!project.path().join(".claude").exists(), "nothing written");

    let settings = project.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, "{ \"model\": \"x\", }").unwrap();
    let out = run(critic()
        .args(["hook", "install", "claude-code", "--project"])
        .arg(project.path())
        .arg("--skill")
        .arg(skill("ran-tests")));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("settings.json") && stderr(&out).contains("line 1"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        "{ \"model\": \"x\", }"
    );
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

/// A `critic serve` on a socket in `dir`, until dropped.
struct Served(std::process::Child);

impl Served {
    fn start(socket: &Path) -> Served {
        Served::with(socket, &[], &[])
    }

    /// A server with more flags (`--check-timeout 3`) and environment.
    fn with(socket: &Path, flags: &[&str], env: &[(&str, &str)]) -> Served {
        use std::io::BufRead;
        let mut child = critic()
            .args(["serve", "--socket"])
            .arg(socket)
            .args(flags)
            .envs(env.iter().copied())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.contains("listening"), "{line}");
        // A skill written less than 2 s ago is reloaded by every check; the
        // shipped ones are old enough.
        Served(child)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn with_a_server_named_the_hook_is_its_client_and_falls_back_without_one() {
    let (repo, transcript) = finished_without_tests();
    let state_dir = outside_state();
    let state = state_dir.path();
    let ran_tests = skill("ran-tests");
    let socket = repo.path().join(".critic.sock");
    let stdin = input("claude-code", "s", repo.path(), &transcript);
    let call = || {
        let mut child = critic()
            .args(["hook", "claude-code", "--skill"])
            .arg(&ran_tests)
            .arg("--state-dir")
            .arg(state)
            .env("CRITIC_SERVER", &socket)
            .current_dir(repo.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&stdin).unwrap();
        child.wait_with_output().unwrap()
    };
    // No server yet: checked in process, and said so.
    let out = call();
    assert!(blocks("claude-code", &out));
    assert!(
        stderr(&out).contains("no server answers"),
        "{}",
        stderr(&out)
    );
    // With one: the same verdict, counted in the same state.
    let server = Served::start(&socket);
    let out = call();
    assert!(blocks("claude-code", &out), "{}", stderr(&out));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    drop(server);
    let states = common::agents::harness_state(state, "ran-tests");
    assert_eq!(states[0]["iteration"], 2);
    assert_eq!(states[0]["rejections"], 2);
}

#[test]
fn the_cap_counts_the_session_across_commits() {
    let (repo, transcript) = finished_without_tests();
    let state_dir = outside_state();
    let state = state_dir.path();
    let ran_tests = skill("ran-tests");
    let args = [
        "--skill",
        ran_tests.to_str().unwrap(),
        "--state-dir",
        state.to_str().unwrap(),
        "--max-rejections",
        "2",
    ];
    let stdin = input("codex", "s", repo.path(), &transcript);
    let mut answers = Vec::new();
    for round in 0..4 {
        answers.push(blocks("codex", &hook("codex", &args, &stdin, repo.path())));
        // The agent commits as it goes: a new base commit, a new round.
        repo.write("a.py", &format!("x = {}\n", round + 3));
        repo.git(&["commit", "-qam", &format!("round {round}")]);
        repo.write("a.py", &format!("x = {}\n", round + 10));
    }
    assert_eq!(answers, [true, true, false, false]);
}

#[test]
fn what_is_no_transcript_is_a_rejection_that_names_it() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    repo.write("a.txt", "b\n");
    let ran_tests = skill("ran-tests");
    let state = tempfile::tempdir().unwrap();
    let args = [
        "--skill",
        ran_tests.to_str().unwrap(),
        "--state-dir",
        state.path().to_str().unwrap(),
    ];
    let dir = tempfile::tempdir().unwrap();
    let codex_rollout = common::root().join("tests/fuzz-corpus/events/codex.jsonl");
    for (name, content) in [
        ("other.json", "{\"foo\": 1}\n"),
        ("empty.json", "[]"),
        ("blank.jsonl", "\n\n"),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        for agent in ["claude-code", "codex", "gemini", "copilot", "cursor"] {
            let out = hook(
                agent,
                &args,
                &input(agent, &format!("{agent}-{name}"), repo.path(), &path),
                repo.path(),
            );
            let said = String::from_utf8_lossy(&out.stdout);
            assert!(blocks(agent, &out), "{agent} {name}: {said}");
            assert!(said.contains(name), "{agent} {name}: {said}");
        }
    }
    // Another agent's real transcript is still a transcript: judged.
    let out = hook(
        "claude-code",
        &args,
        &input("claude-code", "s", repo.path(), &codex_rollout),
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(!stderr(&out).contains("cannot tell"), "{}", stderr(&out));
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

#[test]
fn install_refuses_files_it_must_not_rewrite() {
    use std::os::unix::fs::PermissionsExt;
    let project = tempfile::tempdir().unwrap();
    let settings = project.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let install = || {
        run(critic()
            .args(["hook", "install", "claude-code", "--project"])
            .arg(project.path())
            .arg("--skill")
            .arg(skill("ran-tests")))
    };
    std::os::unix::fs::symlink(project.path().join("dotfiles/settings.json"), &settings).unwrap();
    let out = install();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));
    assert!(std::fs::symlink_metadata(&settings)
        .unwrap()
        .file_type()
        .is_symlink());

    std::fs::remove_file(&settings).unwrap();
    std::fs::write(&settings, "{}").unwrap();
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o444)).unwrap();
    let out = install();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("read-only"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), "{}");
}

#[test]
fn install_refuses_another_users_file() {
    use std::os::unix::fs::MetadataExt;
    // Only root can give a file away.
    common::as_root_to_act_as_another_user();
    let project = tempfile::tempdir().unwrap();
    let settings = project.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, "{}").unwrap();
    std::os::unix::fs::chown(&settings, Some(65534), Some(65534)).unwrap();
    let out = run(critic()
        .args(["hook", "install", "claude-code", "--project"])
        .arg(project.path())
        .arg("--skill")
        .arg(skill("ran-tests")));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("owned by user 65534"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::metadata(&settings).unwrap().uid(), 65534);
}

/// A skill whose one gate runs the agent's tests, which sleep for half a
/// minute: slow code of the agent's, as the check's time limit meets it.
fn slow_tests_skill() -> tempfile::TempDir {
    common::temp_skill(
        "name: slow\nversion: 0.1.0\ncapabilities: [run]\nsignals:\n  - {name: tests, \
         type: hard_gate, detector: {misbehave}, timeout: 10m, config: {mode: run, request: \
         {argv: [sleep, \"30\"], timeout_ms: 600000}}}\n",
    )
}

/// The hook's answer to `stdin`, asked with `args` (and a server at
/// `server`, if any) in `repo` with more `env`, and how long it took.
fn timed_hook(
    args: &[&str],
    stdin: &[u8],
    repo: &Path,
    server: Option<&Path>,
    env: &[(&str, &str)],
) -> (Output, Duration) {
    let mut cmd = critic();
    cmd.args(["hook", "claude-code"])
        .args(args)
        .envs(env.iter().copied())
        .current_dir(repo);
    if let Some(socket) = server {
        cmd.env("CRITIC_SERVER", socket);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    (out, started.elapsed())
}

// The attack as it was found: the agent's tests sleep, so the check outlasts
// whoever waits for it (the agent kills an in-process hook at its timeout;
// a server answers 504) and the agent stops unchecked, uncounted. The
// check's time limit stops the run in time, and the skill's `on_error`
// (fail_closed) makes the finish a rejection counted toward the cap.
#[test]
fn tests_slower_than_the_time_limit_are_a_counted_rejection_in_time() {
    let (repo, transcript) = finished_without_tests();
    let skill = slow_tests_skill();
    let stdin = input("claude-code", "s", repo.path(), &transcript);
    let socket = repo.path().join(".critic.sock");
    // In process with a time limit of 2 s, then through a server that gives
    // a check 3 s (the hook's own limit is the default, far longer).
    let _server = Served::with(&socket, &["--check-timeout", "3"], &[]);
    for (through, limit) in [(None, Some("2")), (Some(socket.as_path()), None)] {
        let state_dir = outside_state();
        let mut args = vec![
            "--skill",
            skill.path().to_str().unwrap(),
            "--state-dir",
            state_dir.path().to_str().unwrap(),
            "--max-rejections",
            "1",
        ];
        if let Some(limit) = limit {
            args.extend(["--time-limit", limit]);
        }
        let (out, took) = timed_hook(&args, &stdin, repo.path(), through, &[]);
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            blocks("claude-code", &out),
            "{through:?}: {said} {}",
            stderr(&out)
        );
        assert!(said.contains("ran out of time"), "{through:?}: {said}");
        assert!(took < Duration::from_secs(10), "{through:?}: {took:?}");
        assert!(!stderr(&out).contains("NOT CHECKED"), "{}", stderr(&out));
        // Counted: the next finish reaches the cap and ends the loop.
        let (out, took) = timed_hook(&args, &stdin, repo.path(), through, &[]);
        assert!(
            !blocks("claude-code", &out),
            "{through:?}: the loop must end"
        );
        assert!(stderr(&out).contains("the cap"), "{}", stderr(&out));
        assert!(took < Duration::from_secs(10), "{through:?}: {took:?}");
        let states = common::agents::harness_state(state_dir.path(), "slow");
        assert_eq!(states[0]["rejections"], 1, "{through:?}: {states:#?}");
    }
}

// A server that gives up on a check (504) is no free stop either: the hook
// checks in process. Here the server's git waits on a FIFO the agent
// planted as its `.gitignore` for longer than the server gives a check;
// the hook's own git gives up sooner, and the finish is a counted
// rejection that names the problem.
#[test]
fn a_server_that_gives_up_is_followed_by_a_check_in_process() {
    let (repo, transcript) = finished_without_tests();
    let fifo = repo.path().join(".gitignore");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let state_dir = outside_state();
    let ran_tests = skill("ran-tests");
    let args = [
        "--skill",
        ran_tests.to_str().unwrap(),
        "--state-dir",
        state_dir.path().to_str().unwrap(),
    ];
    let stdin = input("claude-code", "s", repo.path(), &transcript);
    let socket = repo.path().join(".critic.sock");
    let _server = Served::with(
        &socket,
        &["--check-timeout", "2"],
        &[("CRITIC_GIT_TIMEOUT", "30")],
    );
    let (out, took) = timed_hook(
        &args,
        &stdin,
        repo.path(),
        Some(&socket),
        &[("CRITIC_GIT_TIMEOUT", "1")],
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(blocks("claude-code", &out), "{said} {}", stderr(&out));
    assert!(said.contains("could not read your changes"), "{said}");
    assert!(
        stderr(&out).contains("504") && stderr(&out).contains("checking in process"),
        "{}",
        stderr(&out)
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    let states = common::agents::harness_state(state_dir.path(), "ran-tests");
    assert_eq!(states[0]["rejections"], 1, "{states:#?}");
}

// A session still held by another check (one the server gave up on, still
// running its slow tests) is no free stop either: the finish is a rejection
// counted without the lock, and the cap still ends the loop.
#[test]
fn a_session_another_check_holds_is_a_counted_rejection() {
    let (repo, transcript) = finished_without_tests();
    let state_dir = outside_state();
    let ran_tests = skill("ran-tests");
    let args = [
        "--skill",
        ran_tests.to_str().unwrap(),
        "--state-dir",
        state_dir.path().to_str().unwrap(),
        "--max-rejections",
        "2",
        "--lock-timeout",
        "1",
    ];
    let stdin = input("claude-code", "s", repo.path(), &transcript);
    let session = state_dir.path().join("ran-tests/s");
    std::fs::create_dir_all(&session).unwrap();
    let held = std::fs::File::create(session.join(".lock")).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let socket = repo.path().join(".critic.sock");
    let _server = Served::start(&socket);
    // In process, then through the server, which finds the session locked
    // (409): the hook checks in process, and meets the lock too.
    for through in [None, Some(socket.as_path())] {
        let (out, took) = timed_hook(&args, &stdin, repo.path(), through, &[]);
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            blocks("claude-code", &out),
            "{through:?}: {said} {}",
            stderr(&out)
        );
        assert!(said.contains("still busy"), "{through:?}: {said}");
        assert!(took < Duration::from_secs(10), "{through:?}: {took:?}");
    }
    let (out, _) = timed_hook(&args, &stdin, repo.path(), None, &[]);
    assert!(!blocks("claude-code", &out), "the cap ends the loop");
    assert!(stderr(&out).contains("UNCHECKED"), "{}", stderr(&out));
    // Once the lock is free, the rejections given without it still count.
    drop(held);
    let (out, _) = timed_hook(&args, &stdin, repo.path(), None, &[]);
    assert!(!blocks("claude-code", &out), "{}", stderr(&out));
    assert!(stderr(&out).contains("the cap"), "{}", stderr(&out));
}

// The skill copied into the workspace, or the state kept there: the agent
// could rewrite the manifest to accept anything, break it to be let stop,
// or reset its own count. `hook install` refuses both; a hook pointed at
// them another way judges nothing, and its answer is a counted rejection,
// never a stop the agent could bring about by breaking the files.
#[test]
fn a_skill_or_state_inside_the_workspace_is_refused_and_never_a_free_stop() {
    let (repo, transcript) = finished_without_tests();
    let ran_tests = skill("ran-tests");
    let inside = repo.path().join("critic-skill");
    common::copy_tree(&ran_tests, &inside);
    let outside = tempfile::tempdir().unwrap();
    let link = outside.path().join("skill");
    std::os::unix::fs::symlink(&inside, &link).unwrap();
    let install = |skill: &Path, more: &[&str]| {
        run(critic()
            .args(["hook", "install", "claude-code", "--project"])
            .arg(repo.path())
            .arg("--skill")
            .arg(skill)
            .arg("--")
            .args(more))
    };
    let in_repo_state = repo.path().join(".critic-state");
    for (skill, more) in [
        (inside.as_path(), vec![]),
        (link.as_path(), vec![]),
        (
            ran_tests.as_path(),
            vec!["--state-dir", in_repo_state.to_str().unwrap()],
        ),
    ] {
        let out = install(skill, &more);
        assert!(!out.status.success(), "{skill:?} {more:?}");
        assert!(
            stderr(&out).contains("inside the project"),
            "{}",
            stderr(&out)
        );
        assert!(!repo.path().join(".claude").exists(), "nothing written");
    }
    // A project in a subdirectory belongs to its repository, which the
    // hook judges: a skill elsewhere in that repository is inside too.
    let sub = repo.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let out = run(critic()
        .args(["hook", "install", "claude-code", "--project"])
        .arg(&sub)
        .arg("--skill")
        .arg(&inside));
    assert!(!out.status.success(), "{}", stderr(&out));
    assert!(!sub.join(".claude").exists(), "nothing written");

    let state_dir = outside_state();
    let args = [
        "--skill",
        inside.to_str().unwrap(),
        "--state-dir",
        state_dir.path().to_str().unwrap(),
        "--max-rejections",
        "2",
    ];
    let stdin = input("claude-code", "s", repo.path(), &transcript);
    for manifest in [None, Some("# broken\n")] {
        if let Some(text) = manifest {
            std::fs::write(inside.join("critic.yaml"), text).unwrap();
        }
        let out = hook("claude-code", &args, &stdin, repo.path());
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            blocks("claude-code", &out),
            "{manifest:?}: {said} {}",
            stderr(&out)
        );
        assert!(said.contains("inside your workspace"), "{said}");
        assert!(stderr(&out).contains("NOT CHECKED"), "{}", stderr(&out));
    }
    let out = hook("claude-code", &args, &stdin, repo.path());
    assert!(!blocks("claude-code", &out), "the cap ends the loop");

    // State inside the work tree: counted in the user's own state
    // directory instead, where the agent cannot reset it.
    let home_state = tempfile::tempdir().unwrap();
    let mut child = critic()
        .args(["hook", "claude-code", "--skill"])
        .arg(&ran_tests)
        .arg("--state-dir")
        .arg(&in_repo_state)
        .env("XDG_STATE_HOME", home_state.path())
        .current_dir(repo.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(blocks("claude-code", &out), "{}", stderr(&out));
    assert!(stderr(&out).contains("state directory"), "{}", stderr(&out));
    assert!(
        !in_repo_state.exists(),
        "nothing kept where the agent can reach"
    );
    assert!(common::snapshot(home_state.path())
        .keys()
        .any(|f| f.ends_with("harness.json")));
}

// The hook's check must answer before the agent gives up on the hook:
// `install` gives it a time limit a margin below the timeout it writes,
// in each agent's unit, and refuses one the agent would cut short.
#[test]
fn install_gives_the_check_a_time_limit_within_the_agents_timeout() {
    let ran_tests = skill("ran-tests");
    for (agent, rel, timeout_at) in [
        (
            "claude-code",
            ".claude/settings.json",
            "/hooks/Stop/0/hooks/0/timeout",
        ),
        (
            "gemini",
            ".gemini/settings.json",
            "/hooks/AfterAgent/0/hooks/0/timeout",
        ),
        (
            "copilot",
            ".github/hooks/pluggable-critic.json",
            "/hooks/agentStop/0/timeoutSec",
        ),
    ] {
        let project = tempfile::tempdir().unwrap();
        let install = |more: &[&str]| {
            run(critic()
                .args(["hook", "install", agent, "--project"])
                .arg(project.path())
                .arg("--skill")
                .arg(&ran_tests)
                .args(more))
        };
        let out = install(&["--timeout", "120"]);
        assert!(out.status.success(), "{agent}: {}", stderr(&out));
        let doc: Value =
            serde_json::from_slice(&std::fs::read(project.path().join(rel)).unwrap()).unwrap();
        let unit = if agent == "gemini" { 1000 } else { 1 };
        assert_eq!(doc.pointer(timeout_at), Some(&json!(120 * unit)), "{doc:#}");
        assert!(
            doc.to_string().contains("--time-limit 108"),
            "{agent}: {doc:#}"
        );
        for (more, why) in [
            (&["--timeout", "5"][..], "at least 10 s"),
            (
                &["--timeout", "120", "--", "--time-limit", "115"][..],
                "at most 108 s",
            ),
        ] {
            let out = install(more);
            assert!(!out.status.success(), "{agent} {more:?}");
            assert!(stderr(&out).contains(why), "{}", stderr(&out));
        }
        // One within it is kept as given.
        let out = install(&["--timeout", "120", "--", "--time-limit", "60"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = std::fs::read_to_string(project.path().join(rel)).unwrap();
        assert!(
            text.contains("--time-limit 60") && !text.contains("--time-limit 108"),
            "{text}"
        );
    }
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

// A project-scope install's own configuration file is not part of the
// agent's work: it is kept out of the judged patch, and uninstall removes
// what install made (the file, its directory, the exclude line) when
// nothing else is in it.
#[test]
fn a_project_install_stays_out_of_the_patch_and_uninstall_leaves_nothing_behind() {
    let ran_tests = skill("ran-tests");
    for agent in AGENTS {
        let repo = Repo::demo();
        let exclude = repo.path().join(".git/info/exclude");
        let before = std::fs::read_to_string(&exclude).unwrap_or_default();
        let out = run(critic()
            .args(["hook", "install", agent, "--project"])
            .arg(repo.path())
            .arg("--skill")
            .arg(&ran_tests));
        assert!(out.status.success(), "{agent}: {}", stderr(&out));
        let untracked = Command::new("git")
            .args(["ls-files", "--others", "--exclude-standard"])
            .current_dir(repo.path())
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&untracked.stdout),
            "",
            "{agent}: the install's file is not in the patch"
        );
        let out = run(critic()
            .args(["hook", "uninstall", agent, "--project"])
            .arg(repo.path()));
        assert!(out.status.success(), "{agent}: {}", stderr(&out));
        let left = Command::new("git")
            .args(["status", "--porcelain", "--ignored"])
            .current_dir(repo.path())
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&left.stdout), "", "{agent}");
        assert_eq!(
            std::fs::read_to_string(&exclude).unwrap_or_default(),
            before
        );
    }
    // The help names how a hook is answered, for every agent.
    let help = run(critic().args(["hook", "--help"]));
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("critic hook <AGENT>"), "{help}");
    for agent in AGENTS {
        assert!(help.contains(agent), "{agent}: {help}");
    }
}

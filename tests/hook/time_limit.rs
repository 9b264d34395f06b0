//! Promise 23a of docs/SECURITY.md: a check answers before the agent gives up,
//! in process or through a server, and a session another check holds is a
//! counted rejection.

use super::*;

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

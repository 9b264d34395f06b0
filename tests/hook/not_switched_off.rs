//! Promises 13 and 23 to 23c of docs/SECURITY.md: the agent cannot switch the
//! critic off, by breaking its repository, its transcript or the critic's
//! state, by moving its shell, or by keeping the critic's files in its work
//! tree.

use super::*;

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

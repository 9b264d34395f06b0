//! Promises 22 and 24 of docs/SECURITY.md: a stop hook never traps its agent;
//! the cap is counted per session, in the critic's state.

use super::*;

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

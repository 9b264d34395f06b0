//! The shipped skills, each on real repositories and recorded events.

mod common;

use common::*;
use serde_json::Value;

fn verdict(skill: &str, repo: &Repo, events: &std::path::Path, extra: &[&str]) -> (i32, Value) {
    let state = tempfile::tempdir().unwrap();
    let out = run(check(&common::skill(skill), repo.path(), events, state.path()).args(extra));
    let code = out.status.code().unwrap();
    assert_ne!(code, 2, "{}", stderr(&out));
    let v = json_out(&out);
    assert_schema("verdict.schema.json", &v);
    (code, v)
}

#[test]
fn empty_patch_and_agent_finished_match_openhands() {
    let repo = Repo::demo();
    assert_eq!(verdict("empty-patch", &repo, &demo_events(1), &[]).0, 1);
    assert_eq!(verdict("agent-finished", &repo, &demo_events(1), &[]).0, 1);
    repo.apply(&demo_patch(2));
    assert_eq!(verdict("empty-patch", &repo, &demo_events(2), &[]).0, 0);
    assert_eq!(verdict("agent-finished", &repo, &demo_events(2), &[]).0, 0);
    // Cut the stream before the last finish: the agent did not finish.
    let text = std::fs::read_to_string(demo_events(2)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let cut = lines
        .iter()
        .rposition(|l| l.contains("\"FinishAction\""))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let partial = dir.path().join("partial.jsonl");
    std::fs::write(&partial, lines[..cut].join("\n")).unwrap();
    let (code, v) = verdict("agent-finished", &repo, &partial, &[]);
    assert_eq!(code, 1);
    assert_eq!(v["signals"][0]["metadata"]["reason"], "no finish action");
}

#[test]
fn ran_tests_needs_a_test_run_after_the_last_edit() {
    let repo = Repo::demo();
    repo.apply(&demo_patch(2));
    let (code, v) = verdict("ran-tests", &repo, &demo_events(2), &[]);
    assert_eq!(code, 1);
    assert!(
        v["followup"]
            .as_str()
            .unwrap()
            .contains("after your last file edit"),
        "{v}"
    );
    let (code, v) = verdict("ran-tests", &repo, &demo_events(3), &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["signals"][0]["metadata"]["test_runs_after_edit"][0]["exit_code"],
        0
    );
}

#[test]
fn ran_tests_and_agent_finished_see_the_end_of_a_long_stream() {
    // The recorded stream with 150 file views (not edits) between the last
    // test run and the finish: both gates fetch the stream from its end, in
    // growing chunks, until they reach what they look for.
    let repo = Repo::demo();
    repo.apply(&demo_patch(3));
    let text = std::fs::read_to_string(demo_events(3)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let finish = lines
        .iter()
        .rposition(|l| l.contains("\"FinishAction\""))
        .unwrap();
    let mut long: Vec<String> = lines[..finish].iter().map(|l| l.to_string()).collect();
    for round in 0..75 {
        for l in &lines[2..4] {
            long.push(l.replace("\"id\":\"", &format!("\"id\":\"v{round}-")));
        }
    }
    long.extend(lines[finish..].iter().map(|l| l.to_string()));
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("long.jsonl");
    std::fs::write(&events, long.join("\n") + "\n").unwrap();
    let (code, v) = verdict("ran-tests", &repo, &events, &[]);
    assert_eq!(code, 0, "{v}");
    let meta = &v["signals"][0]["metadata"];
    assert_eq!(meta["last_edit_event"], 11, "{meta}");
    assert_eq!(meta["test_runs_after_edit"][0]["event"], 16, "{meta}");
    assert_eq!(meta["test_runs_after_edit"][0]["exit_code"], 0, "{meta}");
    assert_eq!(verdict("agent-finished", &repo, &events, &[]).0, 0);
    // Without its last test run the same long stream fails the gate.
    let no_run: Vec<String> = long
        .iter()
        .enumerate()
        .filter(|(i, _)| !(16..=17).contains(i))
        .map(|(_, l)| l.clone())
        .collect();
    std::fs::write(&events, no_run.join("\n") + "\n").unwrap();
    let (code, v) = verdict("ran-tests", &repo, &events, &[]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["signals"][0]["metadata"]["last_edit_event"], 11);
}

#[test]
fn test_only_and_clean_patch_reject_source_edits() {
    let repo = Repo::demo();
    repo.write("tests/test_touching.py", "def test_t():\n    pass\n");
    assert_eq!(verdict("test-only", &repo, &demo_events(1), &[]).0, 0);
    assert_eq!(verdict("clean-patch", &repo, &demo_events(1), &[]).0, 0);
    repo.write("intervals/merge.py", "def merge(x):\n    return x\n");
    let (code, v) = verdict("test-only", &repo, &demo_events(1), &[]);
    assert_eq!(code, 1);
    assert_eq!(
        v["signals"][0]["metadata"]["non_test_files"],
        serde_json::json!(["intervals/merge.py"])
    );
    let (code, v) = verdict("clean-patch", &repo, &demo_events(1), &[]);
    assert_eq!(code, 1);
    assert!(v["followup"]
        .as_str()
        .unwrap()
        .contains("intervals/merge.py"));
}

#[test]
fn structural_validity_catches_broken_python_and_bad_patches() {
    let repo = Repo::demo();
    repo.apply(&demo_patch(3));
    assert_eq!(
        verdict("structural-validity", &repo, &demo_events(3), &[]).0,
        0
    );
    repo.write(
        "intervals/merge.py",
        "def merge(intervals:\n    return []\n",
    );
    let (code, v) = verdict("structural-validity", &repo, &demo_events(3), &[]);
    assert_eq!(code, 1);
    let p = &v["signals"][0]["metadata"]["problems"][0];
    assert_eq!(p["kind"], "python-syntax");
    // Ruff reports the missing ')' where the next statement starts.
    assert!(
        p["detail"]
            .as_str()
            .unwrap()
            .starts_with("line 2, column 5"),
        "{p}"
    );

    // A --patch that does not apply to the base is refused.
    let clean = Repo::demo();
    let (code, _) = verdict(
        "structural-validity",
        &clean,
        &demo_events(3),
        &["--patch", demo_patch(3).to_str().unwrap()],
    );
    assert_eq!(code, 0);
    let stale = std::fs::read_to_string(demo_patch(3)).unwrap().replace(
        "-        if merged and start <",
        "-        if merged and begin <",
    );
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("stale.patch");
    std::fs::write(&p, stale).unwrap();
    let (code, v) = verdict(
        "structural-validity",
        &clean,
        &demo_events(3),
        &["--patch", p.to_str().unwrap()],
    );
    assert_eq!(code, 1);
    assert_eq!(
        v["signals"][0]["metadata"]["problems"][0]["kind"],
        "does-not-apply"
    );
}

#[test]
fn the_demo_skill_carries_the_shipped_components() {
    let demo = root().join("examples/demo-skill");
    for (skill, file) in [
        ("empty-patch", "empty_patch.wasm"),
        ("structural-validity", "structural_validity.wasm"),
        ("ran-tests", "ran_tests.wasm"),
        ("agent-finished", "agent_finished.wasm"),
    ] {
        assert!(
            std::fs::read(demo.join(file)).unwrap() == std::fs::read(root().join("skills").join(skill).join(file)).unwrap(),
            "examples/demo-skill/{file} differs from skills/{skill}/{file}: copy the rebuilt component"
        );
    }
}

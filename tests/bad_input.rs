//! Bad input gets a clear error naming the file and place (exit 2), and loses
//! nothing. Input the agent controls (its events, its work tree) is no
//! error the agent could stop on: the finish is a counted rejection (exit 1)
//! whose verdict names the file and place.

mod common;

use common::*;

fn pass_skill() -> tempfile::TempDir {
    temp_skill("name: t\nversion: 0.1.0\nsignals:\n  - {name: s, type: hard_gate, detector: {misbehave}, config: {mode: pass}}\n")
}

fn fails_with(cmd: &mut std::process::Command, expect: &[&str]) {
    let out = run(cmd);
    assert_eq!(
        out.status.code(),
        Some(2),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(out.stdout.is_empty(), "no verdict on error");
    let err = stderr(&out);
    for e in expect {
        assert!(err.contains(e), "expected {e:?} in:\n{err}");
    }
}

/// A check whose finish could not be judged: a rejection (exit 1) whose
/// verdict and stderr say each of `expect`.
fn unjudged_with(cmd: &mut std::process::Command, expect: &[&str]) {
    let out = run(cmd);
    let v = json_out(&out);
    assert_eq!(out.status.code(), Some(1), "{v:#}");
    assert_eq!(v["accepted"], false);
    let problem = v["metadata"]["unjudged"].as_str().unwrap();
    let (followup, err) = (v["followup"].as_str().unwrap(), stderr(&out));
    for e in expect {
        assert!(
            problem.contains(e) && followup.contains(e),
            "expected {e:?} in:\n{v:#}"
        );
        assert!(err.contains(e), "expected {e:?} in:\n{err}");
    }
}

#[test]
fn malformed_yaml_names_line_and_column() {
    let skill = temp_skill("name: t\nversion: 0.1.0\nsignals: [\n  {name: s\n");
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    fails_with(
        &mut check(skill.path(), repo.path(), &demo_events(1), state.path()),
        &["critic.yaml:", "YAML syntax error"],
    );
}

#[test]
fn schema_violations_name_line_column_and_field() {
    let skill = temp_skill(
        "name: Bad Name\nversion: 0.1.0\nthreshold: 2\nsignals:\n  - name: s\n    type: soft\n    detector: {misbehave}\n    colour: red\n",
    );
    let out = run(critic().arg("validate").arg(skill.path()));
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    for e in [
        "critic.yaml:1:7: name:",
        "critic.yaml:3:12: threshold:",
        "critic.yaml:5:5: signals[0]: missing required field",
        "critic.yaml:8:5: signals[0]: unknown field",
    ] {
        assert!(err.contains(e), "expected {e:?} in:\n{err}");
    }
}

#[test]
fn missing_detector_and_missing_manifest() {
    let skill = temp_skill(
        "name: t\nversion: 0.1.0\nsignals:\n  - {name: s, type: hard_gate, detector: gone.wasm}\n",
    );
    fails_with(
        critic().arg("validate").arg(skill.path()),
        &[
            "critic.yaml:4:",
            "signals[0].detector",
            "gone.wasm",
            "does not exist",
        ],
    );
    let empty = tempfile::tempdir().unwrap();
    fails_with(
        critic().arg("validate").arg(empty.path()),
        &["critic.yaml: cannot read"],
    );
}

#[test]
fn events_missing_empty_or_malformed() {
    let skill = pass_skill();
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A path on the user's command line that names nothing is their
    // mistake: an error, no finish counted.
    let missing = dir.path().join("nope.jsonl");
    let out = run(&mut check(
        skill.path(),
        repo.path(),
        &missing,
        state.path(),
    ));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("nope.jsonl: no such file or directory"),
        "{}",
        stderr(&out)
    );
    let empty = dir.path().join("empty.jsonl");
    std::fs::write(&empty, "\n\n").unwrap();
    unjudged_with(
        &mut check(skill.path(), repo.path(), &empty, state.path()),
        &["empty.jsonl: the events file is empty"],
    );
    let bad = dir.path().join("bad.jsonl");
    let good_line = std::fs::read_to_string(demo_events(1))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    std::fs::write(
        &bad,
        format!("{good_line}\n{good_line}\n{{\"kind\": \"MessageEvent\",\n"),
    )
    .unwrap();
    unjudged_with(
        &mut check(skill.path(), repo.path(), &bad, state.path()),
        &["bad.jsonl:3:", "malformed JSON"],
    );
}

#[test]
fn workspace_must_be_a_repo_with_commits() {
    let skill = pass_skill();
    let state = tempfile::tempdir().unwrap();
    let plain = tempfile::tempdir().unwrap();
    unjudged_with(
        &mut check(skill.path(), plain.path(), &demo_events(1), state.path()),
        &["not a git repository"],
    );
    let fresh = tempfile::tempdir().unwrap();
    std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(fresh.path())
        .status()
        .unwrap();
    unjudged_with(
        &mut check(skill.path(), fresh.path(), &demo_events(1), state.path()),
        &["has no commits"],
    );
}

#[test]
fn corrupt_state_is_moved_aside_with_a_warning() {
    let skill = temp_skill("name: t\nversion: 0.1.0\nsignals:\n  - {name: n, type: hard_gate, detector: {misbehave}, config: {mode: count}}\n");
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let out = run(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(json_out(&out)["signals"][0]["metadata"]["count"], 1);
    let file = state.path().join("t/default/signal-n.json");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_schema("state.schema.json", &doc);
    assert_schema(
        "state.schema.json",
        &serde_json::from_str(
            &std::fs::read_to_string(state.path().join("t/default/harness.json")).unwrap(),
        )
        .unwrap(),
    );
    std::fs::write(&file, "{\"schema_version\": 1, \"state\": ").unwrap();
    let out = run(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    let v = json_out(&out);
    assert_eq!(v["signals"][0]["metadata"]["count"], 1, "started fresh");
    assert!(
        v["warnings"][0]
            .as_str()
            .unwrap()
            .contains("corrupt state file"),
        "{v}"
    );
    let aside: Vec<_> = std::fs::read_dir(state.path().join("t/default"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("signal-n.json.corrupt-")
        })
        .collect();
    assert_eq!(aside.len(), 1);
    assert_eq!(
        std::fs::read_to_string(aside[0].path()).unwrap(),
        "{\"schema_version\": 1, \"state\": "
    );
}

#[test]
fn concurrent_checks_on_one_session_run_in_turn() {
    let skill = temp_skill(
        "name: t\nversion: 0.1.0\nsignals:\n  - {name: n, type: hard_gate, detector: {misbehave}, config: {mode: sleep, ms: 400}}\n",
    );
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let children: Vec<_> = (0..2)
        .map(|_| {
            check(skill.path(), repo.path(), &demo_events(3), state.path())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut seen: Vec<(u64, u64)> = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            let v = json_out(&out);
            (
                v["iteration"].as_u64().unwrap(),
                v["signals"][0]["metadata"]["count"].as_u64().unwrap(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(seen, [(1, 1), (2, 2)], "each saw the other's update");
    let mut third = check(skill.path(), repo.path(), &demo_events(3), state.path());
    let held = std::fs::File::open(state.path().join("t/default/.lock")).unwrap();
    held.lock().unwrap();
    third.args(["--lock-timeout", "0"]);
    fails_with(
        &mut third,
        &["another `critic check` is running on session \"default\""],
    );
}

#[test]
fn a_patch_file_that_is_not_a_diff() {
    let skill = pass_skill();
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("fix.patch");
    std::fs::write(
        &p,
        "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n-a\n",
    )
    .unwrap();
    fails_with(
        check(skill.path(), repo.path(), &demo_events(1), state.path())
            .arg("--patch")
            .arg(&p),
        &[
            "fix.patch:6:1: not a valid git diff",
            "diff ends inside a hunk",
        ],
    );
}

#[test]
fn a_check_that_fails_after_counting_the_finish_takes_the_count_back() {
    // The finish is counted while git runs; the detector fails to load later.
    let skill = temp_skill(
        "name: t\nversion: 0.1.0\nsignals:\n  - {name: s, type: hard_gate, detector: d.wasm, config: {mode: pass}}\n",
    );
    let detector = skill.path().join("d.wasm");
    std::fs::copy(misbehave_wasm(), &detector).unwrap();
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let iteration = |out: &std::process::Output| json_out(out)["iteration"].as_u64().unwrap();
    let checked = || {
        run(&mut check(
            skill.path(),
            repo.path(),
            &demo_events(1),
            state.path(),
        ))
    };
    assert_eq!(iteration(&checked()), 1);

    std::fs::write(&detector, b"not a component").unwrap();
    fails_with(
        &mut check(skill.path(), repo.path(), &demo_events(1), state.path()),
        &["d.wasm", "not a WebAssembly file"],
    );
    std::fs::copy(misbehave_wasm(), &detector).unwrap();
    assert_eq!(iteration(&checked()), 2, "the failed check was not counted");

    // Something else in place of the signal's state is no failure of the
    // check: it is set aside, and the finish is a counted rejection that
    // says so (the agent could have put it there); the next check goes on.
    let signal_state = state.path().join("t/default/signal-s.json");
    let _ = std::fs::remove_file(&signal_state);
    std::fs::create_dir(&signal_state).unwrap();
    unjudged_with(
        &mut check(skill.path(), repo.path(), &demo_events(1), state.path()),
        &["signal-s.json", "a directory"],
    );
    assert!(!signal_state.exists(), "set aside");
    assert_eq!(iteration(&checked()), 4, "the rejection was counted");
}

/// A file named on the command line may be a secret rather than the input
/// it should be (`--patch ~/.ssh/id_rsa`, a `critic.yaml` or state file
/// symlinked to one): what the check prints about it names the file, line
/// and column, never a byte of what it holds.
#[test]
fn errors_about_named_files_never_quote_them() {
    let dir = tempfile::tempdir().unwrap();
    let skill = pass_skill();
    let repo = Repo::demo();
    for secret in secret_files(dir.path()) {
        let name = secret.file_name().unwrap().to_str().unwrap();
        let quotes_nothing = |what: &str, out: &std::process::Output| {
            for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
                let text = String::from_utf8_lossy(bytes);
                assert!(
                    !quotes(&text, &secret),
                    "{what}: {stream} quotes the file:\n{text}"
                );
            }
        };
        let state = tempfile::tempdir().unwrap();

        let out = run(
            check(skill.path(), repo.path(), &demo_events(1), state.path())
                .arg("--patch")
                .arg(&secret),
        );
        quotes_nothing(&format!("--patch {name}"), &out);
        assert_eq!(out.status.code(), Some(2), "--patch {name}");
        let err = stderr(&out);
        assert!(names_line_and_column(&err, name), "--patch {name}: {err}");
        assert!(err.contains("not a valid git diff"), "{err}");

        // Detected, and forced into every format (a reader that gets far
        // enough complains about a value, or warns about a record).
        let formats = std::iter::once(None).chain(
            pluggable_critic::agents::FORMATS
                .iter()
                .map(|f| Some(f.name)),
        );
        for format in formats {
            let mut cmd = check(skill.path(), repo.path(), &secret, state.path());
            cmd.args(format.map(|f| ["--events-format", f]).iter().flatten());
            let out = run(&mut cmd);
            quotes_nothing(&format!("--events {name} ({format:?})"), &out);
        }

        let linked = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(&secret, linked.path().join("critic.yaml")).unwrap();
        let out = run(critic().arg("validate").arg(linked.path()));
        quotes_nothing(&format!("critic.yaml -> {name}"), &out);
        assert_eq!(out.status.code(), Some(2), "critic.yaml -> {name}");
        let err = stderr(&out);
        assert!(
            names_line_and_column(&err, "critic.yaml"),
            "critic.yaml -> {name}: {err}"
        );
        let out = run(&mut check(
            linked.path(),
            repo.path(),
            &demo_events(1),
            state.path(),
        ));
        quotes_nothing(&format!("check, critic.yaml -> {name}"), &out);
        assert_eq!(out.status.code(), Some(2), "check, critic.yaml -> {name}");

        let state = tempfile::tempdir().unwrap();
        let session = state.path().join("t/default");
        std::fs::create_dir_all(&session).unwrap();
        std::os::unix::fs::symlink(&secret, session.join("harness.json")).unwrap();
        let out = run(&mut check(
            skill.path(),
            repo.path(),
            &demo_events(1),
            state.path(),
        ));
        quotes_nothing(&format!("harness.json -> {name}"), &out);
        // A link is not followed: it is tampering, set aside unread.
        let v = json_out(&out);
        let problem = v["metadata"]["unjudged"].as_str().unwrap_or_default();
        assert!(
            v["metadata"]["cause"] == "state" && problem.contains("harness.json: a symbolic link"),
            "harness.json -> {name}: {v:#}"
        );
    }
}

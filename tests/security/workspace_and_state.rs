//! Promises 2, 4, 10 and 13 of docs/SECURITY.md: what the host writes into the
//! workspace, where it keeps state and compiled components, and what it does
//! with state an agent tampered with.

use super::*;

// 2. Feedback files never follow a symlink the agent planted.
#[test]
fn feedback_files_do_not_follow_planted_symlinks() {
    let skill = skill_with(
        json!({"mode": "artifacts", "artifacts": [{"path": "notes/hint.md", "content": "pwned"}]}),
        "",
    );
    for planted in [
        ".critic",
        ".critic/feedback",
        ".critic/feedback/t",
        ".critic/feedback/t/notes",
    ] {
        let repo = Repo::demo();
        let outside = tempfile::tempdir().unwrap();
        let link = repo.path().join(planted);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(outside.path(), &link).unwrap();
        let state = tempfile::tempdir().unwrap();
        let (code, v, err, _) = verdict_of(&mut check(
            skill.path(),
            repo.path(),
            &demo_events(3),
            state.path(),
        ));
        assert!(
            listing(outside.path()).is_empty(),
            "{planted}: wrote outside the workspace: {:?}",
            listing(outside.path())
        );
        // The signal fails (closed): the agent is sent back, nothing written.
        assert_eq!(code, 1, "{planted}: {err}");
        let e = v["signals"][0]["error"].as_str().unwrap();
        assert!(e.contains("symlink"), "{planted}: {e}");
    }
    // The file itself a symlink to a file outside: replaced, never written through.
    let repo = Repo::demo();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    std::fs::create_dir_all(repo.path().join(".critic/feedback/t/notes")).unwrap();
    std::os::unix::fs::symlink(
        &victim,
        repo.path().join(".critic/feedback/t/notes/hint.md"),
    )
    .unwrap();
    let state = tempfile::tempdir().unwrap();
    let (code, v, err, _) = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(code, 1, "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    assert_eq!(
        std::fs::read_to_string(repo.path().join(".critic/feedback/t/notes/hint.md")).unwrap(),
        "pwned"
    );
    assert_eq!(
        v["signals"][0]["artifacts"][0],
        ".critic/feedback/t/notes/hint.md"
    );
    // No repository of the skill's making among the feedback files.
    for path in [".git/config", "a/.git", "a/.GIT/hooks/post-checkout"] {
        let skill = skill_with(
            json!({"mode": "artifacts", "artifacts": [{"path": path, "content": "[core]"}]}),
            "",
        );
        let repo = Repo::demo();
        let state = tempfile::tempdir().unwrap();
        let (code, v, err, _) = verdict_of(&mut check(
            skill.path(),
            repo.path(),
            &demo_events(3),
            state.path(),
        ));
        assert_eq!(code, 1, "{path}: {err}");
        let e = v["signals"][0]["error"].as_str().unwrap();
        assert!(e.contains(".git"), "{path}: {e}");
        assert!(!repo.path().join(".critic/feedback").exists(), "{path}");
    }
}

// 4. State lives outside the workspace: editing `.git` cannot switch the critic off.
#[test]
fn state_is_kept_outside_the_workspace() {
    let skill = skill_with(json!({"mode": "fire", "text": "not yet"}), "");
    let repo = Repo::demo();
    let xdg = tempfile::tempdir().unwrap();
    let before = snapshot(repo.path());
    let check_once = || {
        let mut cmd = critic();
        cmd.args(["check", "--skill"])
            .arg(skill.path())
            .arg("--workspace")
            .arg(repo.path())
            .arg("--events")
            .arg(demo_events(3))
            .env("XDG_STATE_HOME", xdg.path());
        verdict_of(&mut cmd)
    };
    let (code, v, err, _) = check_once();
    assert_eq!(code, 1, "{err}");
    assert_eq!(v["iteration"], 1);
    assert_eq!(
        snapshot(repo.path()),
        before,
        "the workspace and .git are untouched"
    );
    let root = xdg.path().join("pluggable-critic/workspaces");
    let dirs = listing(&root);
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    use std::os::unix::fs::MetadataExt;
    let mode = std::fs::metadata(xdg.path().join("pluggable-critic"))
        .unwrap()
        .mode();
    assert_eq!(mode & 0o077, 0, "private: {mode:o}");
    // What an agent would try: a forged state where the old default was.
    let forged = repo.path().join(".git/critic/state/t/default");
    std::fs::create_dir_all(&forged).unwrap();
    std::fs::write(
        forged.join("harness.json"),
        r#"{"schema_version":1,"skill":"t","session":"default","instance":"x","iteration":9,"rejections":5}"#,
    )
    .unwrap();
    let (code, v, _, _) = check_once();
    assert_eq!(code, 1);
    assert_eq!(v["iteration"], 2);
    assert_eq!(v["budget_exhausted"], false);
}

// 10. A compile cache another user could write is not trusted.
#[test]
fn a_shared_cache_directory_is_not_trusted() {
    use std::os::unix::fs::PermissionsExt;
    let cache = tempfile::tempdir().unwrap();
    std::fs::set_permissions(cache.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let skill = skill_with(json!({"mode": "pass"}), "");
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let mut cmd = check(skill.path(), repo.path(), &demo_events(3), state.path());
    cmd.env("CRITIC_CACHE_DIR", cache.path())
        .env("CRITIC_LOG", "warn");
    let (code, _, err, _) = verdict_of(&mut cmd);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("writable by group or others"), "{err}");
    assert!(listing(cache.path()).is_empty(), "nothing cached there");

    // Below a private top, every level and every entry is checked too.
    std::fs::set_permissions(cache.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let warm = |cmd: &mut std::process::Command| {
        cmd.env("CRITIC_CACHE_DIR", cache.path())
            .env("CRITIC_LOG", "warn");
        let (code, _, err, _) = verdict_of(cmd);
        assert_eq!(code, 0, "{err}");
        err
    };
    warm(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    let engine_dir = cache.path().join(&listing(cache.path())[0]);
    let entry = listing(&engine_dir)
        .into_iter()
        .find(|n| n.ends_with(".cwasm"))
        .expect("a compiled entry");
    let entry = engine_dir.join(entry);
    std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o666)).unwrap();
    let err = warm(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert!(err.contains("not loading a cache entry"), "{err}");
    assert_eq!(
        std::fs::metadata(&entry).unwrap().permissions().mode() & 0o777,
        0o600,
        "recompiled and replaced"
    );
    std::fs::set_permissions(&engine_dir, std::fs::Permissions::from_mode(0o757)).unwrap();
    let err = warm(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert!(
        err.contains("not using the component cache") && err.contains("writable by group"),
        "{err}"
    );
    // Without a home, nothing falls back to a predictable shared directory.
    let mut cmd = check(skill.path(), repo.path(), &demo_events(3), state.path());
    cmd.env_remove("CRITIC_CACHE_DIR")
        .env_remove("HOME")
        .env_remove("XDG_CACHE_HOME");
    let (code, _, err, _) = verdict_of(&mut cmd);
    assert_eq!(code, 0, "{err}");
}

// 13. Corrupt or hostile state is moved aside or bounded, never fatal.
#[test]
fn corrupt_state_is_moved_aside_and_counts_do_not_wrap() {
    let skill = skill_with(json!({"mode": "pass"}), "");
    let repo = Repo::demo();
    let state = tempfile::tempdir().unwrap();
    let first = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(first.0, 0, "{}", first.2);
    let session = state.path().join("t/default");
    let harness = session.join("harness.json");
    std::fs::write(&harness, b"{\"iteration\": \xff\xfe}").unwrap();
    let (code, v, err, _) = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["iteration"], 1);
    assert!(
        listing(&session).iter().any(|n| n.contains("corrupt")),
        "{:?}",
        listing(&session)
    );
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&harness).unwrap()).unwrap();
    doc["iteration"] = json!(u32::MAX);
    std::fs::write(&harness, doc.to_string()).unwrap();
    let (code, v, err, _) = verdict_of(&mut check(
        skill.path(),
        repo.path(),
        &demo_events(3),
        state.path(),
    ));
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["iteration"], u32::MAX);
}

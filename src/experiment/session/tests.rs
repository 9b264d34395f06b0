//! Unit tests of `session`.

use super::*;

/// A workspace whose CoHarden feedback holds `saved` as t0.
fn workspace(saved: &str) -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    let dir = ws.path().join(".critic/feedback/coharden/final-test");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("reproduction.py"), saved).unwrap();
    std::fs::write(
        ws.path().join("reproduction.py"),
        "assert True  # the lax t_k\n",
    )
    .unwrap();
    ws
}

fn outcome(file: &str, content: &str) -> Value {
    json!({"test": "t0", "test_file": file,
               "test_sha256": hex::encode(Sha256::digest(content.as_bytes()))})
}

#[test]
fn t0_is_put_back_when_its_digest_matches() {
    let t0 = "assert merge([(1, 3), (3, 5)]) == [(1, 5)]\n";
    let ws = workspace(t0);
    restore_t0(ws.path(), "coharden", &outcome("reproduction.py", t0)).unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.path().join("reproduction.py")).unwrap(),
        t0
    );
}

#[test]
fn a_t0_changed_after_the_check_or_a_path_out_is_refused() {
    let t0 = "assert merge([(1, 3), (3, 5)]) == [(1, 5)]\n";
    // The agent rewrote the saved t0 after the verdict named its digest.
    let ws = workspace("assert True\n");
    let e = restore_t0(ws.path(), "coharden", &outcome("reproduction.py", t0)).unwrap_err();
    assert!(e.contains("not the verdict's test_sha256"), "{e}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("reproduction.py")).unwrap(),
        "assert True  # the lax t_k\n",
        "nothing written"
    );
    for bad in ["../reproduction.py", "/etc/passwd", ".git/config", ""] {
        let e = restore_t0(ws.path(), "coharden", &outcome(bad, t0)).unwrap_err();
        assert!(e.contains("not a plain relative path"), "{bad}: {e}");
    }
    let e = restore_t0(ws.path(), "../x", &outcome("reproduction.py", t0)).unwrap_err();
    assert!(e.contains("not a plain relative path"), "{e}");
}

#[test]
fn no_link_the_agent_planted_is_followed() {
    let t0 = "assert True\n";
    let ws = workspace(t0);
    let outside = tempfile::tempdir().unwrap();
    // The saved file a link out: not read.
    let saved = ws.path().join(".critic/feedback/coharden/final-test/tests");
    std::os::unix::fs::symlink(outside.path(), &saved).unwrap();
    std::fs::write(outside.path().join("t.py"), t0).unwrap();
    let e = restore_t0(ws.path(), "coharden", &outcome("tests/t.py", t0)).unwrap_err();
    assert!(e.contains("cannot be read"), "{e}");
    // The target's directory a link out: nothing written through it.
    std::fs::remove_file(&saved).unwrap();
    std::fs::create_dir(&saved).unwrap();
    std::fs::write(saved.join("t.py"), t0).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("tests")).unwrap();
    std::fs::remove_file(outside.path().join("t.py")).unwrap();
    let e = restore_t0(ws.path(), "coharden", &outcome("tests/t.py", t0)).unwrap_err();
    assert!(e.contains("refusing to follow it"), "{e}");
    assert!(!outside.path().join("t.py").exists());
}

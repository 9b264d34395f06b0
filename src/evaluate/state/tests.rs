//! Unit tests of `state`.

use super::*;
use serde_json::json;

const T: Duration = Duration::from_secs(5);

#[test]
fn state_round_trips_per_signal() {
    let dir = tempfile::tempdir().unwrap();
    let store = StateStore::new(dir.path());
    {
        let mut s = store.open("sk", "sess", "base@ws", T).unwrap();
        assert_eq!(s.signal_state("a").unwrap(), Value::Null);
        s.save_signal("a", json!({"round": 2})).unwrap();
        s.harness.iteration = 1;
        s.save_harness().unwrap();
    }
    let mut s = store.open("sk", "sess", "base@ws", T).unwrap();
    assert_eq!(s.signal_state("a").unwrap(), json!({"round": 2}));
    assert_eq!(s.harness.iteration, 1);
}

#[test]
fn another_instance_resets_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let store = StateStore::new(dir.path());
    {
        let s = store.open("sk", "sess", "one", T).unwrap();
        s.save_signal("a", json!(1)).unwrap();
        s.save_harness().unwrap();
    }
    let mut s = store.open("sk", "sess", "two", T).unwrap();
    assert_eq!(s.signal_state("a").unwrap(), Value::Null);
    assert_eq!(s.warnings.len(), 1);
}

#[test]
fn corrupt_files_are_moved_aside() {
    let dir = tempfile::tempdir().unwrap();
    let store = StateStore::new(dir.path());
    let path = {
        let s = store.open("sk", "sess", "i", T).unwrap();
        s.save_harness().unwrap();
        s.save_signal("a", json!(1)).unwrap();
        s.dir().join("signal-a.json")
    };
    std::fs::write(&path, "{not json").unwrap();
    let mut s = store.open("sk", "sess", "i", T).unwrap();
    assert_eq!(s.signal_state("a").unwrap(), Value::Null);
    assert!(s.warnings[0].contains("corrupt state file"));
    let aside: Vec<_> = std::fs::read_dir(s.dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1);
    assert_eq!(
        std::fs::read_to_string(aside[0].path()).unwrap(),
        "{not json"
    );
}

#[test]
fn a_held_lock_times_out_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = StateStore::new(dir.path());
    let _held = store.open("sk", "sess", "i", T).unwrap();
    let e = store
        .open("sk", "sess", "i", Duration::from_millis(50))
        .unwrap_err()
        .to_string();
    assert!(e.contains("another `critic check` is running"), "{e}");
}

#[test]
fn odd_session_ids_get_safe_distinct_names() {
    assert_eq!(dir_name("abc-1"), "abc-1");
    let a = dir_name("../etc");
    assert!(!a.contains('/') && !a.starts_with('.'), "{a}");
    assert_ne!(dir_name("a/b"), dir_name("a_b/"));
}

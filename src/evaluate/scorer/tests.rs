//! Unit tests of `scorer`.

use super::*;
use std::path::Path;

fn result(kind: SignalKind, weight: f64, triggered: bool) -> SignalResult {
    let status = if triggered {
        SignalStatus::Triggered
    } else {
        SignalStatus::Passed
    };
    SignalResult::new("s", kind, weight, status)
}

#[test]
fn score_is_the_unfired_share_of_soft_weight() {
    let r = vec![
        result(SignalKind::HardGate, 0.0, false),
        result(SignalKind::Soft, 1.0, true),
        result(SignalKind::Soft, 3.0, false),
    ];
    assert_eq!(score(&r, false), 0.75);
    assert_eq!(score(&r, true), 0.0);
    assert_eq!(score(&r[..1], false), 1.0);
}

#[test]
fn a_finish_counted_ahead_is_evaluated_once_and_a_wrong_guess_is_taken_back() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let load = || crate::skill::load(&root.join("examples/demo-skill")).unwrap();
    let name = load().manifest.name.clone();
    let runtime = Runtime::new(None).unwrap();
    let request = CheckRequest::new("skill", "events");
    let dir = tempfile::tempdir().unwrap();
    let store = |dir: &Path| StateStore::new(dir).without_fsync();
    let critic = SkillCritic::new(load(), &runtime, store(dir.path()), &request).unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let finish = Finish {
        events: Vec::new().into(),
        patch: critic_sdk::Patch::default(),
        workspace: workspace.path().to_path_buf(),
        session: "lib".into(),
        transcript: None,
    };
    let ahead = |dir: &Path, instance: &str| {
        SkillCritic::count_ahead(&store(dir), &name, "lib", instance, Duration::from_secs(5))
            .unwrap()
    };

    let counted = ahead(dir.path(), &finish.instance_key()).expect("no other instance's state");
    assert_eq!(
        critic.evaluate_counted(&finish, counted).unwrap().iteration,
        1
    );
    assert_eq!(critic.evaluate(&finish).unwrap().iteration, 2);
    // A guess of another instance would reset this one's state: refused.
    assert!(ahead(dir.path(), "other@/x").is_none());
    assert_eq!(critic.evaluate(&finish).unwrap().iteration, 3);

    // A finish that turns out to be another instance's: the count goes
    // back and evaluation starts that instance's state over.
    let other = tempfile::tempdir().unwrap();
    let fresh = SkillCritic::new(load(), &runtime, store(other.path()), &request).unwrap();
    let counted = ahead(other.path(), "guess@/x").unwrap();
    let v = fresh.evaluate_counted(&finish, counted).unwrap();
    assert_eq!(v.iteration, 1, "{}", v.to_text());
}

//! Subclass mode: embedding the host as a library, through the crate's
//! public API only (what `lib.rs` exports).

mod common;

use common::*;
use pluggable_critic::{
    decide, load_events, load_skill, CheckRequest, Critic, Error, Finish, Runtime, Skill,
    SkillCritic, StateStore, TestClassifier, Verdict, Workspace,
};

fn finish(repo: &Repo, n: usize) -> Finish {
    let ws = Workspace::open(repo.path()).unwrap();
    let classifier = TestClassifier::new(&["tests/**".to_string()]).unwrap();
    Finish {
        events: load_events(&demo_events(n), None).unwrap().into(),
        patch: ws.worktree_patch(&ws.head, &classifier).unwrap(),
        workspace: ws.root.canonicalize().unwrap(),
        session: "lib".into(),
        transcript: None,
    }
}

/// The skill's critic on `runtime`, its state under `state` (not fsync'd).
fn critic_on(skill: Skill, runtime: &Runtime, state: &std::path::Path) -> SkillCritic {
    SkillCritic::new(
        skill,
        runtime,
        StateStore::new(state).without_fsync(),
        &CheckRequest::new("skill", "events"),
    )
    .unwrap()
}

#[test]
fn skill_critic_evaluates_in_process() {
    let skill = load_skill(&root().join("examples/demo-skill")).unwrap();
    let runtime = Runtime::new(Some(&cache_dir())).unwrap();
    let state = tempfile::tempdir().unwrap();
    let critic = critic_on(skill, &runtime, state.path());
    let repo = Repo::demo();
    let v = decide(&critic, &finish(&repo, 1)).unwrap();
    assert!(!v.accepted);
    assert!(v
        .followup
        .as_deref()
        .unwrap()
        .starts_with("The critic reviewed your finish"));
    repo.apply(&demo_patch(3));
    let v = decide(&critic, &finish(&repo, 3)).unwrap();
    assert!(v.accepted, "{}", v.to_text());
    assert_eq!(v.iteration, 2);
}

/// A critic written directly against the trait, with its own follow-up.
struct NoTodo;

impl Critic for NoTodo {
    fn evaluate(&self, finish: &Finish) -> Result<Verdict, Error> {
        let skill = load_skill(&skill("empty-patch"))?;
        let runtime = Runtime::new(None).map_err(|e| Error::Internal(e.to_string()))?;
        let dir = tempfile::tempdir().map_err(|e| Error::Internal(e.to_string()))?;
        let inner = SkillCritic::new(
            skill,
            &runtime,
            StateStore::new(dir.path()),
            &CheckRequest::new("skill", "events"),
        )?;
        let mut v = inner.evaluate(finish)?;
        if finish
            .patch
            .added_lines()
            .any(|(_, _, text)| text.contains("TODO"))
        {
            v.accepted = false;
            v.score = 0.0;
        }
        Ok(v)
    }

    fn followup(&self, verdict: &Verdict) -> String {
        format!(
            "Finish {}: remove the TODOs before you finish.",
            verdict.iteration
        )
    }
}

#[test]
fn a_trait_critic_overrides_the_followup() {
    let repo = Repo::demo();
    repo.write("intervals/merge.py", "# TODO: fix\n");
    let v = decide(&NoTodo, &finish(&repo, 3)).unwrap();
    assert!(!v.accepted);
    assert_eq!(
        v.followup.as_deref(),
        Some("Finish 1: remove the TODOs before you finish.")
    );
}

#[test]
fn normalized_events_match_their_schema() {
    for path in [
        demo_events(3),
        fixture("openhands-v0/output.jsonl"),
        fixture("openhands/events"),
    ] {
        let events = load_events(&path, None).unwrap();
        assert!(!events.is_empty());
        for e in &events {
            assert_schema("event.schema.json", &serde_json::to_value(e).unwrap());
        }
    }
}

#[test]
fn every_runtime_gives_the_same_verdicts_call_after_call() {
    let skill = load_skill(&root().join("examples/demo-skill")).unwrap();
    let runtimes = [
        ("new", Runtime::new(Some(&cache_dir())).unwrap()),
        ("pooled", Runtime::pooled(Some(&cache_dir()), 8).unwrap()),
        (
            "short_lived",
            Runtime::short_lived(Some(&cache_dir())).unwrap(),
        ),
    ];
    let states: Vec<_> = runtimes
        .iter()
        .map(|_| tempfile::tempdir().unwrap())
        .collect();
    let critics: Vec<_> = runtimes
        .iter()
        .zip(&states)
        .map(|((_, rt), state)| critic_on(skill.clone(), rt, state.path()))
        .collect();
    let repo = Repo::demo();
    repo.apply(&demo_patch(3));
    let finish = finish(&repo, 3);
    let statuses = |v: &Verdict| v.signals.iter().map(|s| s.status).collect::<Vec<_>>();
    // More calls than the pool has slots: slots are reused, and the
    // short-lived runtime keeps every instance it made.
    for _ in 0..5 {
        let verdicts: Vec<Verdict> = critics
            .iter()
            .map(|c| decide(c, &finish).unwrap())
            .collect();
        for ((name, _), v) in runtimes.iter().zip(&verdicts).skip(1) {
            assert_eq!(v.accepted, verdicts[0].accepted, "{name}");
            assert_eq!(v.followup, verdicts[0].followup, "{name}");
            assert_eq!(
                statuses(v),
                statuses(&verdicts[0]),
                "{name}: {}",
                v.to_text()
            );
        }
    }
}

#[test]
fn a_full_pool_is_a_clear_error() {
    // Two slow soft signals run side by side; a pool of one slot starts one.
    let skill = temp_skill(
        "name: t\nversion: 0.1.0\nsignals:\n  - {name: a, type: soft, weight: 1, detector: {misbehave}, config: {mode: sleep, ms: 300}}\n  - {name: b, type: soft, weight: 1, detector: {misbehave}, config: {mode: sleep, ms: 300}}\n",
    );
    let skill = load_skill(skill.path()).unwrap();
    let runtime = Runtime::pooled(Some(&cache_dir()), 1).unwrap();
    let state = tempfile::tempdir().unwrap();
    let critic = critic_on(skill, &runtime, state.path());
    let repo = Repo::demo();
    let v = decide(&critic, &finish(&repo, 1)).unwrap();
    let errors: Vec<&str> = v
        .signals
        .iter()
        .filter_map(|s| s.error.as_deref())
        .collect();
    assert_eq!(errors.len(), 1, "{}", v.to_text());
    assert!(
        errors[0].contains("could not start") && errors[0].contains("`calls` limit"),
        "{}",
        errors[0]
    );
}

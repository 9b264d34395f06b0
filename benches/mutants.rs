//! Deterministic mutant generation (the CoHarden operators in
//! `critic_sdk::mutants`) on a 200-line Python file whose fix touches ten
//! scattered lines: comparisons, arithmetic, booleans and integer literals,
//! as a real fix does. Measured natively and inside a WebAssembly component
//! under wasmtime (the `mutants-probe` fixture, evaluated in process with and
//! without the generation, so the difference is the generation alone). Run
//! with `cargo bench --bench mutants`; the figures go in docs/PERFORMANCE.md
//! (target: 20 ms per fix).

use criterion::{criterion_group, criterion_main, Criterion};
use critic_sdk::mutants::{all, sample, FixFile, Operator};
use critic_sdk::{Patch, PatchOrigin};
use pluggable_critic::detector::wasm::Runtime;
use pluggable_critic::evaluate::scorer::SkillCritic;
use pluggable_critic::evaluate::state::StateStore;
use pluggable_critic::evaluate::{Critic, Finish};
use pluggable_critic::frontend::CheckRequest;
use pluggable_critic::skill;
use serde_json::json;
use std::path::Path;

/// A 200-line module of small functions.
fn module(fixed: bool) -> String {
    let mut out = String::new();
    for i in 0..40 {
        // Every fourth function carries the line the fix changes.
        let cond = if fixed && i % 4 == 0 { "<=" } else { "<" };
        out.push_str(&format!(
            "def f{i}(xs, limit={i}):\n    if len(xs) {cond} limit and xs[0] > {i}:\n        return xs[0] + {i} * 2\n    return None\n\n"
        ));
    }
    out
}

fn diff() -> String {
    let (base, fixed) = (module(false), module(true));
    let mut diff = String::from("diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n");
    for (i, (a, b)) in base.lines().zip(fixed.lines()).enumerate() {
        if a != b {
            diff.push_str(&format!("@@ -{n} +{n} @@\n-{a}\n+{b}\n", n = i + 1));
        }
    }
    diff
}

fn fix() -> FixFile {
    let (base, fixed) = (module(false), module(true));
    let files = critic_sdk::diff::parse(&diff()).unwrap();
    FixFile {
        path: "m.py".into(),
        base,
        fixed,
        hunks: files[0].hunks.clone(),
    }
}

const TEST: &str = "from m import f0\nassert f0([1, 2], limit=1) == 1\n";

const OPERATORS: [Operator; 4] = [
    Operator::SymptomSuppression,
    Operator::IncompleteFix,
    Operator::InputShortcut,
    Operator::BehaviorSubstitution,
];

fn bench(c: &mut Criterion) {
    let fix = vec![fix()];
    assert_eq!(fix[0].fixed.lines().count(), 200);
    let n = all(&fix, &[TEST]).len();
    eprintln!("{n} mutants from a 200-line file with a 10-hunk fix");
    c.bench_function("mutants_200_line_file", |b| b.iter(|| all(&fix, &[TEST])));
    let n = sample(&fix, &[TEST], &OPERATORS, 3).len();
    eprintln!("a round's pool: {n} mutants (3 per operator)");
    c.bench_function("mutants_round_pool_200_line_file", |b| {
        b.iter(|| sample(&fix, &[TEST], &OPERATORS, 3))
    });
}

/// The probe component as a one-signal skill generating the pool `rounds`
/// times: all mutants, or `sample` per operator.
fn probe_critic(dir: &Path, runtime: &Runtime, rounds: u32, sample: Option<usize>) -> SkillCritic {
    let wasm = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/skills/mutants-probe/mutants_probe.wasm");
    let config = json!({
        "path": "m.py", "base": module(false), "fixed": module(true),
        "diff": diff(), "tests": [TEST], "rounds": rounds, "sample": sample,
    });
    let name = format!("{rounds}-{sample:?}");
    let skill_dir = dir.join(format!("skill-{name}"));
    std::fs::create_dir_all(&skill_dir).unwrap();
    // A detector must lie inside its skill.
    std::fs::copy(&wasm, skill_dir.join("mutants_probe.wasm")).unwrap();
    std::fs::write(
        skill_dir.join("critic.yaml"),
        format!(
            "name: probe\nversion: 0.1.0\nsignals:\n  - {{name: p, type: soft, weight: 1, detector: mutants_probe.wasm, config: {config}}}\n"
        ),
    )
    .unwrap();
    SkillCritic::new(
        skill::load(&skill_dir).unwrap(),
        runtime,
        StateStore::new(dir.join(format!("state-{name}"))).without_fsync(),
        &CheckRequest::new("skill", "events"),
    )
    .unwrap()
}

fn bench_wasm(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let runtime = Runtime::new(Some(&tmp.path().join("cache"))).unwrap();
    let finish = Finish {
        events: Vec::new().into(),
        patch: Patch {
            base: "0".repeat(40),
            origin: PatchOrigin::Worktree,
            raw: String::new(),
            files: Vec::new(),
        },
        workspace: tmp.path().to_path_buf(),
        session: "bench".into(),
        transcript: None,
    };
    let count = |critic: &SkillCritic| {
        let verdict = critic.evaluate(&finish).unwrap();
        verdict.signals[0].metadata["mutants"].as_u64().unwrap()
    };
    let every = probe_critic(tmp.path(), &runtime, 1, None);
    let pool = probe_critic(tmp.path(), &runtime, 1, Some(3));
    let without = probe_critic(tmp.path(), &runtime, 0, None);
    eprintln!(
        "inside the component: {} mutants in all, {} in a round's pool",
        count(&every),
        count(&pool)
    );
    c.bench_function("mutants_in_wasm_call_only", |b| {
        b.iter(|| without.evaluate(&finish).unwrap())
    });
    c.bench_function("mutants_in_wasm_all", |b| {
        b.iter(|| every.evaluate(&finish).unwrap())
    });
    c.bench_function("mutants_in_wasm_round_pool", |b| {
        b.iter(|| pool.evaluate(&finish).unwrap())
    });
}

criterion_group!(benches, bench, bench_wasm);
criterion_main!(benches);

//! Deterministic mutant generation (the CoHarden operators in
//! `critic_sdk::mutants`) on a 200-line Python file whose fix touches ten
//! scattered lines: comparisons, arithmetic, booleans and integer literals,
//! as a real fix does. Run with `cargo bench --bench mutants`; the figure
//! goes in docs/PERFORMANCE.md (target: 20 ms per fix).

use criterion::{criterion_group, criterion_main, Criterion};
use critic_sdk::mutants::{all, FixFile};

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

fn fix() -> FixFile {
    let (base, fixed) = (module(false), module(true));
    let mut diff = String::from("diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n");
    for (i, (a, b)) in base.lines().zip(fixed.lines()).enumerate() {
        if a != b {
            diff.push_str(&format!("@@ -{n} +{n} @@\n-{a}\n+{b}\n", n = i + 1));
        }
    }
    let files = critic_sdk::diff::parse(&diff).unwrap();
    FixFile {
        path: "m.py".into(),
        base,
        fixed,
        hunks: files[0].hunks.clone(),
    }
}

fn bench(c: &mut Criterion) {
    let fix = vec![fix()];
    assert_eq!(fix[0].fixed.lines().count(), 200);
    let test = "from m import f0\nassert f0([1, 2], limit=1) == 1\n";
    let n = all(&fix, &[test]).len();
    eprintln!("{n} mutants from a 200-line file with a 10-hunk fix");
    c.bench_function("mutants_200_line_file", |b| b.iter(|| all(&fix, &[test])));
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! The scratch-copy pool behind the `run` capabilities, against the naive way.
//!
//! Run with `cargo bench --bench sandbox`; figures go in docs/PERFORMANCE.md.
//! A CoHarden round runs every mutant of the fix against two tests. Here: the
//! demo repository (padded with generated modules to the sizes reported) at
//! its buggy base, 12 mutants of the real fix, each run with two reproduction
//! scripts (24 runs of real Python). Three ways, each repeated, medians:
//!
//! - `pool`: [`ScratchPool::run_all`], one scratch copy per core.
//! - `ideal`: the sum of the commands' own durations divided by the jobs,
//!   i.e. no overhead at all.
//! - `naive`: one checkout, sequentially `git apply` the mutant, write the
//!   test, run it, `git stash -u` + `git stash drop` to reset (what the
//!   seed's prompts have the agent do).
//!
//! Per-run overhead is the pool's wall time per run minus the command's own
//! duration, measured with one job so runs do not overlap.

use critic_sdk::RunRequest;
use pluggable_critic::sandbox::scratch::ScratchPool;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

#[path = "../tests/common/copy_tree.rs"]
mod copy_tree;
use copy_tree::copy_tree;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=b", "-c", "user.email=b@localhost"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// The demo repo padded to `files` files, committed.
fn repo(files: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&root().join("examples/demo-repo"), dir.path());
    let have = 6;
    for i in 0..files.saturating_sub(have) {
        let p = dir
            .path()
            .join(format!("vendor/pkg{}/mod{}.py", i / 100, i));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(
            p,
            format!("VALUE_{i} = {i}\n\ndef f(x):\n    return x + {i}\n"),
        )
        .unwrap();
    }
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-qm", "base"]);
    dir
}

const BUGGY: &str = "        if merged and start < merged[-1][1]:";

/// 12 variants of the fix's condition, as patches against the base.
fn mutants(base: &str) -> Vec<String> {
    let conditions = [
        "start <= merged[-1][1]",
        "start < merged[-1][1] + 1",
        "start <= merged[-1][1] + 1",
        "start - 1 < merged[-1][1]",
        "start < merged[-1][1] or start == end",
        "start <= merged[-1][1] and end > start",
        "start <= max(merged[-1])",
        "start < merged[-1][1] + 0.5",
        "start <= merged[-1][1] - 0",
        "not start > merged[-1][1]",
        "start < merged[-1][1] + 2",
        "start <= merged[-1][1] * 1",
    ];
    conditions
        .iter()
        .map(|c| {
            let line = format!("        if merged and {c}:");
            let new = base.replacen(BUGGY, &line, 1);
            format!(
                "diff --git a/intervals/merge.py b/intervals/merge.py\n--- a/intervals/merge.py\n+++ b/intervals/merge.py\n{}",
                hunk(base, &new)
            )
        })
        .collect()
}

/// A one-hunk diff body, with three lines of context, for a single changed
/// line (the only kind used here).
fn hunk(old: &str, new: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let i = a.iter().zip(&b).position(|(x, y)| x != y).unwrap();
    let (from, to) = (i.saturating_sub(3), (i + 4).min(a.len()));
    let mut out = format!("@@ -{n},{c} +{n},{c} @@\n", n = from + 1, c = to - from);
    for (j, line) in a.iter().enumerate().take(to).skip(from) {
        if j == i {
            out.push_str(&format!("-{}\n+{}\n", a[i], b[i]));
        } else {
            out.push_str(&format!(" {line}\n"));
        }
    }
    out
}

const TESTS: [&str; 2] = [
    "import sys\nfrom intervals import merge\nsys.exit(1 if merge([(1, 3), (3, 5)]) != [(1, 5)] else 0)\n",
    "import sys\nfrom intervals import merge\nok = merge([(1, 3), (3, 5)]) == [(1, 5)] and merge([(1, 2), (3, 4)]) == [(1, 2), (3, 4)]\nsys.exit(0 if ok else 1)\n",
];

fn requests(base: &str) -> Vec<RunRequest> {
    let mut out = Vec::new();
    for m in mutants(base) {
        for t in TESTS {
            out.push(RunRequest {
                patch: Some(m.clone()),
                files: [("reproduction.py".to_string(), Some(t.to_string()))].into(),
                argv: vec!["python3".into(), "reproduction.py".into()],
                ..RunRequest::default()
            });
        }
    }
    out
}

fn naive(dir: &Path, requests: &[RunRequest]) -> Duration {
    let started = Instant::now();
    for r in requests {
        let patch = dir.join(".mutant.patch");
        std::fs::write(&patch, r.patch.as_deref().unwrap()).unwrap();
        git(dir, &["apply", ".mutant.patch"]);
        std::fs::remove_file(&patch).unwrap();
        for (p, c) in &r.files {
            std::fs::write(dir.join(p), c.as_deref().unwrap()).unwrap();
        }
        let _ = Command::new("python3")
            .arg("reproduction.py")
            .current_dir(dir)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .output()
            .unwrap();
        git(dir, &["stash", "push", "-q", "--include-untracked"]);
        git(dir, &["stash", "drop", "-q"]);
    }
    started.elapsed()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let jobs = std::thread::available_parallelism().map_or(1, usize::from);
    // Confined, as `critic check` runs them, unless asked (for the A/B).
    let confined = std::env::var_os("CRITIC_BENCH_UNCONFINED").is_none();
    println!("runs {}", if confined { "confined" } else { "unconfined" });
    let far = Instant::now() + Duration::from_secs(600);
    for files in [50, 5000] {
        let ws = repo(files);
        let base = std::fs::read_to_string(ws.path().join("intervals/merge.py")).unwrap();
        let reqs = requests(&base);
        let (mut pool_ms, mut ideal_ms, mut naive_ms, mut setup_ms, mut overhead) =
            (vec![], vec![], vec![], vec![], vec![]);
        for _ in 0..5 {
            let t = Instant::now();
            let pool = ScratchPool::new(ws.path(), "HEAD", jobs, confined).unwrap();
            setup_ms.push(ms(t.elapsed()));
            let results = pool.run_all(&reqs, far);
            pool_ms.push(ms(t.elapsed()));
            assert!(results.iter().all(|r| r.error.is_none()), "{results:?}");
            let busy: f64 = results.iter().map(|r| r.duration_ms).sum();
            ideal_ms.push(busy / jobs as f64);
            let one = ScratchPool::new(ws.path(), "HEAD", 1, confined).unwrap();
            one.run(&reqs[0], far);
            for r in &reqs[..6] {
                let t = Instant::now();
                let res = one.run(r, far);
                overhead.push(ms(t.elapsed()) - res.duration_ms);
            }
            naive_ms.push(ms(naive(ws.path(), &reqs)));
        }
        let (pool, ideal, naive) = (median(pool_ms), median(ideal_ms), median(naive_ms));
        println!(
            "{files} files, {} runs, {jobs} jobs: pool {pool:.0} ms (setup {:.0} ms), ideal {ideal:.0} ms, \
             ratio {:.2} (target <= 1.25 x ideal + 100 ms = {:.0} ms); naive sequential in place {naive:.0} ms \
             ({:.2}x slower than the pool); per-run overhead (reset + apply) median {:.1} ms",
            reqs.len(),
            median(setup_ms),
            pool / ideal,
            1.25 * ideal + 100.0,
            naive / pool,
            median(overhead),
        );
    }
}

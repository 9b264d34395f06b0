//! Benchmarks for `critic check` (the real binary) and in-process evaluation.
//!
//! Run with `cargo bench --bench check`. Figures go in docs/PERFORMANCE.md.
//! Each scenario builds its own temp repo from `examples/demo-repo` and events
//! from the recorded OpenHands run in `examples/demo-run`, so inputs are the
//! real formats, only scaled.

use criterion::{criterion_group, criterion_main, Criterion};
use pluggable_critic::detector::wasm::Runtime;
use pluggable_critic::evaluate::scorer::SkillCritic;
use pluggable_critic::evaluate::state::StateStore;
use pluggable_critic::evaluate::{Critic, Finish};
use pluggable_critic::frontend::CheckRequest;
use pluggable_critic::workspace::{TestClassifier, Workspace};
use pluggable_critic::{agents, skill};
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
    let ok = Command::new("git")
        .args(["-c", "user.name=b", "-c", "user.email=b@localhost"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
        .status
        .success();
    assert!(ok, "git {args:?}");
}

/// The demo repo with the recorded finish-3 patch applied (a fix and a new test).
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&root().join("examples/demo-repo"), dir.path());
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "base"]);
    let patch = root().join("examples/demo-run/finish-3.patch");
    git(dir.path(), &["apply", patch.to_str().unwrap()]);
    dir
}

/// A real recorded stream grown to `target` events or bytes: the middle
/// action/observation events are repeated (with fresh ids) before the final
/// test run and finish, so the stream keeps its shape.
fn events_file(dir: &Path, min_events: usize, min_bytes: usize) -> PathBuf {
    let text = std::fs::read_to_string(root().join("examples/demo-run/finish-3.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let (head, body, tail) = (
        &lines[..3],
        &lines[3..lines.len() - 4],
        &lines[lines.len() - 4..],
    );
    let mut out: Vec<String> = head.iter().map(|s| s.to_string()).collect();
    let mut round = 0;
    let total = |out: &Vec<String>| out.iter().map(|l| l.len() + 1).sum::<usize>();
    while out.len() + tail.len() < min_events || total(&out) < min_bytes {
        for l in body {
            out.push(l.replace("\"id\":\"", &format!("\"id\":\"r{round}-")));
        }
        round += 1;
    }
    out.extend(tail.iter().map(|s| s.to_string()));
    let path = dir.join(format!("events-{min_events}-{min_bytes}.jsonl"));
    std::fs::write(&path, out.join("\n") + "\n").unwrap();
    path
}

/// A skill with three WASM gates, copies of the shipped skills' components
/// (a detector must lie inside its skill).
fn three_gates(dir: &Path) -> PathBuf {
    let skill = dir.join("skill");
    std::fs::create_dir_all(&skill).unwrap();
    let gates = [
        ("empty", "empty-patch/empty_patch.wasm"),
        ("ran-tests", "ran-tests/ran_tests.wasm"),
        ("finished", "agent-finished/agent_finished.wasm"),
    ];
    let mut yaml = "name: bench\nversion: 0.1.0\ncapabilities: [read-file]\nsignals:\n".to_string();
    for (name, wasm) in gates {
        let file = Path::new(wasm).file_name().unwrap();
        std::fs::copy(root().join("skills").join(wasm), skill.join(file)).unwrap();
        yaml += &format!(
            "  - {{name: {name}, type: hard_gate, detector: {}}}\n",
            file.to_string_lossy()
        );
    }
    std::fs::write(skill.join("critic.yaml"), yaml).unwrap();
    skill
}

fn check_cmd(skill: &Path, ws: &Path, events: &Path, state: &Path, cache: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_critic"));
    cmd.args(["check", "--skill"])
        .arg(skill)
        .arg("--workspace")
        .arg(ws)
        .arg("--events")
        .arg(events)
        .arg("--state-dir")
        .arg(state)
        .arg("--cache-dir")
        .arg(cache)
        .stdout(std::process::Stdio::null());
    cmd
}

fn run_ok(cmd: &mut Command) {
    let status = cmd.status().unwrap();
    assert!(status.success(), "{cmd:?} exited {status}");
}

/// Peak resident set of the largest child so far, in MiB.
fn children_max_rss_mib() -> f64 {
    // SAFETY: getrusage only writes the struct we pass.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage.ru_maxrss as f64 / 1024.0
    }
}

fn bench_cli(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let ws = repo();
    let skill = three_gates(tmp.path());
    let cache = tmp.path().join("cache");
    let state = tmp.path().join("state");
    let small = events_file(tmp.path(), 50, 0);
    let large = events_file(tmp.path(), 0, 10 << 20);

    // Cold compile cache, once per detector count: report, not a criterion loop.
    for _ in 0..3 {
        let cold = tempfile::tempdir().unwrap();
        let t = Instant::now();
        run_ok(&mut check_cmd(
            &skill,
            ws.path(),
            &small,
            &state,
            cold.path(),
        ));
        eprintln!(
            "cold-cache check (3 detectors compiled): {:.0} ms",
            t.elapsed().as_secs_f64() * 1000.0
        );
    }
    run_ok(&mut check_cmd(&skill, ws.path(), &small, &state, &cache));

    let mut g = c.benchmark_group("cli");
    g.sample_size(40).measurement_time(Duration::from_secs(8));
    g.bench_function("git_status_and_diff_baseline", |b| {
        b.iter(|| {
            run_ok(
                Command::new("git")
                    .args(["status", "--porcelain"])
                    .current_dir(ws.path())
                    .stdout(std::process::Stdio::null()),
            );
            run_ok(
                Command::new("git")
                    .args(["diff", "HEAD"])
                    .current_dir(ws.path())
                    .stdout(std::process::Stdio::null()),
            );
        })
    });
    g.bench_function("check_3_gates_50_events_warm", |b| {
        b.iter(|| run_ok(&mut check_cmd(&skill, ws.path(), &small, &state, &cache)))
    });
    g.sample_size(15).measurement_time(Duration::from_secs(10));
    let rss_before = children_max_rss_mib();
    g.bench_function("check_3_gates_10mb_events_warm", |b| {
        b.iter(|| run_ok(&mut check_cmd(&skill, ws.path(), &large, &state, &cache)))
    });
    g.finish();
    let bytes = std::fs::metadata(&large).unwrap().len();
    eprintln!(
        "10 MB stream: {:.1} MiB file; peak RSS of any child so far: {:.1} MiB (before the 10 MB runs: {:.1} MiB)",
        bytes as f64 / (1 << 20) as f64,
        children_max_rss_mib(),
        rss_before
    );
}

fn bench_library(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let ws_dir = repo();
    let skill = skill::load(&three_gates(tmp.path())).unwrap();
    let cache = tmp.path().join("cache");
    let ws = Workspace::open(ws_dir.path()).unwrap();
    let classifier = TestClassifier::new(&["tests/**".to_string()]).unwrap();
    let finish = Finish {
        events: agents::load(&root().join("examples/demo-run/finish-3.jsonl"), None)
            .unwrap()
            .into(),
        patch: ws.worktree_patch(&ws.head, &classifier).unwrap(),
        workspace: ws.root.canonicalize().unwrap(),
        session: "bench".into(),
        transcript: None,
    };
    // The pooled runtime is the one for a long-lived host; the on-demand one
    // is what `critic check` uses, shown for comparison.
    for (name, runtime) in [
        ("library_evaluate_small", Runtime::pooled(Some(&cache), 16)),
        (
            "library_evaluate_small_on_demand",
            Runtime::new(Some(&cache)),
        ),
    ] {
        let critic = SkillCritic::new(
            skill.clone(),
            &runtime.unwrap(),
            StateStore::new(tmp.path().join(name)).without_fsync(),
            &CheckRequest::new("skill", "events"),
        )
        .unwrap();
        c.bench_function(name, |b| b.iter(|| critic.evaluate(&finish).unwrap()));
    }
}

criterion_group!(benches, bench_cli, bench_library);
criterion_main!(benches);

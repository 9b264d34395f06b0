//! What confinement costs one run: `true` run through a scratch pool with
//! one job, confined (Landlock + user, network, PID and IPC namespaces, see
//! `src/sandbox/confine/`) and unconfined (`--unconfined-runs`), in alternating
//! blocks so both see the same machine state.
//!
//! Run with `cargo bench --bench confine`; figures go in docs/PERFORMANCE.md
//! (target: at most 5 ms more per run confined). `cargo bench --bench sandbox`
//! gives the CoHarden matrix (24 Python runs) confined;
//! `CRITIC_BENCH_UNCONFINED=1 cargo bench --bench sandbox` unconfined.

use critic_sdk::RunRequest;
use pluggable_critic::sandbox::scratch::ScratchPool;
use std::process::Command;
use std::time::{Duration, Instant};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.py"), "x = 1\n").unwrap();
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@l",
            "commit",
            "-qm",
            "base",
        ],
    ] {
        assert!(Command::new("git")
            .args(args)
            .current_dir(ws.path())
            .status()
            .unwrap()
            .success());
    }
    let far = Instant::now() + Duration::from_secs(600);
    let request = RunRequest {
        argv: vec!["true".into()],
        ..RunRequest::default()
    };
    let pools =
        [false, true].map(|confined| ScratchPool::new(ws.path(), "HEAD", 1, confined).unwrap());
    let (mut plain, mut confined) = (Vec::new(), Vec::new());
    for block in 0..20 {
        for (i, pool) in pools.iter().enumerate() {
            for _ in 0..25 {
                let t = Instant::now();
                let r = pool.run(&request, far);
                let took = t.elapsed().as_secs_f64() * 1000.0;
                assert_eq!(r.exit_code, Some(0), "{r:?}");
                if block > 0 {
                    if i == 0 {
                        plain.push(took)
                    } else {
                        confined.push(took)
                    }
                }
            }
        }
    }
    let runs = confined.len();
    let (p, c) = (median(plain), median(confined));
    println!(
        "one run of `true`, wall (spawn, wait, reset), median of {} each: unconfined {p:.2} ms, \
         confined {c:.2} ms, confinement {:.2} ms per run (target <= 5 ms)",
        runs,
        c - p
    );
}

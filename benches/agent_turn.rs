//! What confinement costs one agent turn in `critic experiment`: `true`
//! started as a turn is (see `src/experiment/adapters/confined.rs`),
//! confined (namespaces, Landlock, the experiment's places covered, a
//! model proxy served in its own network namespace) and unconfined,
//! in alternating blocks so both see the same machine state; and the start
//! of a hooked session's judge (`critic serve` pinned to the session),
//! which is paid once per session, not per turn.
//!
//! Run with `cargo bench --bench agent_turn`; figures go in
//! docs/PERFORMANCE.md (target: under 50 ms per turn).

use pluggable_critic::experiment::adapters::confined::Reach;
use pluggable_critic::experiment::model_proxy::{ModelProxy, Settings, Spending};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let t = tempfile::tempdir().unwrap();
    let (out, ws) = (t.path().join("out"), t.path().join("out/work/ws"));
    let run_dir = out.join("runs/i/a/0");
    for d in [&ws, &run_dir.join("agent")] {
        std::fs::create_dir_all(d).unwrap();
    }
    let proxy = ModelProxy::new(Settings {
        upstream: None,
        replay: None,
        record: run_dir.join("model.jsonl"),
        price: None,
        max_tokens: None,
        max_cost: None,
        spending: std::sync::Arc::new(Spending {
            cap: None,
            spent: Default::default(),
        }),
        normalizer: Default::default(),
        verdict_log: None,
    })
    .unwrap();
    let reach = Reach::new(&run_dir, vec![out.clone()], vec![], Some(proxy), &[], None).unwrap();
    let turn = |confined: bool| {
        let started = Instant::now();
        let mut cmd = Command::new("true");
        cmd.current_dir(&ws).stdin(Stdio::null());
        let pending = confined.then(|| reach.confine(&mut cmd, &ws, &[]).unwrap());
        let mut child = cmd.spawn().unwrap();
        let forwarders = pending.map(|p| p.forward().unwrap());
        assert!(child.wait().unwrap().success());
        drop(forwarders);
        started.elapsed().as_secs_f64() * 1000.0
    };
    let (mut plain, mut confined) = (Vec::new(), Vec::new());
    for block in 0..11 {
        for _ in 0..20 {
            let (p, c) = (turn(false), turn(true));
            if block > 0 {
                plain.push(p);
                confined.push(c);
            }
        }
    }
    let (p, c) = (median(plain.clone()), median(confined));
    println!(
        "one turn of `true` (spawn, wait), median of {} each: unconfined {p:.2} ms, confined \
         {c:.2} ms, confinement {:.2} ms per turn (target < 50 ms)",
        plain.len(),
        c - p
    );

    // A hooked session's judge: from spawn to its socket.
    let critic = env!("CARGO_BIN_EXE_critic");
    let skill = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("skills/fix-only");
    let mut starts = Vec::new();
    for i in 0..10 {
        let socket = t.path().join(format!("s{i}"));
        let started = Instant::now();
        let mut serve = Command::new(critic)
            .arg("serve")
            .arg("--socket")
            .arg(&socket)
            .arg("--pin-skill")
            .arg(&skill)
            .arg("--pin-workspace")
            .arg(&ws)
            .arg("--pin-state-dir")
            .arg(run_dir.join("state"))
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        while !socket.exists() {
            std::thread::sleep(Duration::from_millis(1));
        }
        starts.push(started.elapsed().as_secs_f64() * 1000.0);
        serve.kill().unwrap();
        serve.wait().unwrap();
    }
    println!(
        "a session's judge (critic serve --pin-*), spawn to socket, median of {}: {:.2} ms",
        starts.len(),
        median(starts)
    );
}

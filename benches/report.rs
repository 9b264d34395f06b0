//! The report of a 1,000-run experiment: how long `critic experiment
//! report` takes to write `report.html` and the 1,000 run pages, and how
//! long the report takes to open in a real headless Chromium (a new tab,
//! the page requested, its `load` event).
//!
//! The runs are made up but sized as SWE-bench runs are: 250 instances,
//! two arms of one sample and one arm of two; up to three rounds each with
//! a verdict of three signals, an 8 KiB patch, a 100 KiB agent log; and a
//! golden grading log of 60 ids with 60 KiB of output.
//!
//! Run with `cargo bench --bench report`; figures go in
//! docs/PERFORMANCE.md (targets: written in under 2 s, opened in under 3 s).

#[allow(dead_code)]
#[path = "../tests/common/browser.rs"]
mod browser;

use pluggable_critic::experiment::db::{Db, F2p, Round, Run, RunKey, Status};
use pluggable_critic::experiment::{report, run_dir};
use serde_json::json;
use std::path::Path;
use std::time::Instant;

const INSTANCES: usize = 250;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A patch of about 8 KiB.
fn patch(i: usize) -> String {
    let mut p = format!(
        "diff --git a/pkg/mod{i}.py b/pkg/mod{i}.py\n--- a/pkg/mod{i}.py\n+++ b/pkg/mod{i}.py\n"
    );
    for h in 0..20 {
        p.push_str(&format!("@@ -{0},6 +{0},6 @@ def f{h}():\n", h * 40 + 1));
        p.push_str("     x = compute(a, b)\n     y = other(x)\n");
        p.push_str(&format!(
            "-    return x + y  # {h}\n+    return x - y  # {h}\n"
        ));
        p.push_str("     # context line one\n     # context line two\n");
    }
    p
}

fn write_run(out: &Path, key: &RunKey, rounds: u32, ids: &serde_json::Value) {
    let dir = run_dir(out, key);
    let log: String = (0..2_000)
        .map(|l| format!("step {l}: the agent ran a command and read its output\n"))
        .collect();
    for k in 1..=rounds {
        let round = dir.join(format!("round-{k}"));
        std::fs::create_dir_all(&round).unwrap();
        let signals: Vec<_> = ["brt-only", "fix-only", "diff-size"]
            .iter()
            .map(|name| {
                json!({"name": name, "type": "hard_gate", "weight": 0.0, "status": "failed",
                       "triggered": true, "duration_ms": 340.2,
                       "metadata": {"notes": vec!["a note of the detector's"; 30]}})
            })
            .collect();
        let verdict = json!({"accepted": k == rounds, "score": 0.5, "threshold": 1.0,
            "message": "rejected: 1 hard gate failed", "iteration": k, "max_iterations": 3,
            "skill": {"name": "brt-only", "version": "0.1.0"}, "signals": signals});
        std::fs::write(round.join("verdict.json"), verdict.to_string()).unwrap();
        std::fs::write(round.join("patch.diff"), patch(k as usize)).unwrap();
        std::fs::write(round.join("agent.log"), &log).unwrap();
        std::fs::write(round.join("prompt.md"), "Fix the issue.\n").unwrap();
    }
    std::fs::create_dir_all(dir.join("grade")).unwrap();
    let golden = json!({"argv": ["python", "-m", "pytest"],
        "result": {"exit_code": 1, "signal": null, "timed_out": false,
                   "stdout": "tests/test_mod.py::test_x PASSED\n".repeat(1_800),
                   "stderr": "", "duration_ms": 2000.0},
        "grade": {"resolved": false, "ids": ids, "problem": null, "infra": null,
                  "restored": [], "notes": []}});
    std::fs::write(dir.join("grade/golden.json"), golden.to_string()).unwrap();
    std::fs::write(dir.join("final.patch"), patch(0)).unwrap();
}

fn main() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let db = Db::open(&out.join("results.sqlite")).unwrap();
    let ids = json!((0..60)
        .map(|i| json!({"id": format!("tests/test_mod.py::test_{i}"),
            "list": if i == 0 { "FAIL_TO_PASS" } else { "PASS_TO_PASS" },
            "status": "PASSED", "rule": "exact", "success": true}))
        .collect::<Vec<_>>());
    let arms = [("fix-only", 1), ("brt-only", 1), ("tdd", 2)];
    let mut n = 0;
    for i in 0..INSTANCES {
        for (a, (arm, samples)) in arms.iter().enumerate() {
            for sample in 0..*samples {
                let key = RunKey {
                    instance_id: format!("org__repo-{i}"),
                    arm: arm.to_string(),
                    sample,
                };
                let rounds = 1 + ((i + a) % 3) as u32;
                write_run(&out, &key, rounds, &ids);
                let run = Run {
                    key: key.clone(),
                    status: if i % 50 == 7 {
                        Status::AgentFail
                    } else {
                        Status::Ok
                    },
                    error_class: (i % 50 == 7).then(|| "turn_budget".into()),
                    error: (i % 50 == 7).then(|| "the agent used its turns".into()),
                    resolved: Some((i + a) % 3 == 0),
                    grade_problem: None,
                    f2p: (*arm != "fix-only").then_some(F2p {
                        fails_on_base: i % 2 == 0,
                        passes_on_golden: true,
                    }),
                    finishes: rounds,
                    rounds,
                    budget_exhausted: false,
                    outcome_test: None,
                    tokens: Some(40_000),
                    cost: Some(0.12),
                    usage_source: Some("proxy".into()),
                    model_calls: Some(12),
                    duration_s: 300.0,
                    attempts: 1,
                    model_patch: patch(0),
                };
                let rounds: Vec<Round> = (1..=rounds)
                    .map(|k| Round {
                        round: k,
                        turn_exit: Some(0),
                        turn_s: 90.0,
                        verdict: if k == run.rounds {
                            "accepted"
                        } else {
                            "rejected"
                        }
                        .into(),
                        budget_exhausted: false,
                        followup: (k < run.rounds).then(|| "Write a test that fails.".into()),
                        critic_error: None,
                        resolved: None,
                    })
                    .collect();
                db.finish(&run, &rounds, None).unwrap();
                n += 1;
            }
        }
    }
    let manifest = json!({"name": "bench", "samples": 2,
        "instance_ids": (0..INSTANCES).map(|i| format!("org__repo-{i}")).collect::<Vec<_>>(),
        "arms": {"fix-only": {}, "brt-only": {}, "tdd": {}},
        "tool": {"version": "bench", "binary_sha256": "0".repeat(64)}});

    let writes: Vec<f64> = (0..7)
        .map(|_| {
            let started = Instant::now();
            let runs = db.runs().unwrap();
            report::write(&out, &manifest, &runs, &db, None).unwrap();
            started.elapsed().as_secs_f64()
        })
        .collect();
    let report_size = std::fs::metadata(out.join("report.html")).unwrap().len();
    println!(
        "report of {n} runs written (summary, report.html of {} KiB, {n} run pages): median of \
         {} {:.3} s (target < 2 s)",
        report_size / 1024,
        writes.len(),
        median(writes.clone())
    );

    let chromium = browser::Chromium::start(1400, 1000);
    let mut opens = Vec::new();
    let mut loads = Vec::new();
    for _ in 0..7 {
        let started = Instant::now();
        let page = chromium.open(&out.join("report.html"));
        opens.push(started.elapsed().as_secs_f64());
        assert_eq!(page.errors(), Vec::<String>::new());
        let load = page.eval("performance.getEntriesByType('navigation')[0].loadEventEnd");
        loads.push(load.as_f64().unwrap() / 1000.0);
    }
    println!(
        "report.html opened in Chromium 1400 px wide (new tab, request, load event): median of \
         {} {:.3} s; the page's own navigation timing to its load event {:.3} s (target < 3 s)",
        opens.len(),
        median(opens),
        median(loads)
    );
    let page = chromium.open(
        &run_dir(
            &out,
            &RunKey {
                instance_id: "org__repo-1".into(),
                arm: "tdd".into(),
                sample: 1,
            },
        )
        .join(report::run_page::FILE),
    );
    let load = page.eval("performance.getEntriesByType('navigation')[0].loadEventEnd");
    println!(
        "a run page of three rounds: load event at {:.3} s",
        load.as_f64().unwrap() / 1000.0
    );
}

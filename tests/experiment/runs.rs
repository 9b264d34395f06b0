//! An experiment's runs: made, checked and graded, retried after an
//! infrastructure error, resumed after a crash, rerun with what changed,
//! sharded (on Slurm too) and merged.

use super::*;

#[test]
fn two_arms_on_three_packages_are_run_checked_and_graded() {
    let lab = Lab::new();
    let file = lab.write(&plan(), "");
    let out = lab.run(&file, "out", &["--workers", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dir = lab.path("out");
    let r = results(&dir);
    assert_eq!(r.len(), 6, "{r:#?}");
    for (k, v) in &r {
        assert_eq!(v["status"], "ok", "{k:?}: {v}");
        assert_eq!(v["error"], Value::Null, "{k:?}");
        assert_eq!(v["attempts"], 1, "{k:?}");
    }
    let fix = |p| &r[&key(p, "fix-only")];
    let brt = |p| &r[&key(p, "brt-only")];
    // fix-only: the empty first finish is sent back, the fix resolves.
    assert_eq!(fix("textutil")["resolved"], true);
    assert_eq!(
        (
            fix("textutil")["rounds"].clone(),
            fix("textutil")["finishes"].clone()
        ),
        (json!(2), json!(2))
    );
    assert_eq!(fix("textutil")["f2p"], Value::Null, "it wrote no test");
    assert_eq!(
        fix("stats")["resolved"],
        false,
        "the wrong fix fails the golden test"
    );
    assert_eq!(fix("stats")["rounds"], 1);
    assert_eq!(fix("bounds")["resolved"], true);
    // brt-only: tests only, so nothing is resolved; F->P of its test.
    for p in ["textutil", "bounds"] {
        assert_eq!(brt(p)["resolved"], false, "{p}");
        assert_eq!(
            brt(p)["f2p"],
            json!({"fails_on_base": true, "passes_on_golden": true}),
            "{p}"
        );
        assert_eq!(brt(p)["rounds"], 1, "{p}");
    }
    assert_eq!(
        brt("stats")["f2p"],
        json!({"fails_on_base": false, "passes_on_golden": true})
    );
    assert_eq!(brt("stats")["rounds"], 2);
    assert_eq!(brt("stats")["budget_exhausted"], true);

    // The follow-up of a rejected finish is the next turn's prompt.
    let run = dir.join("runs/acme__textutil-1/fix-only/0");
    let verdict: Value =
        serde_json::from_slice(&std::fs::read(run.join("round-1/verdict.json")).unwrap()).unwrap();
    assert_eq!(verdict["accepted"], false);
    let prompt2 = std::fs::read_to_string(run.join("round-2/prompt.md")).unwrap();
    assert_eq!(prompt2, verdict["followup"].as_str().unwrap());
    let prompt1 = std::fs::read_to_string(run.join("round-1/prompt.md")).unwrap();
    assert!(
        prompt1.contains("<issue_description>\nslugify(\"Hello World\") gives"),
        "{prompt1}"
    );
    assert!(std::fs::read_to_string(run.join("round-2/agent.log"))
        .unwrap()
        .contains("fix-only round 2 on textutil"));
    let golden: Value =
        serde_json::from_slice(&std::fs::read(run.join("grade/golden.json")).unwrap()).unwrap();
    assert!(
        golden["result"]["stdout"]
            .as_str()
            .unwrap()
            .contains("PASSED tests/test_textutil.py::test_lowercases"),
        "raw logs kept"
    );

    // Predictions in SWE-bench's format, one per run.
    let preds = jsonl(&dir.join("predictions.jsonl"));
    assert_eq!(preds.len(), 6);
    let p = preds
        .iter()
        .find(|p| {
            p["instance_id"] == "acme__bounds-1" && p["model_name_or_path"] == "demo-exp/fix-only/0"
        })
        .unwrap();
    assert!(
        p["model_patch"]
            .as_str()
            .unwrap()
            .contains("+        return lo"),
        "{p}"
    );
    // The manifest records what ran.
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["instance_ids"],
        json!(["acme__textutil-1", "acme__stats-1", "acme__bounds-1"])
    );
    assert_eq!(
        manifest["arms"]["brt-only"]["skill_digest"]
            .as_str()
            .unwrap()
            .len(),
        64
    );
    assert!(manifest["tool"]["binary_sha256"].as_str().unwrap().len() == 64);
    // The database holds a row per round.
    let db = rusqlite::Connection::open(dir.join("results.sqlite")).unwrap();
    let rounds: i64 = db
        .query_row("SELECT COUNT(*) FROM rounds", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rounds, 8);
    // No workspace is left behind.
    assert_eq!(
        std::fs::read_dir(dir.join("work"))
            .map(|d| d.count())
            .unwrap_or(0),
        0
    );

    // A rerun makes nothing again and keeps every result.
    let again = lab.run(&file, "out", &[]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("0 of 6 runs to make"),
        "{}",
        stderr(&again)
    );
    assert_eq!(results(&dir), r);

    // Grading again from the saved patches, with no agent run: a grade a
    // bug got wrong, and a run whose grading failed, come back right.
    let log = run.join("round-2/agent.log");
    let touched = std::fs::metadata(&log).unwrap().modified().unwrap();
    let db = rusqlite::Connection::open(dir.join("results.sqlite")).unwrap();
    db.execute(
        "UPDATE runs SET resolved = 0 WHERE arm = 'fix-only' AND instance_id = 'acme__bounds-1'",
        [],
    )
    .unwrap();
    db.execute(
        "UPDATE runs SET status = 'infra_error', error_class = 'grade', resolved = NULL, \
         f2p_fails_on_base = NULL, f2p_passes_on_golden = NULL \
         WHERE arm = 'brt-only' AND instance_id = 'acme__stats-1'",
        [],
    )
    .unwrap();
    drop(db);
    let graded = common::run(critic().args(["experiment", "grade"]).arg(&dir));
    assert_eq!(graded.status.code(), Some(0), "{}", stderr(&graded));
    assert_eq!(results(&dir), r);
    assert_eq!(
        std::fs::metadata(&log).unwrap().modified().unwrap(),
        touched,
        "no agent ran"
    );
}

#[test]
fn infrastructure_errors_are_retried_logged_and_rerun_until_they_are_results() {
    let lab = Lab::new();
    let file = lab.write(&plan(), "filter: {ids: [acme__bounds-1]}\n");
    // The agent cannot start: every run is an infrastructure error, tried twice.
    let agent = lab.path("agent.py");
    std::fs::rename(&agent, lab.path("agent.moved")).unwrap();
    let out = lab.run(&file, "out", &["--retries", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("retrying"), "{err}");
    assert!(
        err.contains("2 runs ended in an infrastructure error; they are not results"),
        "{err}"
    );
    let dir = lab.path("out");
    for r in results(&dir).values() {
        assert_eq!(r["status"], "infra_error");
        assert_eq!(r["error"]["class"], "agent_start");
        assert_eq!(r["attempts"], 2);
        assert_eq!(r["resolved"], Value::Null, "not a result");
    }
    assert!(
        jsonl(&dir.join("predictions.jsonl")).is_empty(),
        "no prediction from an error"
    );
    // Fixed, a rerun makes exactly the errored runs, and logs every attempt.
    std::fs::rename(lab.path("agent.moved"), &agent).unwrap();
    let out = lab.run(&file, "out", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("2 of 2 runs to make"),
        "{}",
        stderr(&out)
    );
    let r = results(&dir);
    assert_eq!(r[&key("bounds", "fix-only")]["status"], "ok");
    assert_eq!(r[&key("bounds", "fix-only")]["attempts"], 3);
    assert_eq!(r[&key("bounds", "fix-only")]["resolved"], true);
    let db = rusqlite::Connection::open(dir.join("results.sqlite")).unwrap();
    let attempts: Vec<(i64, String)> = db
        .prepare("SELECT attempt, status FROM attempts WHERE arm = 'fix-only' ORDER BY attempt")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let expected: Vec<(i64, String)> = vec![
        (1, "infra_error".into()),
        (2, "infra_error".into()),
        (3, "ok".into()),
    ];
    assert_eq!(attempts, expected);
}

#[test]
fn a_rerun_reuses_what_is_unchanged_and_remakes_exactly_what_changed() {
    let lab = Lab::new();
    let model = usage_model(|_| "ok".into());
    let by = |name: &str| PACKAGES.iter().find(|p| p.name == name).unwrap();
    let (text, bounds) = (by("textutil"), by("bounds"));
    let write = |path: &str, content: &str| {
        let mut files = serde_json::Map::new();
        files.insert(path.into(), content.into());
        json!({"tokens": 1, "write": files})
    };
    // Every turn asks the model once: its calls count the agent's turns.
    let plan = json!({
        "textutil": {
            "fix-only": {"1": {"tokens": 1}, "2": write(text.module, &text.fixed())},
            "brt-only": {"1": write("tests/test_issue.py", text.good_brt)},
        },
        "bounds": {
            "fix-only": {"1": write(bounds.module, &bounds.fixed())},
            "brt-only": {"1": write("tests/test_issue.py", bounds.good_brt)},
        },
        "stats": {},
    });
    let settings = format!(
        "filter: {{ids: [acme__textutil-1, acme__bounds-1]}}\n\
model: {{base_url: \"{}\", model: m, api_key_env: USAGE_MODEL_KEY}}\n",
        model.url
    );
    let file = lab.write(&plan, &settings);
    let key_env = [("USAGE_MODEL_KEY", "k")];
    let calls = |arm: &str| {
        model
            .bodies
            .lock()
            .unwrap()
            .iter()
            .filter(|b| b["arm"] == arm)
            .count()
    };
    let again = |flags: &[&str]| {
        let out = run(critic()
            .args(["experiment", "run"])
            .arg(&file)
            .arg("--output-dir")
            .arg(lab.path("out"))
            .args(flags)
            .envs(key_env));
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stderr(&out)
    };
    again(&[]);
    assert_eq!((calls("fix-only"), calls("brt-only")), (3, 2));

    // The same command again: everything is reused.
    let err = again(&[]);
    assert!(
        err.contains("fix-only: 2 runs reused") && err.contains("brt-only: 2 runs reused"),
        "{err}"
    );
    assert_eq!((calls("fix-only"), calls("brt-only")), (3, 2));

    // A changed arm: a dry run says what would happen and does nothing.
    let yaml = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        yaml.replace("max_iterations: 1}", "max_iterations: 2}"),
    )
    .unwrap();
    let db_before = std::fs::read(lab.path("out/results.sqlite")).unwrap();
    let err = again(&["--dry-run"]);
    assert!(
        err.contains("brt-only: definition changed (max_iterations 1 -> 2): 2 runs re-made")
            && err.contains("fix-only: 2 runs reused")
            && err.contains("nothing was made or moved"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(lab.path("out/results.sqlite")).unwrap(),
        db_before
    );
    assert!(!lab.path("out/superseded").exists());
    assert_eq!((calls("fix-only"), calls("brt-only")), (3, 2));

    // Run: exactly the changed arm's runs are made again; the old ones
    // leave the results for superseded/, with why.
    again(&[]);
    assert_eq!((calls("fix-only"), calls("brt-only")), (3, 4));
    let old: Value = serde_json::from_slice(
        &std::fs::read(
            lab.path("out/superseded/1/runs/acme__textutil-1/brt-only/0/superseded.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(
        old["why"]
            .as_str()
            .unwrap()
            .contains("max_iterations 1 -> 2"),
        "{old}"
    );
    assert_eq!(old["stored"]["run"]["status"], "ok", "{old}");
    assert!(lab
        .path("out/superseded/1/runs/acme__textutil-1/brt-only/0/final.patch")
        .is_file());
    assert_eq!(results(&lab.path("out")).len(), 4);

    // More samples: only the new ones are made.
    std::fs::write(
        &file,
        std::fs::read_to_string(&file).unwrap() + "samples: 2\n",
    )
    .unwrap();
    let err = again(&[]);
    assert!(
        err.contains("fix-only: new: 2 runs made") && err.contains("fix-only: 2 runs reused"),
        "{err}"
    );
    assert_eq!((calls("fix-only"), calls("brt-only")), (6, 6));
    assert_eq!(jsonl(&lab.path("out/results.jsonl")).len(), 8);

    // A removed arm leaves the results, the predictions and the report.
    let yaml = std::fs::read_to_string(&file).unwrap();
    let arm_line = yaml
        .lines()
        .find(|l| l.trim_start().starts_with("brt-only:"))
        .unwrap()
        .to_string();
    std::fs::write(&file, yaml.replace(&format!("{arm_line}\n"), "")).unwrap();
    let err = again(&[]);
    assert!(
        err.contains("brt-only: no longer in the experiment: 4 runs moved to superseded/"),
        "{err}"
    );
    let r = jsonl(&lab.path("out/results.jsonl"));
    assert!(
        r.iter().all(|r| r["arm"] == "fix-only") && r.len() == 4,
        "{r:#?}"
    );
    let report = std::fs::read_to_string(lab.path("out/report.html")).unwrap();
    assert!(
        !report.contains("brt-only"),
        "the report still shows brt-only"
    );
    assert!(lab
        .path("out/superseded/2/runs/acme__bounds-1/brt-only/1/superseded.json")
        .is_file());
    assert!(lab.path("out/manifest.1.json").is_file());
}

#[test]
fn an_agent_past_its_turn_limit_or_its_turn_budget_is_an_agent_failure() {
    let lab = Lab::new();
    let text = PACKAGES.iter().find(|p| p.name == "textutil").unwrap();
    let plan = json!({
        // Sleeps past the 2 s turn limit, leaving its fix half done.
        "textutil": {"fix-only": {"1": {"write": {text.module: text.fixed()}, "sleep": 30}}},
        // Never writes anything: fix-only rejects every empty finish.
        "stats": {},
        "bounds": {},
    });
    let file = lab.write(
        &plan,
        "filter: {ids: [acme__textutil-1, acme__stats-1]}\nbudget: {turns: 2}\n",
    );
    let yaml = std::fs::read_to_string(&file)
        .unwrap()
        .replace("timeout: 60s", "timeout: 2s");
    std::fs::write(&file, yaml).unwrap();
    let started = std::time::Instant::now();
    let out = lab.run(&file, "out", &["--workers", "2"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "agent failures are results: {}",
        stderr(&out)
    );
    assert!(
        started.elapsed().as_secs() < 25,
        "the sleeping agent was killed"
    );
    let r = results(&lab.path("out"));
    let slow = &r[&key("textutil", "fix-only")];
    assert_eq!(slow["status"], "agent_fail");
    assert_eq!(slow["error"]["class"], "turn_timeout");
    assert_eq!(
        slow["resolved"], true,
        "what it left is graded all the same"
    );
    let idle = &r[&key("stats", "fix-only")];
    assert_eq!(idle["status"], "agent_fail");
    assert_eq!(idle["error"]["class"], "turn_budget");
    assert_eq!(idle["rounds"], 2);
    assert_eq!(idle["resolved"], false);
}

#[test]
fn a_run_interrupted_midway_starts_over_cleanly() {
    let lab = Lab::new();
    let text = PACKAGES.iter().find(|p| p.name == "textutil").unwrap();
    let mut plan = plan();
    // The first finish of this run takes long enough to be interrupted.
    plan["textutil"]["fix-only"]["1"] = json!({"sh": "touch \"$HOME/../started\"", "sleep": 8});
    plan["textutil"]["fix-only"]["2"] = json!({"write": {text.module: text.fixed()}});
    let file = lab.write(&plan, "filter: {ids: [acme__textutil-1]}\n");
    let mut child = critic()
        .args(["experiment", "run"])
        .arg(&file)
        .arg("--output-dir")
        .arg(lab.path("out"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The agent says it is under way, then sleeps.
    let started = lab.path("out/runs/acme__textutil-1/fix-only/0/agent/started");
    let t = std::time::Instant::now();
    while !started.exists() {
        assert!(t.elapsed().as_secs() < 60, "the agent never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert!(!status.success());
    let mut said = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut said).unwrap();
    assert!(
        said.contains("experiment: interrupted") && said.contains("run the same command again"),
        "Ctrl-C says what was kept and how to go on: {said}"
    );
    assert!(
        t.elapsed().as_secs() < 15,
        "the interrupt ended the sleeping agent too"
    );
    // The agent's process group is gone with it.
    let leftover = Command::new("pgrep")
        .args(["-f", "agent.py"])
        .output()
        .unwrap();
    let pids = String::from_utf8_lossy(&leftover.stdout).trim().to_string();
    assert!(
        pids.is_empty()
            || !pids
                .lines()
                .any(|p| std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                    .unwrap_or_default()
                    .contains(lab.dir.path().to_str().unwrap())),
        "{pids}"
    );
    let work = lab.path("out/work");
    assert_eq!(
        std::fs::read_dir(&work).map(|d| d.count()).unwrap_or(0),
        0,
        "the interrupted run's workspace is removed"
    );
    let out = lab.run(&file, "out", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = results(&lab.path("out"));
    assert_eq!(r[&key("textutil", "fix-only")]["status"], "ok");
    assert_eq!(
        r[&key("textutil", "fix-only")]["attempts"],
        1,
        "an interrupted run left no attempt"
    );
    assert_eq!(r[&key("textutil", "brt-only")]["status"], "ok");
}

#[test]
fn shards_merged_equal_one_run_and_a_disagreeing_overlap_is_refused() {
    let lab = Lab::new();
    let file = lab.write(&plan(), "");
    let whole = lab.run(&file, "whole", &["--workers", "2"]);
    assert_eq!(whole.status.code(), Some(0), "{}", stderr(&whole));
    for shard in ["0/2", "1/2"] {
        let out = format!("shard{}", &shard[..1]);
        let o = lab.run(&file, &out, &["--shard", shard]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let (a, b) = (results(&lab.path("shard0")), results(&lab.path("shard1")));
    assert_eq!(a.len() + b.len(), 6, "a partition");
    assert!(a.keys().all(|k| !b.contains_key(k)));
    let merge = |inputs: &[&str], out: &str| {
        run(critic()
            .args(["experiment", "merge"])
            .args(inputs.iter().map(|i| lab.path(i)))
            .arg("--output-dir")
            .arg(lab.path(out)))
    };
    let m = merge(&["shard0", "shard1"], "merged");
    assert_eq!(m.status.code(), Some(0), "{}", stderr(&m));
    assert_eq!(results(&lab.path("merged")), results(&lab.path("whole")));
    let preds = |d: &str| {
        let mut p = jsonl(&lab.path(d).join("predictions.jsonl"));
        p.sort_by_key(|v| v.to_string());
        p
    };
    assert_eq!(preds("merged"), preds("whole"));
    assert!(lab
        .path("merged/runs/acme__stats-1/brt-only/0/round-2/verdict.json")
        .is_file());
    // A manifest without its shard is the whole run's.
    let manifest = |d: &str| -> Value {
        serde_json::from_slice(&std::fs::read(lab.path(d).join("manifest.json")).unwrap()).unwrap()
    };
    assert_eq!(manifest("merged")["shard"], Value::Null);
    // Merging again changes nothing.
    let again = merge(&["shard0", "shard1"], "merged");
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    // A shard whose run disagrees with the merge is refused, and nothing of it taken.
    let db = rusqlite::Connection::open(lab.path("shard1/results.sqlite")).unwrap();
    db.execute("UPDATE runs SET resolved = 1 - resolved", [])
        .unwrap();
    drop(db);
    let before = results(&lab.path("merged"));
    let clash = merge(&["shard0", "shard1"], "merged");
    assert_eq!(clash.status.code(), Some(2));
    assert!(
        stderr(&clash).contains("with other results"),
        "{}",
        stderr(&clash)
    );
    assert_eq!(results(&lab.path("merged")), before);
    // Outputs of different experiments do not merge.
    let other = lab.write(&plan(), "seed: 3\n");
    let o = lab.run(&other, "other", &["--shard", "0/2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = merge(&["shard0", "other"], "merged2");
    assert_eq!(e.status.code(), Some(2));
    assert!(
        stderr(&e).contains("not shards of one experiment"),
        "{}",
        stderr(&e)
    );
}

#[test]
fn a_slurm_array_runs_the_shards_status_follows_them_and_they_merge() {
    let lab = Lab::new();
    let file = lab.write(&plan(), "");
    let slurm = Slurm::start();
    let out = lab.path("out");
    let submit = common::run(
        critic()
            .args(["experiment", "submit", "--slurm", "--array", "2"])
            .arg(&file)
            .arg("--output-dir")
            .arg(&out)
            .env("SLURM_CONF", slurm.dir.path().join("slurm.conf")),
    );
    assert_eq!(submit.status.code(), Some(0), "{}", stderr(&submit));
    assert!(
        stderr(&submit).contains("submitted array job"),
        "{}",
        stderr(&submit)
    );
    let script = std::fs::read_to_string(out.join("slurm/submit.sh")).unwrap();
    assert!(script.contains("#SBATCH --array=0-1"), "{script}");
    let status = || {
        let s = common::run(
            critic()
                .args(["experiment", "status"])
                .arg(&out)
                .env("SLURM_CONF", slurm.dir.path().join("slurm.conf")),
        );
        assert!(s.status.success(), "{}", stderr(&s));
        String::from_utf8(s.stdout).unwrap()
    };
    let t = std::time::Instant::now();
    let last = loop {
        let now = status();
        if now.contains("all: 6 of 6 finished, 0 infra_error")
            && now.contains("no task queued or running")
        {
            break now;
        }
        assert!(
            t.elapsed().as_secs() < 240,
            "{now}\n{}\n{}",
            slurm.logs(),
            ["shard-0.log", "shard-1.log"]
                .iter()
                .map(|f| std::fs::read_to_string(out.join("slurm").join(f)).unwrap_or_default())
                .collect::<String>()
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    assert!(last.contains("shard-0: "), "{last}");
    assert!(last.contains("shard-1: "), "{last}");
    let merged = common::run(
        critic()
            .args(["experiment", "merge"])
            .arg(out.join("shard-0"))
            .arg(out.join("shard-1"))
            .arg("--output-dir")
            .arg(lab.path("merged")),
    );
    assert_eq!(merged.status.code(), Some(0), "{}", stderr(&merged));
    let r = results(&lab.path("merged"));
    assert_eq!(r.len(), 6);
    assert_eq!(r[&key("textutil", "fix-only")]["resolved"], true);
    assert_eq!(r[&key("stats", "brt-only")]["budget_exhausted"], true);
}

/// A model name that copies another's escaped form (`org/model` is kept as
/// `org_model~<hash>`) gets a run directory of its own: neither
/// prediction's evidence overwrites the other's.
#[test]
fn model_names_that_look_alike_get_run_directories_of_their_own() {
    let lab = Lab::new();
    let records = jsonl(&lab.path("instances.jsonl"));
    let record = &records[0];
    let id = record["instance_id"].as_str().unwrap();
    let grade = |models: &[(&str, &str)]| {
        let lines: String = models
            .iter()
            .map(|(m, p)| {
                format!(
                    "{}\n",
                    json!({"instance_id": id, "model_name_or_path": m, "model_patch": p})
                )
            })
            .collect();
        std::fs::write(lab.path("predictions.jsonl"), lines).unwrap();
        let out = run(critic()
            .args(["experiment", "grade"])
            .arg(lab.path("out"))
            .arg("--instances")
            .arg(lab.path("instances.jsonl"))
            .arg("--predictions")
            .arg(lab.path("predictions.jsonl"))
            .arg("--repos")
            .arg(lab.path("repos"))
            .arg("--python")
            .arg(python()));
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    };
    let gold = record["patch"].as_str().unwrap();
    grade(&[("org/model", gold)]);
    let dirs = |at: &Path| -> Vec<String> {
        std::fs::read_dir(at)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    let runs = lab.path("out/runs").join(id);
    let taken = dirs(&runs);
    assert_eq!(taken.len(), 1, "{taken:?}");
    // A second model named as the first one's directory.
    grade(&[("org/model", gold), (taken[0].as_str(), "")]);
    let both = dirs(&runs);
    assert_eq!(both.len(), 2, "{both:?}");
    assert_eq!(
        std::fs::read_to_string(runs.join(&taken[0]).join("0/final.patch")).unwrap(),
        gold
    );
    let r: BTreeMap<String, Value> = jsonl(&lab.path("out/results.jsonl"))
        .into_iter()
        .map(|r| (r["arm"].as_str().unwrap().to_string(), r))
        .collect();
    assert_eq!(r["org/model"]["resolved"], true, "{r:#?}");
    assert_eq!(r[taken[0].as_str()]["resolved"], false, "{r:#?}");
}

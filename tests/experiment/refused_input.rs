//! What is refused before any agent runs, with its place: a bad experiment
//! file or record, an interpreter that cannot grade, a misspelt arm config, a
//! skill that fails on a benign finish, a broken instance.

use super::*;

#[test]
fn bad_experiment_files_and_records_are_refused_with_their_place() {
    let lab = Lab::new();
    let file = lab.write(&plan(), "samples: 0\n");
    let out = lab.run(&file, "out", &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("exp.yaml:12:10: samples:"), "{err}");
    assert!(
        !lab.path("out/results.sqlite").exists(),
        "nothing written before the file is good"
    );

    let file = lab.write(&plan(), "filter: {ids: [acme__nope-9]}\n");
    let err = stderr(&lab.run(&file, "out", &[]));
    assert!(err.contains("filter.ids: acme__nope-9 not in"), "{err}");

    // A model the runner's proxy cannot call: refused before any run.
    let file = lab.write(&plan(), "model: {base_url: \"ftp://10.1.2.3\", model: m}\n");
    let out = lab.run(&file, "out", &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("model.base_url") && err.contains("give an http:// or https:// URL"),
        "{err}"
    );
    let file = lab.write(&plan(), "");
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "  timeout: 60s\n",
        "  timeout: 60s\n  network: [pypi.org]\n",
    );
    std::fs::write(&file, text).unwrap();
    let err = stderr(&lab.run(&file, "out", &[]));
    assert!(
        err.contains("agent.network[0]") || err.contains("agent/network/0"),
        "{err}"
    );
    assert!(err.contains("give a port"), "{err}");
    assert!(!lab.path("out/runs").exists(), "nothing ran");

    // A record without its base commit, and one whose clone is missing.
    let mut records = jsonl(&lab.path("instances.jsonl"));
    records[1].as_object_mut().unwrap().remove("base_commit");
    write_jsonl(&lab.path("instances.jsonl"), &records);
    let file = lab.write(&plan(), "");
    let err = stderr(&lab.run(&file, "out", &[]));
    assert!(err.contains("instances.jsonl:2"), "{err}");
    assert!(err.contains("base_commit"), "{err}");
    let mut records = jsonl(&lab.path("instances.jsonl"));
    records[1]["base_commit"] = records[0]["base_commit"].clone();
    records[2]["repo"] = json!("acme/gone");
    write_jsonl(&lab.path("instances.jsonl"), &records);
    let err = stderr(&lab.run(&file, "out", &[]));
    assert!(
        err.contains(
            "instances.jsonl:3 (instance acme__bounds-1): field `repo`: no clone of acme/gone"
        ),
        "{err}"
    );
    assert!(
        err.contains("instances.jsonl:2 (instance acme__stats-1): field `base_commit`"),
        "{err}"
    );

    // A log format grading does not read, and a pytest format whose command
    // does not start pytest: errors before any run, naming the instance.
    let lab = Lab::new();
    let mut records = jsonl(&lab.path("instances.jsonl"));
    records[0]["log_parser"] = json!("parse_log_jest");
    records[1]["test_cmd"] = json!("tox -e py");
    write_jsonl(&lab.path("instances.jsonl"), &records);
    let file = lab.write(&plan(), "");
    let out = lab.run(&file, "out", &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(
            "(instance acme__textutil-1): field `log_parser`: `parse_log_jest` is not a log format"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "(instance acme__stats-1): field `test_cmd`: tox without `--current-env` builds environments of its own"
        ),
        "{err}"
    );
    assert!(!lab.path("out/runs").exists(), "nothing ran");
}

#[test]
fn an_interpreter_without_pytest_is_refused_before_any_agent_runs() {
    let lab = Lab::new();
    let bare = common::python_venv("no-pytest", None);
    let file = lab.write(&plan(), "");
    let text = std::fs::read_to_string(&file).unwrap().replace(
        &format!("python: {}", python().display()),
        &format!("python: {}", bare.display()),
    );
    std::fs::write(&file, text).unwrap();
    let out = lab.run(&file, "out", &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("cannot import pytest"), "{err}");
    assert!(
        err.contains("instances.jsonl:1 (instance acme__textutil-1)"),
        "{err}"
    );
    assert!(!lab.path("out/runs").exists());
}

/// The pre-flights run beside the agents: a run of an instance whose
/// golden patch resolved it ends before the slow pre-flight of another
/// instance finds it broken, whose runs are then not made.
#[test]
fn pre_flights_run_beside_the_agents_and_a_broken_instances_runs_are_not_made() {
    let lab = Lab::new();
    let stats = &PACKAGES[1];
    let clone = lab.path("repos/acme__stats");
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(&clone)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    // Its "golden" patch is slow to import and fixes nothing.
    std::fs::write(
        clone.join(stats.module),
        format!(
            "import time\ntime.sleep(4)\n{}",
            stats.source.replace(stats.bug, stats.wrong)
        ),
    )
    .unwrap();
    let slow = git(&["diff"]);
    git(&["checkout", "-q", "--", "."]);
    let mut records = jsonl(&lab.path("instances.jsonl"));
    records[1]["patch"] = json!(slow);
    write_jsonl(&lab.path("instances.jsonl"), &records);
    let file = lab.write(
        &plan(),
        "filter: {ids: [acme__textutil-1, acme__stats-1]}\n",
    );
    let out = lab.run(&file, "out", &["--workers", "2"]);
    let err = stderr(&out);
    assert!(
        err.contains("4 of 4 runs to make (0 already finished)") && err.contains("beside them"),
        "{err}"
    );
    let broken_at = err
        .find("acme__stats-1: broken instance (the golden patch does not resolve it")
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        err[broken_at..].contains("its 2 runs are not made"),
        "{err}"
    );
    let first_run = err
        .find("acme__textutil-1 / fix-only / 0: ok")
        .or_else(|| err.find("acme__textutil-1 / brt-only / 0: ok"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(first_run < broken_at, "{err}");
    let r = results(&lab.path("out"));
    assert_eq!(r.len(), 2, "{r:#?}");
    assert_eq!(r[&key("textutil", "fix-only")]["resolved"], true);
}

#[test]
fn a_misspelt_arm_config_is_refused_before_anything_runs() {
    let lab = Lab::new();
    let file = lab.write(&plan(), "");
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "fix-only: {skill:",
        "fix-only: {config: {test_timout_secs: 5}, skill:",
    );
    std::fs::write(&file, text).unwrap();
    let out = lab.run(&file, "out", &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    // The file, the arm, the signal and the key.
    assert!(
        err.contains("exp.yaml: arm `fix-only`: signal `fix-only`: config")
            && err.contains("test_timout_secs"),
        "{err}"
    );
    assert!(
        !lab.path("out").exists(),
        "nothing ran, nothing is left behind"
    );
}

#[test]
fn a_skill_whose_detector_fails_on_a_benign_finish_is_refused_before_any_agent_runs() {
    let lab = Lab::new();
    // A skill whose detector reports an error at every finish (as one whose
    // model endpoint is down would), its config read without complaint.
    let skill = lab.path("failing-skill");
    std::fs::create_dir_all(skill.join("templates")).unwrap();
    std::fs::copy(misbehave_wasm(), skill.join("misbehave.wasm")).unwrap();
    std::fs::write(
        skill.join("critic.yaml"),
        "name: failing\nversion: 0.1.0\ndescription: its detector fails\nmax_iterations: 3\n\
signals:\n  - name: flaky\n    type: hard_gate\n    detector: misbehave.wasm\n    \
config: {mode: error, text: the model endpoint refused the call}\n",
    )
    .unwrap();
    std::fs::write(skill.join("templates/task.md.j2"), "Fix: {{ issue }}\n").unwrap();
    let file = lab.write(&plan(), "filter: {ids: [acme__textutil-1]}\n");
    let text = std::fs::read_to_string(&file).unwrap().replace(
        &format!(
            "fix-only: {{skill: {}/fix-only}}",
            root().join("skills").display()
        ),
        &format!("fix-only: {{skill: {}}}", skill.display()),
    );
    std::fs::write(&file, text).unwrap();
    let out = lab.run(&file, "out", &["--retries", "0"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("fails on a benign finish")
            && err.contains("arm fix-only on acme__textutil-1")
            && err.contains("the model endpoint refused the call"),
        "{err}"
    );
    assert!(
        !err.contains("arm brt-only"),
        "the sound skill passed its pre-flight: {err}"
    );
    assert!(!lab.path("out/runs").exists(), "no agent ran");
}

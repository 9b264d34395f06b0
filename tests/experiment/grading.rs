//! How an experiment grades: each finish's patch and the critic's accuracy,
//! environments built once, a container per run, MPE classes, predictions
//! made elsewhere, the instance's interpreter and install step.

use super::*;

#[test]
fn each_finish_is_graded_and_the_critics_accuracy_equals_a_hand_count() {
    // fix-only rejects an empty finish, then accepts the fix; brt-only
    // (tests only) rejects a finish that fixes the code with its test, then
    // accepts the test alone once the fix is undone.
    let lab = Lab::new();
    let text = PACKAGES.iter().find(|p| p.name == "textutil").unwrap();
    let plan = json!({
        "textutil": {
            "fix-only": {"2": {"write": {text.module: text.fixed()}}},
            "brt-only": {
                "1": {"write": {text.module: text.fixed(), "tests/test_issue.py": text.good_brt}},
                "2": {"write": {text.module: text.source}},
            },
        },
        "stats": {}, "bounds": {},
    });
    let file = lab.write(&plan, "filter: {ids: [acme__textutil-1]}\n");
    let yaml = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        yaml.replace("max_iterations: 1}", "max_iterations: 2}"),
    )
    .unwrap();
    let out = lab.run(&file, "out", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let summary: Value =
        serde_json::from_slice(&std::fs::read(lab.path("out/summary.json")).unwrap()).unwrap();
    let critic = |arm: &str| {
        let a = summary["arms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["arm"] == arm)
            .unwrap();
        let c = &a["critic"];
        (
            c["accepted_resolved"].as_u64().unwrap(),
            c["accepted_unresolved"].as_u64().unwrap(),
            c["rejected_resolved"].as_u64().unwrap(),
            c["rejected_unresolved"].as_u64().unwrap(),
        )
    };
    assert_eq!(critic("fix-only"), (1, 0, 0, 1), "{summary:#}");
    assert_eq!(critic("brt-only"), (0, 1, 1, 0), "{summary:#}");
    let brt = summary["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["arm"] == "brt-only")
        .unwrap();
    assert_eq!(brt["critic"]["rejected_of_resolving"]["rate"], 1.0);
    assert_eq!(brt["critic"]["per_round"][0]["rejected_resolved"], 1);
    // The brt-only finish that resolved was graded beside its verdict.
    let graded = lab.path("out/runs/acme__textutil-1/brt-only/0/round-1/grade/golden.json");
    assert!(graded.is_file());
    // The last finish's patch is the final patch: graded once, not twice.
    assert!(!lab
        .path("out/runs/acme__textutil-1/fix-only/0/round-2/grade")
        .exists());
    let report = std::fs::read_to_string(lab.path("out/report.html")).unwrap();
    assert!(report.contains("id=\"critic-accuracy\""));
    // The count of correct fixes brt-only rejected links to that finish.
    let list = report
        .split("<p id=\"critic-1-rejected-resolved\"")
        .nth(1)
        .and_then(|s| s.split("</p>").next())
        .expect("a list behind the count");
    assert!(
        list.contains("(1): <a href=\"runs/acme__textutil-1/brt-only/0/run.html#round-1\">"),
        "{list}"
    );
    // With --final-only the finishes are not graded.
    let out = lab.run(&file, "final-only", &["--final-only"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let summary: Value =
        serde_json::from_slice(&std::fs::read(lab.path("final-only/summary.json")).unwrap())
            .unwrap();
    assert!(summary["arms"][0]["critic"].is_null(), "{summary:#}");
}

#[test]
fn an_instance_that_pins_its_requirements_gets_an_environment_built_once() {
    let lab = Lab::new();
    let lock = std::fs::read_to_string(root().join("tests/arms/requirements.lock")).unwrap();
    let mut records = jsonl(&lab.path("instances.jsonl"));
    for r in &mut records {
        r["requirements"] = json!(lock);
        r["version"] = json!(1.0);
    }
    write_jsonl(&lab.path("instances.jsonl"), &records);
    // The experiment's python is the system's, without pytest: only the
    // built environment can run the tests.
    let file = lab.write(&plan(), "filter: {ids: [acme__textutil-1]}\n");
    let text = std::fs::read_to_string(&file).unwrap();
    let text = text.replace(
        &format!("python: {}", python().display()),
        "python: python3",
    );
    std::fs::write(&file, text).unwrap();
    let out = lab.run(&file, "out", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = results(&lab.path("out"));
    assert_eq!(r[&key("textutil", "fix-only")]["resolved"], true, "{r:#?}");
    assert_eq!(
        r[&key("textutil", "brt-only")]["f2p"]["fails_on_base"],
        true,
        "{r:#?}"
    );
    // Built in critic's cache, where every output finds it.
    let envs: Vec<PathBuf> = std::fs::read_dir(cache_dir().join("envs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("acme__textutil-1.0-") && p.is_dir()
        })
        .collect();
    assert_eq!(envs.len(), 1, "{envs:?}");
    let done = envs[0].join(".complete");
    let built = std::fs::metadata(&done).unwrap().modified().unwrap();
    // A second experiment into the same output reuses it, and so does one
    // into another output.
    let out = lab.run(&file, "out", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let elsewhere = lab.run(&file, "elsewhere", &[]);
    assert_eq!(elsewhere.status.code(), Some(0), "{}", stderr(&elsewhere));
    assert!(!stderr(&elsewhere).contains("building the environment"));
    assert_eq!(std::fs::metadata(&done).unwrap().modified().unwrap(), built);
    let r = results(&lab.path("elsewhere"));
    assert_eq!(r[&key("textutil", "fix-only")]["resolved"], true, "{r:#?}");

    // Requirements pip cannot meet are the record's error, before any run.
    records[0]["requirements"] = json!(["no-such-package-critic-test==0.0.1"]);
    write_jsonl(&lab.path("instances.jsonl"), &records);
    let out = lab.run(&file, "other", &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("instances.jsonl:1 (instance acme__textutil-1): field `requirements`: pip install failed"), "{err}");
    assert!(!lab.path("other/results.sqlite").exists());
}

#[test]
fn env_container_grades_each_run_in_the_instances_image() {
    let lab = Lab::new();
    let engine = lab.path("fake-podman");
    std::fs::write(&engine, FAKE_ENGINE).unwrap();
    std::fs::set_permissions(&engine, std::fs::Permissions::from_mode(0o755)).unwrap();
    // The "images": each instance's clone checked out at its base.
    let images = lab.path("images");
    for p in &PACKAGES {
        let image = images.join(format!("local/acme__{}-1", p.name));
        std::fs::create_dir_all(image.parent().unwrap()).unwrap();
        let out = Command::new("git")
            .args(["clone", "-q"])
            .arg(lab.path(&format!("repos/acme__{}", p.name)))
            .arg(&image)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    // The image's python is the tests' (SWE-bench images activate conda).
    let venv_bin = python().parent().unwrap().to_path_buf();
    let extra = format!(
        "container: {{engine: {}, image: \"local/{{instance_id}}\"}}\n",
        engine.display()
    );
    let file = lab.write(&plan(), &extra);
    let path = std::env::join_paths(
        std::iter::once(venv_bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let log = lab.path("engine.log");
    let out = common::run(
        critic()
            .args(["experiment", "run"])
            .arg(&file)
            .arg("--output-dir")
            .arg(lab.path("out"))
            .args(["--env", "container"])
            .env("PATH", path)
            .env("IMAGES", &images)
            .env("ENGINE_LOG", &log),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let local = lab.run(&file, "local", &[]);
    assert_eq!(local.status.code(), Some(0), "{}", stderr(&local));
    // The same grades as the confined scratch copies give.
    let strip = |mut r: BTreeMap<(String, String), Value>| {
        for v in r.values_mut() {
            v.as_object_mut().unwrap().remove("tokens");
        }
        r
    };
    assert_eq!(
        strip(results(&lab.path("out"))),
        strip(results(&lab.path("local")))
    );
    let calls = std::fs::read_to_string(&log).unwrap();
    // Each instance's pre-flight (its golden patch); each run: the golden
    // tests, and for brt-only its test on base and fix; and the one judged
    // patch that is not a final one (fix-only's empty first finish on
    // textutil), graded on the golden tests.
    assert_eq!(calls.lines().count(), 3 + 3 + 3 * 3 + 1, "{calls}");
    assert!(calls.contains("'local/acme__stats-1'"), "{calls}");
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(lab.path("out/manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["environment"]["kind"], "container");
    assert_eq!(manifest["environment"]["image"], "local/{instance_id}");
}

#[test]
fn evaluate_mpe_classes_each_runs_own_test() {
    let lab = Lab::new();
    let file = lab.write(&plan(), "evaluate: {mpe: {samples_per_operator: 2}}\n");
    let out = lab.run(&file, "out", &["--workers", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("could not class"),
        "{}",
        stderr(&out)
    );
    // Only brt-only wrote tests: its three runs are MPE's three pairs.
    let pairs = jsonl(&lab.path("out/mpe/results.jsonl"));
    assert_eq!(pairs.len(), 3, "{pairs:#?}");
    let class = |id: &str| {
        pairs
            .iter()
            .find(|p| p["instance_id"] == id)
            .map(|p| p["class"].as_str().unwrap().to_string())
            .unwrap()
    };
    assert!(pairs.iter().all(|p| p["model_name_or_path"]
        .as_str()
        .unwrap()
        .starts_with("demo-exp/brt-only/")));
    // The stats test passes on the bug: not fail-to-pass, so misaligned.
    assert_eq!(class("acme__stats-1"), "misaligned");
    assert_ne!(class("acme__textutil-1"), "misaligned");
    let md = common::run(
        critic()
            .args(["experiment", "report", "--format", "markdown"])
            .arg(lab.path("out")),
    );
    let md = String::from_utf8(md.stdout).unwrap();
    assert!(md.contains("MPE classes of the runs' own tests"), "{md}");
    assert!(md.contains("| brt-only |"), "{md}");
}

/// Predictions of records that name no interpreter are graded by the
/// `python3` on PATH; one that cannot import pytest is refused with the
/// ways to name another.
#[test]
fn predictions_are_graded_without_python_by_the_python3_on_path() {
    let lab = Lab::new();
    let records = jsonl(&lab.path("instances.jsonl"));
    let gold = json!({"instance_id": records[0]["instance_id"], "model_name_or_path": "m",
                      "model_patch": records[0]["patch"]});
    std::fs::write(lab.path("predictions.jsonl"), format!("{gold}\n")).unwrap();
    let path = std::env::var("PATH").unwrap();
    let grade = |out: &str, first: &Path| {
        run(critic()
            .args(["experiment", "grade"])
            .arg(lab.path(out))
            .arg("--instances")
            .arg(lab.path("instances.jsonl"))
            .arg("--predictions")
            .arg(lab.path("predictions.jsonl"))
            .arg("--repos")
            .arg(lab.path("repos"))
            .env("PATH", format!("{}:{path}", first.display())))
    };
    let out = grade("out", python().parent().unwrap());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = jsonl(&lab.path("out/results.jsonl"));
    assert_eq!(r[0]["resolved"], true, "{r:#?}");

    let bin = lab.path("no-pytest");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("python3"), "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::set_permissions(bin.join("python3"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = grade("other", &bin);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("cannot import pytest")
            && err.contains("`python` field")
            && err.contains("--python"),
        "{err}"
    );
}

/// The interpreter the experiment names, in a virtual environment under
/// `/tmp` and named through a link there: every confined run (the agent's
/// turns, the critic's checks, grading) sees it, so the run grades as it
/// would anywhere else. Before, each grading run failed to find it and the
/// instance was reported broken.
#[test]
fn an_interpreter_under_tmp_named_through_a_link_is_the_runs_interpreter() {
    let lab = Lab::new();
    let tmp = tempfile::tempdir().unwrap();
    assert!(tmp.path().starts_with("/tmp"), "{}", tmp.path().display());
    common::venv(
        &tmp.path().join("venv"),
        None,
        Some(&root().join("tests/arms/requirements.lock")),
    );
    std::os::unix::fs::symlink(tmp.path().join("venv"), tmp.path().join("link")).unwrap();
    let named = tmp.path().join("link/bin/python3");
    let file = lab.write(&plan(), "filter: {ids: [acme__textutil-1]}\n");
    let text = std::fs::read_to_string(&file).unwrap().replace(
        &format!("python: {}", python().display()),
        &format!("python: {}", named.display()),
    );
    std::fs::write(&file, text).unwrap();
    let out = lab.run(&file, "out", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("broken"), "{}", stderr(&out));
    let r = results(&lab.path("out"));
    let fix = &r[&key("textutil", "fix-only")];
    assert_eq!(
        (&fix["status"], &fix["resolved"]),
        (&json!("ok"), &json!(true)),
        "{fix:#}"
    );
    let brt = &r[&key("textutil", "brt-only")];
    assert_eq!(brt["status"], "ok", "{brt:#}");
    assert_eq!(
        brt["f2p"],
        json!({"fails_on_base": true, "passes_on_golden": true}),
        "the critic's and the grader's runs of the agent's test both ran: {brt:#}"
    );
    // The grading ran that interpreter, by its real directory.
    let golden: Value = serde_json::from_slice(
        &std::fs::read(lab.path("out/runs/acme__textutil-1/fix-only/0/grade/golden.json")).unwrap(),
    )
    .unwrap();
    let real = std::fs::canonicalize(tmp.path().join("venv/bin"))
        .unwrap()
        .join("python3");
    assert!(
        golden["argv"].as_array().unwrap().contains(&json!(real)),
        "{}",
        golden["argv"]
    );
}

#[test]
fn an_install_step_makes_a_package_that_needs_building_gradable() {
    let lab = Lab::new();
    // A package whose version module its build generates (git ignores it):
    // a clone cannot import it until installed.
    let repo = lab.path("repos/acme__versioned");
    std::fs::create_dir_all(repo.join("versioned")).unwrap();
    std::fs::create_dir_all(repo.join("tests")).unwrap();
    let buggy = "from ._version import VERSION\n\n\ndef double(x):\n    return x + x + 1\n";
    std::fs::write(repo.join("versioned/__init__.py"), buggy).unwrap();
    std::fs::write(repo.join(".gitignore"), "versioned/_version.py\n").unwrap();
    std::fs::write(repo.join("tests/__init__.py"), "").unwrap();
    let tests =
        "from versioned import VERSION\n\n\ndef test_version():\n    assert VERSION == \"1.0\"\n";
    std::fs::write(repo.join("tests/test_versioned.py"), tests).unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@localhost"])
            .args(args)
            .current_dir(&repo)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "base"]);
    let base = git(&["rev-parse", "HEAD"]).trim().to_string();
    let fixed = buggy.replace("x + x + 1", "x + x");
    std::fs::write(repo.join("versioned/__init__.py"), &fixed).unwrap();
    let patch = git(&["diff"]);
    git(&["checkout", "-q", "--", "."]);
    let golden = format!("{tests}\n\ndef test_double():\n    from versioned import double\n    assert double(2) == 4\n");
    std::fs::write(repo.join("tests/test_versioned.py"), &golden).unwrap();
    let test_patch = git(&["diff"]);
    git(&["checkout", "-q", "--", "."]);
    let id = |t: &str| format!("tests/test_versioned.py::{t}");
    write_jsonl(
        &lab.path("instances.jsonl"),
        &[json!({
            "instance_id": "acme__versioned-1", "repo": "acme/versioned", "base_commit": base,
            "patch": patch, "test_patch": test_patch,
            "FAIL_TO_PASS": [id("test_double")], "PASS_TO_PASS": [id("test_version")],
            "problem_statement": "double(2) is 5.",
        })],
    );
    let plan = json!({"versioned": {"fix-only": {"1": {
        "write": {"versioned/__init__.py": fixed},
        // What the install made is there for the agent too, and so is the
        // environment the runner built under the output directory, which
        // the agent's confinement covers.
        "sh": "cp versioned/_version.py seen.txt; python3 -c 'import sys, pytest; print(sys.prefix)' > prefix.txt",
    }}}});
    let lock: Vec<String> = std::fs::read_to_string(root().join("tests/arms/requirements.lock"))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    let environments = format!(
        "environments:\n  acme/versioned:\n    \"*\":\n      requirements: {}\n      install: [\"printf 'VERSION = \\\"1.0\\\"\\\\n' > versioned/_version.py\"]\n",
        json!(lock)
    );
    let file = lab.write_fix_only(&plan, &environments);
    let out = lab.run(&file, "out", &["--control", "gold"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = results(&lab.path("out"));
    let run = &r[&("acme__versioned-1".to_string(), "fix-only".to_string())];
    assert_eq!(
        (run["status"].as_str(), run["resolved"].as_bool()),
        (Some("ok"), Some(true)),
        "{run}"
    );
    assert_eq!(
        r[&("acme__versioned-1".to_string(), "@gold".to_string())]["resolved"],
        true
    );
    let patch =
        std::fs::read_to_string(lab.path("out/runs/acme__versioned-1/fix-only/0/final.patch"))
            .unwrap();
    assert!(
        patch.contains("+VERSION = \"1.0\""),
        "the agent saw the install's file: {patch}"
    );
    assert!(
        !patch.contains("_version.py"),
        "it is not part of the patch: {patch}"
    );
    let prefix = patch
        .lines()
        .find(|l| l.starts_with('+') && l.contains("/envs/"))
        .unwrap_or_else(|| panic!("the agent ran the environment's python: {patch}"));
    let envs = cache_dir().join("envs");
    assert!(
        prefix.contains(&format!("{}/acme__versioned-", envs.display())),
        "{prefix}"
    );
    // The install ran once, in a checkout of the base that stays.
    let installs: Vec<PathBuf> = std::fs::read_dir(&envs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("acme__versioned-")
        })
        .filter(|p| p.is_dir())
        .flat_map(|e| std::fs::read_dir(e.join("installs")).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && p.to_string_lossy().ends_with(&base[..12]))
        .collect();
    assert_eq!(installs.len(), 1, "{installs:?}");
    assert!(installs[0].join("testbed/versioned/_version.py").is_file());
    // Another output takes the install's commit into its own copy of the
    // repository without installing again.
    let installed = std::fs::metadata(installs[0].join(".complete"))
        .unwrap()
        .modified()
        .unwrap();
    let out = lab.run(&file, "second", &["--control", "gold"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = results(&lab.path("second"));
    assert_eq!(
        r[&("acme__versioned-1".to_string(), "@gold".to_string())]["resolved"],
        true
    );
    assert_eq!(
        std::fs::metadata(installs[0].join(".complete"))
            .unwrap()
            .modified()
            .unwrap(),
        installed
    );
}

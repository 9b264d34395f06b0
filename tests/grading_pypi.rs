//! Grading a real fix between two PyPI releases, as SWE-bench builds and
//! grades its instances. humanize 4.15.0 fixed numbers and deltas that
//! 4.14.0 worded wrong and added tests for them; its package has a src
//! layout, a `_version.py` hatch-vcs generates at install, and pytest
//! settings that colour the output. A clone of 4.14.0 (generated files
//! left out, as git has it) is the repository; the fix's sources are the
//! golden patch, the new tests the test patch; FAIL_TO_PASS and
//! PASS_TO_PASS come from real pytest runs read by SWE-bench's own parser,
//! so ids with spaces are cut as SWE-bench's datasets carry them.
//!
//! Predictions made elsewhere are graded with `critic experiment grade
//! --predictions`: the golden patch resolves; no change, a wrong fix and a
//! fix that does not parse do not; a fix that also edits or deletes golden
//! test files, or adds a binary file, still resolves (as in SWE-bench); and
//! each forgery (a conftest that marks every test xfail, a conftest hook
//! that rewrites reports, pytest settings that load a plugin, an atexit
//! handler that prints a passing summary and exits 0) resolves nothing.
//! SWE-bench's `get_eval_report` on the same logs agrees on every honest
//! prediction. An instance without its install step is a broken instance.

mod common;

use common::swebench;
use common::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const REPO: &str = "python-humanize/humanize";
const ID: &str = "python-humanize__humanize-4.15";
/// The test modules the fix's tests are in.
const TESTS: [&str; 2] = ["tests/test_number.py", "tests/test_time.py"];
const INSTALL: &str =
    "SETUPTOOLS_SCM_PRETEND_VERSION=4.14.0 python -m pip install -q --no-deps --no-build-isolation -e .";

/// Files of `dir` (relative), generated ones left out: the sdist's
/// metadata, the version file hatch-vcs writes, compiled translations.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for e in std::fs::read_dir(dir.join(&rel)).unwrap().flatten() {
            let r = rel.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                stack.push(r);
            } else {
                let name = r.to_string_lossy();
                if name != "PKG-INFO" && !name.ends_with("_version.py") && !name.ends_with(".mo") {
                    out.push(r);
                }
            }
        }
    }
    out.sort();
    out
}

fn copy(from: &Path, to: &Path, files: &[PathBuf]) {
    for f in files {
        std::fs::create_dir_all(to.join(f).parent().unwrap()).unwrap();
        std::fs::copy(from.join(f), to.join(f)).unwrap();
    }
}

/// The environment's interpreter, built from the same lock the record
/// names (for the lists and the stand-alone runs).
fn env_python() -> PathBuf {
    python_venv("humanize", Some(&swebench::fixture("humanize-env.lock")))
}

/// Test ids and statuses of `tests` in `repo` with `files` written over
/// it, read from pytest's log by SWE-bench's own parser.
fn statuses(repo: &Path, files: &BTreeMap<PathBuf, Vec<u8>>) -> BTreeMap<String, String> {
    let copy_dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    copy_tree(repo, copy_dir.path());
    for (f, bytes) in files {
        std::fs::write(copy_dir.path().join(f), bytes).unwrap();
    }
    std::fs::write(
        copy_dir.path().join("src/humanize/_version.py"),
        "__version__ = version = '4.14.0'\n",
    )
    .unwrap();
    let out = Command::new(env_python())
        .args([
            "-m",
            "pytest",
            "-rA",
            "-p",
            "no:cacheprovider",
            "--color=no",
        ])
        .args(TESTS)
        .current_dir(copy_dir.path())
        .env("PYTHONPATH", copy_dir.path().join("src"))
        .env("TZ", "UTC")
        .output()
        .unwrap();
    let log = copy_dir.path().join("eval.log");
    swebench::eval_log(
        &log,
        &String::from_utf8_lossy(&out.stdout),
        &String::from_utf8_lossy(&out.stderr),
        out.status.code().unwrap(),
    );
    let graded = swebench::grades(&[json!({
        "log": log, "parser": "parse_log_pytest", "repo": REPO, "f2p": [], "p2p": [],
    })]);
    graded[0]["status_map"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_str().unwrap().into(), p[1].as_str().unwrap().into()))
        .collect()
}

/// The lab: the clone under `repos/`, the instance in `instances.jsonl`
/// (with a second, broken copy of it: no install step), and the fix's
/// sources for predictions.
struct Lab {
    dir: tempfile::TempDir,
    instance: Value,
}

impl Lab {
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn new() -> Lab {
        let old = swebench::sdist("humanize-4.14.lock", "humanize-4.14.0");
        let new = swebench::sdist("humanize-4.15.lock", "humanize-4.15.0");
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let repo = dir.path().join("repos/python-humanize__humanize");
        std::fs::create_dir_all(&repo).unwrap();
        copy(&old, &repo, &sources(&old));
        git_in(&repo, &["init", "-q", "-b", "main"]);
        git_in(&repo, &["add", "-A"]);
        git_in(&repo, &["commit", "-q", "-m", "humanize 4.14.0"]);
        let base = git_in(&repo, &["rev-parse", "HEAD"]).trim().to_string();
        // The fix: 4.15.0's sources; its tests: the two modules' new tests.
        let fix: Vec<PathBuf> = sources(&new)
            .into_iter()
            .filter(|f| f.starts_with("src"))
            .collect();
        copy(&new, &repo, &fix);
        git_in(&repo, &["add", "-A"]);
        let patch = git_in(&repo, &["diff", "--cached"]);
        let fixed: BTreeMap<PathBuf, Vec<u8>> = fix
            .iter()
            .map(|f| (f.clone(), std::fs::read(new.join(f)).unwrap()))
            .collect();
        git_in(&repo, &["reset", "-q", "--hard", &base]);
        let tests: Vec<PathBuf> = TESTS.iter().map(PathBuf::from).collect();
        copy(&new, &repo, &tests);
        let test_patch = git_in(&repo, &["diff"]);
        let golden_tests: BTreeMap<PathBuf, Vec<u8>> = tests
            .iter()
            .map(|f| (f.clone(), std::fs::read(new.join(f)).unwrap()))
            .collect();
        git_in(&repo, &["checkout", "-q", "--", "."]);
        assert!(!patch.is_empty() && !test_patch.is_empty());
        // The lists, as SWE-bench makes them: from the tests on the base and
        // on the fix.
        let before = statuses(&repo, &golden_tests);
        let mut both = fixed.clone();
        both.extend(golden_tests.clone());
        let after = statuses(&repo, &both);
        let passed =
            |m: &BTreeMap<String, String>, id: &str| m.get(id).is_some_and(|s| s == "PASSED");
        let f2p: Vec<&String> = after
            .keys()
            .filter(|id| passed(&after, id) && !passed(&before, id))
            .collect();
        let p2p: Vec<&String> = after
            .keys()
            .filter(|id| passed(&after, id) && passed(&before, id))
            .collect();
        assert!(
            f2p.len() >= 20 && p2p.len() >= 300,
            "{} {}",
            f2p.len(),
            p2p.len()
        );
        // The ids SWE-bench's parser cut at a space are in the lists so.
        assert!(
            f2p.iter().any(|id| id.ends_with("[test_input6-2")),
            "{f2p:?}"
        );
        let requirements = std::fs::read_to_string(swebench::fixture("humanize-env.lock")).unwrap();
        let instance = json!({
            "instance_id": ID,
            "repo": REPO,
            "base_commit": base,
            "version": "4.14",
            "patch": patch,
            "test_patch": test_patch,
            "FAIL_TO_PASS": json!(f2p).to_string(),
            "PASS_TO_PASS": json!(p2p).to_string(),
            "problem_statement": "intword and naturaldelta word some numbers wrong.",
            "requirements": requirements,
            "install": [INSTALL],
        });
        let mut broken = instance.clone();
        broken["instance_id"] = json!(format!("{ID}-uninstalled"));
        broken.as_object_mut().unwrap().remove("install");
        std::fs::write(
            dir.path().join("instances.jsonl"),
            format!("{instance}\n{broken}\n"),
        )
        .unwrap();
        Lab { dir, instance }
    }

    /// The golden patch with `more` (a diff) after it.
    fn gold_and(&self, more: &str) -> String {
        format!("{}{more}", self.instance["patch"].as_str().unwrap())
    }

    /// A diff that adds `path` with `content`.
    fn adds(path: &str, content: &str) -> String {
        let lines: Vec<&str> = content.lines().collect();
        let body: String = lines.iter().map(|l| format!("+{l}\n")).collect();
        format!(
            "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n{body}",
            lines.len()
        )
    }

    /// A diff of `path` in the clone, as `edit` leaves it (from the base).
    fn edits(&self, path: &str, edit: impl Fn(&str) -> String) -> String {
        let repo = self.path("repos/python-humanize__humanize");
        let before = std::fs::read_to_string(repo.join(path)).unwrap();
        std::fs::write(repo.join(path), edit(&before)).unwrap();
        let diff = git_in(&repo, &["diff", "--", path]);
        git_in(&repo, &["checkout", "-q", "--", path]);
        assert!(!diff.is_empty(), "{path}");
        diff
    }

    /// A diff that deletes `path` of the clone.
    fn deletes(&self, path: &str) -> String {
        let repo = self.path("repos/python-humanize__humanize");
        git_in(&repo, &["rm", "-q", "--", path]);
        let diff = git_in(&repo, &["diff", "--cached", "--", path]);
        git_in(&repo, &["reset", "-q", "--hard"]);
        diff
    }
}

/// Every prediction and whether it resolves the instance.
fn predictions(lab: &Lab) -> Vec<(&'static str, String, bool)> {
    let test_number = "tests/test_number.py";
    let wrong = lab.edits("src/humanize/number.py", |s| {
        s.replacen(
            "def intword(",
            "def _unused():\n    return 1\n\n\ndef intword(",
            1,
        )
    });
    let gold = lab.gold_and("");
    // A module the fix leaves alone, made unparsable.
    let unparsable = lab.gold_and(&lab.edits("src/humanize/filesize.py", |s| {
        format!("{s}\ndef broken(:\n")
    }));
    let test_edit = lab.gold_and(&lab.edits(test_number, |s| {
        format!("{s}\n\ndef test_added_by_the_agent():\n    assert False\n")
    }));
    let deletes = lab.gold_and(&lab.deletes(test_number));
    let binary = lab.gold_and(
        "diff --git a/logo.png b/logo.png\nnew file mode 100644\nindex 0000000..e69de29\nBinary files /dev/null and b/logo.png differ\n",
    );
    // Forgeries, each on a change that fixes nothing.
    let xfail_all = Lab::adds(
        "conftest.py",
        "import pytest\n\n\ndef pytest_collection_modifyitems(items):\n    for item in items:\n        item.add_marker(pytest.mark.xfail(reason=\"forged\"))\n",
    );
    let makereport = Lab::adds(
        "tests/conftest.py",
        "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    report = outcome.get_result()\n    report.outcome = \"passed\"\n    report.longrepr = None\n",
    );
    let plugin = format!(
        "{}{}",
        Lab::adds(
            "pytest_forge.py",
            "def pytest_runtest_logreport(report):\n    report.outcome = \"passed\"\n",
        ),
        lab.edits("pyproject.toml", |s| s.replace(
            "addopts = \"--color=yes\"",
            "addopts = \"--color=yes -p pytest_forge\""
        ))
    );
    // A plugin that turns every failed call into a pass, and the ways a
    // patch could get pytest (or the interpreter) to load it.
    let flip = "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    report = outcome.get_result()\n    if report.when == \"call\" and report.failed:\n        report.outcome = \"passed\"\n        report.longrepr = None\n";
    let dist_info = format!(
        "{}{}{}",
        Lab::adds("forge.py", flip),
        Lab::adds(
            "forge_dist-1.0.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: forge-dist\nVersion: 1.0\n"
        ),
        Lab::adds(
            "forge_dist-1.0.dist-info/entry_points.txt",
            "[pytest11]\nforge = forge\n"
        ),
    );
    // setuptools' distutils-precedence.pth imports `_distutils_hack` while
    // the interpreter starts: a module by that name in the copy would run
    // before any test, if the copy were on the path then.
    let startup = Lab::adds(
        "_distutils_hack/__init__.py",
            "import _pytest.reports as _r\n\n_real = _r.TestReport.from_item_and_call.__func__\n\n\ndef _forged(cls, item, call):\n    report = _real(cls, item, call)\n    if report.when == \"call\" and report.failed:\n        report.outcome = \"passed\"\n        report.longrepr = None\n    return report\n\n\n_r.TestReport.from_item_and_call = classmethod(_forged)\n\n\ndef add_shim():\n    pass\n\n\ndef do_override():\n    pass\n",
    );
    let pytest_toml = format!(
        "{}{}",
        Lab::adds("forge.py", flip),
        Lab::adds("pytest.toml", "[pytest]\naddopts = [\"-p\", \"forge\"]\n"),
    );
    let tests_init = lab.edits("tests/__init__.py", |s| {
        format!("{s}\nimport forge  # noqa\n")
    });
    let tests_init = format!("{}{tests_init}", Lab::adds("forge.py", flip));
    // A package of the copy named as an installed plugin's (anyio's
    // `anyio.pytest_plugin`, loaded through its entry point).
    let env_plugin = format!(
        "{}{}",
        Lab::adds("anyio/__init__.py", "\n"),
        Lab::adds("anyio/pytest_plugin.py", flip),
    );
    // A new root package, which pytest 8 imports before the tests.
    let root_init = Lab::adds(
        "__init__.py",
        "import _pytest.reports as _r\n\n_real = _r.TestReport.from_item_and_call.__func__\n\n\ndef _forged(cls, item, call):\n    report = _real(cls, item, call)\n    if report.when == \"call\" and report.failed:\n        report.outcome = \"passed\"\n        report.longrepr = None\n    return report\n\n\n_r.TestReport.from_item_and_call = classmethod(_forged)\n",
    );
    // The settings file pytest reads turned into a directory: the grader
    // cannot put it back, which is the patch's doing, not the harness's.
    let dir_in_place = format!(
        "{}{}",
        lab.deletes("pyproject.toml"),
        Lab::adds("pyproject.toml/keep", "x\n")
    );
    let ids: Vec<String> =
        serde_json::from_str::<Vec<String>>(lab.instance["FAIL_TO_PASS"].as_str().unwrap())
            .unwrap()
            .into_iter()
            .chain(
                serde_json::from_str::<Vec<String>>(lab.instance["PASS_TO_PASS"].as_str().unwrap())
                    .unwrap(),
            )
            .collect();
    let summary: String = ids.iter().map(|id| format!("PASSED {id}\n")).collect();
    let forged = json!(format!(
        "=== short test summary info ===\n{summary}=== {} passed ===\n",
        ids.len()
    ));
    let atexit = lab.edits("src/humanize/__init__.py", |s| {
        format!(
            "{s}\n\nimport atexit as _atexit\nimport os as _os\nimport sys as _sys\n\n\ndef _forge():\n    _sys.stdout.write({forged})\n    _sys.stdout.flush()\n    _os._exit(0)\n\n\n_atexit.register(_forge)\n"
        )
    });
    vec![
        ("gold", gold, true),
        ("empty", String::new(), false),
        ("wrong-fix", wrong, false),
        ("unparsable-fix", unparsable, false),
        ("fix-and-test-edit", test_edit, true),
        ("fix-and-test-deleted", deletes, true),
        ("fix-and-binary", binary, true),
        ("forge-xfail-all", xfail_all, false),
        ("forge-makereport", makereport, false),
        ("forge-ini-plugin", plugin, false),
        ("forge-atexit", atexit, false),
        ("forge-dist-info", dist_info, false),
        ("forge-at-start-up", startup, false),
        ("forge-pytest-toml", pytest_toml, false),
        ("forge-tests-init", tests_init, false),
        ("forge-dir-in-place", dir_in_place, false),
        ("forge-env-plugin", env_plugin, false),
        ("forge-root-init", root_init, false),
    ]
}

#[test]
fn predictions_on_a_real_fix_grade_as_swe_bench_and_no_forgery_resolves() {
    let lab = Lab::new();
    let preds = predictions(&lab);
    let lines: String = preds
        .iter()
        .map(|(model, patch, _)| {
            format!(
                "{}\n",
                json!({"instance_id": ID, "model_name_or_path": model, "model_patch": patch})
            )
        })
        .collect();
    std::fs::write(lab.path("predictions.jsonl"), &lines).unwrap();
    // The broken copy has a prediction too: it is not graded.
    std::fs::write(
        lab.path("predictions.jsonl"),
        format!(
            "{lines}{}\n",
            json!({"instance_id": format!("{ID}-uninstalled"), "model_name_or_path": "gold",
                   "model_patch": lab.instance["patch"]})
        ),
    )
    .unwrap();
    let grade = |out: &str| {
        run(critic()
            .args(["experiment", "grade", out])
            .arg("--instances")
            .arg(lab.path("instances.jsonl"))
            .arg("--predictions")
            .arg(lab.path("predictions.jsonl"))
            .arg("--repos")
            .arg(lab.path("repos"))
            .args(["--python", "python3", "--workers", "2"])
            // Its own cache: no pre-flight is known before the first call.
            .env("CRITIC_CACHE_DIR", lab.path("cache"))
            .current_dir(lab.dir.path()))
    };
    let out = grade("out");
    let err = stderr(&out);
    // A broken instance makes the call fail, and says why, with its log.
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "broken instance {ID}-uninstalled: the golden patch does not resolve it"
        )),
        "{err}"
    );
    assert!(err.contains("experiment: |"), "the log's tail: {err}");
    // The pre-flights run beside the gradings; the broken instance's run is
    // not made once its pre-flight has found it broken.
    let t = preds.len() + 1;
    let wanted = format!(
        "{t} of {t} runs to make (0 already finished); 2 instances' pre-flights run beside them"
    );
    assert!(err.contains(&wanted), "{wanted}: {err}");
    assert!(
        err.contains(&format!("{ID}-uninstalled: broken instance ("))
            && err.contains("its run is not made"),
        "{err}"
    );
    let results: BTreeMap<String, Value> = std::fs::read_to_string(lab.path("out/results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|r| (r["arm"].as_str().unwrap().to_string(), r))
        .filter(|(_, r)| r["instance_id"] == ID)
        .collect();
    let mut cases = Vec::new();
    for (model, _, resolves) in &preds {
        let r = results
            .get(*model)
            .unwrap_or_else(|| panic!("{model}: {err}"));
        assert_eq!(r["status"], "ok", "{model}: {r}");
        assert_eq!(r["resolved"], *resolves, "{model}: {r}");
        // SWE-bench on the same log.
        let golden: Value = serde_json::from_slice(
            &std::fs::read(lab.path(&format!("out/runs/{ID}/{model}/0/grade/golden.json")))
                .unwrap(),
        )
        .unwrap();
        let result = &golden["result"];
        if !result["error"].is_null() {
            // Nothing ran: the patch left the copy unusable (it does not
            // apply there); there is no log for SWE-bench to read.
            assert!(
                r["grade_problem"]
                    .as_str()
                    .unwrap()
                    .contains("does not apply"),
                "{r}"
            );
            continue;
        }
        let log = lab.path(&format!("{model}.log"));
        swebench::eval_log(
            &log,
            result["stdout"].as_str().unwrap(),
            result["stderr"].as_str().unwrap(),
            result["exit_code"].as_i64().unwrap() as i32,
        );
        cases.push((*model, *resolves, json!({
            "log": log, "parser": "parse_log_pytest", "repo": REPO,
            "f2p": serde_json::from_str::<Value>(lab.instance["FAIL_TO_PASS"].as_str().unwrap()).unwrap(),
            "p2p": serde_json::from_str::<Value>(lab.instance["PASS_TO_PASS"].as_str().unwrap()).unwrap(),
        })));
        // What was put back is recorded.
        let restores = [
            "forge-xfail-all",
            "forge-makereport",
            "forge-ini-plugin",
            "forge-pytest-toml",
            "forge-tests-init",
            "forge-root-init",
        ];
        if restores.contains(model) {
            let restored = &golden["grade"]["restored"];
            assert!(
                !restored.as_array().unwrap().is_empty(),
                "{model}: {restored}"
            );
        }
    }
    let logs: Vec<Value> = cases.iter().map(|(_, _, c)| c.clone()).collect();
    let theirs = swebench::grades(&logs);
    for ((model, resolves, _), t) in cases.iter().zip(&theirs) {
        let swe = t["report"]["resolved"].as_bool().unwrap();
        eprintln!(
            "{model}: resolved {resolves} here ({}), {swe} by SWE-bench",
            results[*model]["grade_problem"]
        );
        if *model == "forge-atexit" {
            // SWE-bench reads the forged summary after pytest's own and the
            // exit status the forgery set: fooled. The report here is not.
            assert!(swe, "{model}: {t}");
        } else {
            assert_eq!(swe, *resolves, "{model}: SWE-bench says {t}");
        }
    }
    // The gold run used the ids as the dataset cut them, found by the rule.
    let golden: Value = serde_json::from_slice(
        &std::fs::read(lab.path(&format!("out/runs/{ID}/gold/0/grade/golden.json"))).unwrap(),
    )
    .unwrap();
    let rules: Vec<&str> = golden["grade"]["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["rule"].as_str().unwrap())
        .collect();
    assert!(
        rules.contains(&"first-space") && rules.contains(&"exact"),
        "{rules:?}"
    );
    // Grading again takes only what is new or changed; the kept pre-flight
    // says at once that the broken instance's run is not made.
    let again = grade("out");
    let wanted = format!(
        "0 of {t} runs to make ({} already finished, 1 of broken instances not made)",
        preds.len()
    );
    assert!(stderr(&again).contains(&wanted), "{}", stderr(&again));
}

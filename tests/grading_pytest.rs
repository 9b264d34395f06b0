//! A pytest-dev/pytest-style instance: the repository under test is pytest
//! itself, built from pytest 8.3.5's sources as SWE-bench builds it (an
//! editable install of a checkout of the base commit in the environment).
//! Its fix adds to pytest's own package, and its tests run inner sessions
//! through pytester, whose summaries reach the log.
//!
//! As in SWE-bench's harness, the graded tests run under the *patched*
//! pytest (the copy's, not the environment's install of the base commit),
//! and an inner session's `FAILED`/`PASSED` lines are read into the status
//! map rather than taken for a forged summary: the golden patch resolves,
//! also when a blank line and prose come before it, as real model patches
//! do; no patch does not.

mod common;

use common::swebench;
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const REPO: &str = "pytest-dev/pytest";
const ID: &str = "pytest-dev__pytest-99999";
const INSTALL: &str = "SETUPTOOLS_SCM_PRETEND_VERSION=8.3.5 python -m pip install -q --no-deps --no-build-isolation -e .";
const TEST_FILE: &str = "testing/test_critic_probe.py";
const TEST: &str = r#"import pytest


def test_probe_is_there():
    assert pytest.critic_probe() == 42


def test_inner_session(pytester):
    pytester.makepyfile(test_inner="def test_fails():\n    assert 0\n\n\ndef test_passes():\n    pass\n")
    result = pytester.runpytest("-rA")
    result.assert_outcomes(failed=1, passed=1)
    print(result.stdout.str())
"#;

/// pytest's sources, generated files left out (the sdist's metadata, the
/// version file setuptools-scm writes at install).
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for e in std::fs::read_dir(dir.join(&rel)).unwrap().flatten() {
            let r = rel.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                stack.push(r);
            } else if r != Path::new("PKG-INFO") && !r.ends_with("_version.py") {
                out.push(r);
            }
        }
    }
    out
}

#[test]
fn pytest_itself_grades_under_its_own_patched_code_and_its_inner_sessions_are_read() {
    let sdist = swebench::sdist("pytest-source.lock", "pytest-8.3.5");
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let repo = dir.path().join("repos/pytest-dev__pytest");
    for f in sources(&sdist) {
        std::fs::create_dir_all(repo.join(&f).parent().unwrap()).unwrap();
        std::fs::copy(sdist.join(&f), repo.join(&f)).unwrap();
    }
    git_in(&repo, &["init", "-q", "-b", "main"]);
    git_in(&repo, &["add", "-A"]);
    git_in(&repo, &["commit", "-q", "-m", "pytest 8.3.5"]);
    let base = git_in(&repo, &["rev-parse", "HEAD"]).trim().to_string();
    // The fix: a function pytest's package did not have.
    let init = repo.join("src/pytest/__init__.py");
    let before = std::fs::read_to_string(&init).unwrap();
    std::fs::write(
        &init,
        format!("{before}\n\ndef critic_probe() -> int:\n    return 42\n"),
    )
    .unwrap();
    let patch = git_in(&repo, &["diff"]);
    git_in(&repo, &["checkout", "-q", "--", "."]);
    std::fs::write(repo.join(TEST_FILE), TEST).unwrap();
    git_in(&repo, &["add", "-A"]);
    let test_patch = git_in(&repo, &["diff", "--cached"]);
    git_in(&repo, &["reset", "-q", "--hard", &base]);
    let instance = json!({
        "instance_id": ID,
        "repo": REPO,
        "base_commit": base,
        "version": "8.3",
        "patch": patch,
        "test_patch": test_patch,
        "FAIL_TO_PASS": json!([format!("{TEST_FILE}::test_probe_is_there")]).to_string(),
        "PASS_TO_PASS": json!([format!("{TEST_FILE}::test_inner_session")]).to_string(),
        "problem_statement": "pytest has no critic_probe.",
        "requirements": std::fs::read_to_string(swebench::fixture("pytest-env.lock")).unwrap(),
        "install": [INSTALL],
    });
    std::fs::write(dir.path().join("instances.jsonl"), format!("{instance}\n")).unwrap();
    let predictions: String = [
        ("gold", patch.clone()),
        ("empty", String::new()),
        (
            "gold-after-prose",
            format!("\nHere is the change:\n\n{patch}"),
        ),
    ]
    .iter()
    .map(|(model, p)| {
        format!(
            "{}\n",
            json!({"instance_id": ID, "model_name_or_path": model, "model_patch": p})
        )
    })
    .collect();
    std::fs::write(dir.path().join("predictions.jsonl"), predictions).unwrap();
    let out = run(critic()
        .args(["experiment", "grade", "out"])
        .args(["--instances", "instances.jsonl"])
        .args(["--predictions", "predictions.jsonl"])
        .args(["--repos", "repos"])
        .args(["--python", "python3", "--workers", "2"])
        .current_dir(dir.path()));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let results = swebench::results_by_arm(&dir.path().join("out/results.jsonl"));
    for (model, resolves) in [("gold", true), ("empty", false), ("gold-after-prose", true)] {
        let r = &results[model];
        assert_eq!(r["status"], "ok", "{model}: {r}");
        assert_eq!(r["resolved"], resolves, "{model}: {r}");
    }
    // The inner session's summary was in the graded log, and read.
    let golden: Value = serde_json::from_slice(
        &std::fs::read(
            dir.path()
                .join(format!("out/runs/{ID}/gold/0/grade/golden.json")),
        )
        .unwrap(),
    )
    .unwrap();
    let log = golden["result"]["stdout"].as_str().unwrap();
    assert!(log.contains("FAILED test_inner.py::test_fails"), "{log}");
}

//! Grading against SWE-bench's own code. Real test runs make the logs:
//! pytest 8 and 9 on a small project whose ids have spaces, whose tests
//! xfail, xpass, skip, error in setup and teardown, fail in a subtest, or
//! do not import, and whose own settings colour the output; Django's
//! `tests/runtests.py` and SymPy's test runner on their real sources, each
//! with a module of every outcome. Each log is graded by ours
//! (`pluggable_critic::grading`) and by SWE-bench 5.0.2's `get_logs_eval`
//! and `get_eval_report` (installed from PyPI, `tests/grading/`), with
//! every id the log holds, the whole ids behind cut ones, ids cut inside
//! their parameters and ids that are nowhere: the status maps, each id's
//! grade in FAIL_TO_PASS and in PASS_TO_PASS, and the resolution must be
//! the same. The one difference the docs name (a pytest 9 test whose
//! subtest failed fails here, passes there) is asserted as such.

mod common;

use common::*;
use pluggable_critic::grading::log_parsers::LogFormat;
use pluggable_critic::grading::record::{judge_ids, RunRecord};
use pluggable_critic::grading::status::EvalType;
use pluggable_critic::grading::test_command::TestCommand;
use serde_json::json;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn lock(name: &str) -> PathBuf {
    swebench::fixture(name)
}

fn pytest8() -> PathBuf {
    python_venv("arms", Some(&root().join("tests/arms/requirements.lock")))
}

fn pytest9() -> PathBuf {
    python_venv("pytest9", Some(&lock("pytest9.lock")))
}

/// A run's output, as grading gets it.
struct Log {
    name: String,
    stdout: String,
    stderr: String,
    exit: i32,
    /// Its repository, for SWE-bench's TestSpec.
    repo: &'static str,
}

impl Log {
    fn result(&self) -> critic_sdk::RunResult {
        critic_sdk::RunResult {
            exit_code: Some(self.exit),
            stdout: self.stdout.clone(),
            stderr: self.stderr.clone(),
            ..Default::default()
        }
    }

    /// The eval log SWE-bench's harness writes around the test command.
    fn write_eval_log(&self, dir: &Path) -> PathBuf {
        let path = dir.join(format!("{}.log", self.name));
        swebench::eval_log(&path, &self.stdout, &self.stderr, self.exit);
        path
    }
}

/// A copy of the fixture project under target/ (confined runs and pytest's
/// rootdir both want a stable place), run with `python` through the test
/// command grading uses, on `files`.
fn pytest_log(name: &str, python: &Path, files: &[&str]) -> Log {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    copy_tree(&lock("project"), dir.path());
    let command = TestCommand::for_repo("acme/project", python);
    let targets: Vec<String> = files.iter().map(|f| f.to_string()).collect();
    let argv = command.argv_for(&targets);
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(dir.path())
        .env("PYTHONPATH", dir.path())
        .env("PYTHONHASHSEED", "0")
        .env_remove("PYTEST_ADDOPTS")
        .output()
        .unwrap();
    Log {
        name: name.into(),
        stdout: String::from_utf8_lossy(&out.stdout).into(),
        stderr: String::from_utf8_lossy(&out.stderr).into(),
        exit: out.status.code().unwrap(),
        repo: "acme/project",
    }
}

/// Django's runner on its real source, on a module of every outcome (and
/// one of its own test modules).
fn django_log() -> Log {
    let python = python_venv("django", Some(&lock("django.lock")));
    let source = swebench::sdist("django-source.lock", "django-5.2.9");
    let module = source.join("tests/critic_statuses");
    std::fs::create_dir_all(&module).unwrap();
    std::fs::write(module.join("__init__.py"), "").unwrap();
    std::fs::write(
        module.join("tests.py"),
        r#"import unittest

from django.test import SimpleTestCase


class Statuses(SimpleTestCase):
    def test_ok(self):
        self.assertEqual(1, 1)

    def test_fail(self):
        self.assertEqual(1, 2)

    def test_error(self):
        raise RuntimeError("boom")

    @unittest.skip("not here")
    def test_skip(self):
        pass

    @unittest.expectedFailure
    def test_expected_failure(self):
        self.assertEqual(1, 2)

    @unittest.expectedFailure
    def test_unexpected_success(self):
        pass

    def test_prints(self):
        print("Internal Server Error: /admin/x/")
"#,
    )
    .unwrap();
    let out = Command::new(&python)
        .args([
            "tests/runtests.py",
            "--verbosity",
            "2",
            "--settings=test_sqlite",
            "--parallel",
            "1",
            "critic_statuses",
            "utils_tests.test_text",
        ])
        .current_dir(&source)
        .env("PYTHONPATH", &source)
        .output()
        .unwrap();
    Log {
        name: "django".into(),
        stdout: String::from_utf8_lossy(&out.stdout).into(),
        stderr: String::from_utf8_lossy(&out.stderr).into(),
        exit: out.status.code().unwrap(),
        repo: "django/django",
    }
}

/// SymPy's own runner (what its `bin/test -C --verbose` runs) on its real
/// source, on a module of every outcome and one of its own.
fn sympy_log() -> Log {
    let python = python_venv("sympy", Some(&lock("sympy.lock")));
    let source = swebench::sdist("sympy-source.lock", "sympy-1.14.0");
    std::fs::write(
        source.join("sympy/core/tests/test_critic_statuses.py"),
        r#"from sympy import Symbol
from sympy.testing.pytest import XFAIL, skip


def test_passes():
    assert Symbol("x") == Symbol("x")


def test_fails():
    assert Symbol("x") == Symbol("y")


def test_errors():
    raise ValueError("boom")


@XFAIL
def test_expected_failure():
    assert False


def test_skipped():
    skip("not today")
"#,
    )
    .unwrap();
    let out = Command::new(&python)
        .args([
            "-c",
            "import os, sys; os.environ['SYMPY_USE_CACHE'] = 'no'\n\
             from sympy.testing.runtests import test\n\
             sys.exit(0 if test(*sys.argv[1:], verbose=True, tb='short', colors=False) else 1)",
            "sympy/core/tests/test_critic_statuses.py",
            "sympy/core/tests/test_truediv.py",
        ])
        .current_dir(&source)
        .env("PYTHONPATH", &source)
        .env("PYTHONHASHSEED", "0")
        .output()
        .unwrap();
    Log {
        name: "sympy".into(),
        stdout: String::from_utf8_lossy(&out.stdout).into(),
        stderr: String::from_utf8_lossy(&out.stderr).into(),
        exit: out.status.code().unwrap(),
        repo: "sympy/sympy",
    }
}

/// The ids to grade a log by: every id SWE-bench's parser reads in it,
/// the whole ids pytest's report names, each id cut inside its parameters
/// (SWE-bench's prefix rule), and ids that are nowhere.
fn ids_of(log: &Log, swebench_map: &[(String, String)]) -> Vec<String> {
    let mut ids: BTreeSet<String> = swebench_map.iter().map(|(k, _)| k.clone()).collect();
    if let Ok(Some(report)) = pluggable_critic::grading::pytest_report::read(&log.stderr) {
        ids.extend(report.tests.iter().map(|t| t.id.clone()));
    }
    let cut: Vec<String> = ids
        .iter()
        .filter_map(|id| {
            let open = id.find('[')?;
            let rest = &id[open + 1..];
            (rest.chars().count() > 2).then(|| {
                let keep: String = rest.chars().take(rest.chars().count() / 2).collect();
                format!("{}[{keep}", &id[..open])
            })
        })
        .collect();
    ids.extend(cut);
    ids.insert("tests/test_params.py::test_gone".into());
    ids.insert("test_gone (nowhere.Tests.test_gone)".into());
    ids.into_iter().collect()
}

/// Grade `log` in `format` both ways; `differs` lists the ids whose
/// FAIL_TO_PASS and PASS_TO_PASS grades the docs say differ (ours fail,
/// SWE-bench's pass). Returns how many ids were compared, and whether
/// SWE-bench believed the log (else only the resolution is compared).
fn compare(log: &Log, format: LogFormat, parser: &str, differs: &[&str]) -> (usize, bool) {
    let dir = tempfile::tempdir().unwrap();
    let path = log.write_eval_log(dir.path());
    let case = |f2p: &[String], p2p: &[String]| json!({"log": path, "parser": parser, "repo": log.repo, "f2p": f2p, "p2p": p2p});
    let first = &swebench::grades(&[case(&[], &[])])[0];
    let their_map: Vec<(String, String)> = first["status_map"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_str().unwrap().into(), p[1].as_str().unwrap().into()))
        .collect();
    let ids = ids_of(log, &their_map);
    let theirs = &swebench::grades(&[case(&ids, &ids)])[0];
    let record = RunRecord::of(&log.result(), format);
    let ours = judge_ids(&record, &ids, &ids, EvalType::PassAndFail);
    let what = format!("{} read as {parser}", log.name);
    if theirs["found"] == false {
        // SWE-bench does not believe the log: nothing resolves.
        assert!(!ours.resolved, "{what}: {ours:?}");
        return (ids.len(), false);
    }
    // The same status map, in the same order, but where a subtest failed.
    let our_map: Vec<(String, String)> = record
        .statuses
        .iter()
        .map(|(k, s)| (k.clone(), s.word().to_string()))
        .collect();
    let expected_map: Vec<(String, String)> = their_map
        .iter()
        .map(|(k, s)| {
            let s = if differs.contains(&k.as_str()) {
                "FAILED"
            } else {
                s
            };
            (k.clone(), s.to_string())
        })
        .collect();
    assert_eq!(our_map, expected_map, "{what}: status maps\n{}", log.stdout);
    assert!(
        record.problem.is_none() && record.contradiction.is_none(),
        "{what}: {record:?}"
    );
    for (list, name) in [
        (
            pluggable_critic::grading::status::List::FailToPass,
            "FAIL_TO_PASS",
        ),
        (
            pluggable_critic::grading::status::List::PassToPass,
            "PASS_TO_PASS",
        ),
    ] {
        let success: BTreeSet<&str> = theirs["report"]["tests_status"][name]["success"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let failure: BTreeSet<&str> = theirs["report"]["tests_status"][name]["failure"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        for g in ours.ids.iter().filter(|g| g.list == list) {
            let id = g.id.as_str();
            assert!(
                success.contains(id) != failure.contains(id),
                "{what}: {name} {id} graded once by SWE-bench"
            );
            if differs.contains(&id) {
                assert!(
                    success.contains(id) && !g.success,
                    "{what}: {name} {id}: {g:?}"
                );
            } else {
                assert_eq!(
                    g.success,
                    success.contains(id),
                    "{what}: {name} {id}: {g:?}"
                );
            }
        }
    }
    // A set both call resolved is resolved by both.
    let both_pass: Vec<String> = ours
        .ids
        .iter()
        .filter(|g| g.success && ours.ids.iter().filter(|o| o.id == g.id).all(|o| o.success))
        .map(|g| g.id.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !both_pass.is_empty() {
        let theirs = &swebench::grades(&[case(&both_pass, &both_pass)])[0];
        let ours = judge_ids(&record, &both_pass, &both_pass, EvalType::PassAndFail);
        assert_eq!(theirs["report"]["resolved"], true, "{what}: {theirs}");
        assert!(ours.resolved, "{what}: {ours:?}");
    }
    eprintln!("{what}: {} ids, the same grades", ids.len());
    (ids.len(), true)
}

const PYTEST_PARSERS: [(LogFormat, &str); 4] = [
    (LogFormat::Pytest, "parse_log_pytest"),
    (LogFormat::PytestOptions, "parse_log_pytest_options"),
    (LogFormat::PytestV2, "parse_log_pytest_v2"),
    (LogFormat::Matplotlib, "parse_log_matplotlib"),
];

#[test]
fn pytest_8_logs_grade_as_swe_bench_grades_them() {
    let python = pytest8();
    let log = pytest_log(
        "pytest8",
        &python,
        &[
            "tests/test_params.py",
            "tests/test_marks.py",
            "tests/test_errors.py",
            "tests/test_sub.py",
        ],
    );
    assert!(
        log.stdout
            .contains("PASSED tests/test_params.py::test_natural[1-1 Byte]"),
        "{}",
        log.stdout
    );
    // The project's `--color=yes` did not colour what grading reads.
    assert!(!log.stdout.contains('\x1b'), "{}", log.stdout);
    for (format, parser) in PYTEST_PARSERS {
        let (ids, believed) = compare(&log, format, parser, &[]);
        assert!(ids > 30 && believed, "{parser}: {ids}");
    }
    let collection = pytest_log(
        "pytest8-collection",
        &python,
        &["tests/test_broken.py", "tests/test_params.py"],
    );
    assert_eq!(collection.exit, 2, "{}", collection.stdout);
    assert!(compare(&collection, LogFormat::Pytest, "parse_log_pytest", &[]).1);
}

#[test]
fn pytest_9_logs_grade_as_swe_bench_grades_them_but_a_failed_subtest_fails_its_test() {
    let python = pytest9();
    let log = pytest_log(
        "pytest9",
        &python,
        &[
            "tests/test_params.py",
            "tests/test_marks.py",
            "tests/test_errors.py",
            "tests/test_sub.py",
        ],
    );
    assert!(
        log.stdout
            .contains("SUBFAILED(n=2) tests/test_sub.py::Sizes::test_each")
            && log
                .stdout
                .contains("PASSED tests/test_sub.py::Sizes::test_each"),
        "{}",
        log.stdout
    );
    for (format, parser) in PYTEST_PARSERS {
        let (ids, believed) = compare(
            &log,
            format,
            parser,
            &["tests/test_sub.py::Sizes::test_each"],
        );
        assert!(ids > 30 && believed, "{parser}: {ids}");
    }
    // Only the subtest failed: SWE-bench does not believe a log that exits
    // 1 with nothing failed in it; here the test fails. Nothing resolves
    // either way.
    let alone = pytest_log("pytest9-subtest", &python, &["tests/test_sub.py"]);
    assert_eq!(alone.exit, 1);
    assert!(!compare(&alone, LogFormat::Pytest, "parse_log_pytest", &[]).1);
    let collection = pytest_log(
        "pytest9-collection",
        &python,
        &["tests/test_broken.py", "tests/test_params.py"],
    );
    assert!(compare(&collection, LogFormat::Pytest, "parse_log_pytest", &[]).1);
}

#[test]
fn django_and_sympy_logs_grade_as_swe_bench_grades_them() {
    let django = django_log();
    assert!(
        django.stderr.contains("... FAIL"),
        "{}{}",
        django.stdout,
        django.stderr
    );
    let (ids, believed) = compare(&django, LogFormat::Django, "parse_log_django", &[]);
    assert!(ids > 20 && believed, "{ids}");
    let sympy = sympy_log();
    assert!(sympy.stdout.contains("test_fails F"), "{}", sympy.stdout);
    let (ids, believed) = compare(&sympy, LogFormat::Sympy, "parse_log_sympy", &[]);
    assert!(ids > 5 && believed, "{ids}");
}

/// A plugin that turns every failed call into a pass.
const FLIP: &str = "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    report = outcome.get_result()\n    if report.when == \"call\" and report.failed:\n        report.outcome = \"passed\"\n        report.longrepr = None\n";

/// A collected module's `pytest_plugins` counts only in the test files the
/// run was given: one a patch adds to another module of the copy loads
/// nothing. Without the list (as before), the plugin would load and forge
/// the failing test's pass.
#[test]
fn pytest_plugins_count_only_in_the_test_files_a_run_was_given() {
    for python in [pytest8(), pytest9()] {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        copy_tree(&lock("project"), dir.path());
        std::fs::write(dir.path().join("forge.py"), FLIP).unwrap();
        std::fs::write(
            dir.path().join("tests/test_golden.py"),
            "def test_ok():\n    assert True\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("tests/test_other.py"),
            "pytest_plugins = [\"forge\"]\n\n\ndef test_fails():\n    assert False\n",
        )
        .unwrap();
        let command = TestCommand::for_repo("acme/project", &python);
        let argv = command.argv_for(&["tests/test_golden.py".into(), "tests/test_other.py".into()]);
        let run = |given: Option<&str>| {
            let mut cmd = Command::new(&argv[0]);
            cmd.args(&argv[1..])
                .current_dir(dir.path())
                .env("PYTHONPATH", dir.path())
                .env_remove("PYTEST_ADDOPTS");
            if let Some(files) = given {
                cmd.env("CRITIC_TEST_FILES", files);
            }
            let out = cmd.output().unwrap();
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let guarded = run(Some("tests/test_golden.py"));
        assert!(
            guarded.contains("FAILED tests/test_other.py::test_fails"),
            "{}: {guarded}",
            python.display()
        );
        let open = run(None);
        assert!(
            open.contains("PASSED tests/test_other.py::test_fails"),
            "the forgery works where nothing guards: {open}"
        );
        // A test file the run was given keeps its plugins.
        let given = run(Some("tests/test_golden.py\ntests/test_other.py"));
        assert!(
            given.contains("PASSED tests/test_other.py::test_fails"),
            "{given}"
        );
    }
}

//! Records as SWE-bench publishes them are enough: a record with only
//! SWE-bench's fields (no `python`, `requirements`, `install`, `test_cmd`,
//! no `--python`, no `environments` block) is graded in the environment
//! SWE-bench's own specification of its repository and version describes
//! (`data/swebench-specs.json`): the Python version found on the machine,
//! the repository's requirements file at `environment_setup_commit` and the
//! pinned packages installed with their dependencies (as of the date
//! SWE-bench's environments are resolved as of), the resolved set kept as a
//! lock a rebuild installs, the repository installed as SWE-bench
//! installs it, its test command. A Python version the machine lacks is a
//! clear error before any run.
//!
//! The repositories are small stand-ins under the real names (pallets/flask
//! 2.3, django/django 2.2), so that SWE-bench's specifications of those
//! apply; their packages come from PyPI.

mod common;

use common::swebench;
use common::*;
use serde_json::json;
use std::path::Path;

fn write(root: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

/// A repository at `dir` holding `files`, committed; its commit.
fn repository(dir: &Path, files: &[(&str, &str)]) -> String {
    std::fs::create_dir_all(dir).unwrap();
    write(dir, files);
    git_in(dir, &["init", "-q", "-b", "main"]);
    git_in(dir, &["add", "-A"]);
    git_in(dir, &["commit", "-q", "-m", "base"]);
    git_in(dir, &["rev-parse", "HEAD"]).trim().to_string()
}

/// The diff `files` make of the repository at `dir` (left as it was).
fn diff_of(dir: &Path, files: &[(&str, &str)]) -> String {
    write(dir, files);
    git_in(dir, &["add", "-A"]);
    let diff = git_in(dir, &["diff", "--cached"]);
    git_in(dir, &["reset", "-q", "--hard"]);
    diff
}

/// `record` as the instances file, and its golden patch and no patch as
/// the predictions (`gold`, `empty`).
fn gold_and_empty(lab: &Path, record: &serde_json::Value, patch: &str) {
    std::fs::write(lab.join("instances.jsonl"), format!("{record}\n")).unwrap();
    let predictions: String = [("gold", patch), ("empty", "")]
        .iter()
        .map(|(m, p)| {
            format!(
                "{}\n",
                json!({"instance_id": record["instance_id"], "model_name_or_path": m, "model_patch": p})
            )
        })
        .collect();
    std::fs::write(lab.join("predictions.jsonl"), predictions).unwrap();
}

fn grade(lab: &Path, out: &str) -> std::process::Output {
    run(critic()
        .args(["experiment", "grade", out])
        .args(["--instances", "instances.jsonl"])
        .args(["--predictions", "predictions.jsonl"])
        .args(["--repos", "repos"])
        // Its own cache: environments are built in it.
        .env("CRITIC_CACHE_DIR", lab.join("cache"))
        .current_dir(lab))
}

#[test]
fn a_record_with_swe_benchs_fields_alone_is_graded_in_swe_benchs_environment() {
    let lab = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let repo = lab.path().join("repos/pallets__flask");
    let base = repository(
        &repo,
        &[
            (
                "pyproject.toml",
                "[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"flaskish\"\nversion = \"2.3.0\"\n",
            ),
            ("src/flaskish/__init__.py", "def answer():\n    return 41\n"),
            // SWE-bench reads requirements/dev.txt, with its -r files.
            ("requirements/dev.txt", "-e .\n-r tests.txt\n# tools\n"),
            ("requirements/tests.txt", "pytest==8.3.4\n"),
            (
                "tests/test_other.py",
                "import werkzeug\n\n\ndef test_ok():\n    assert werkzeug\n",
            ),
        ],
    );
    let patch = diff_of(
        &repo,
        &[("src/flaskish/__init__.py", "def answer():\n    return 42\n")],
    );
    let test_patch = diff_of(
        &repo,
        &[(
            "tests/test_answer.py",
            "from flaskish import answer\n\n\ndef test_answer():\n    assert answer() == 42\n",
        )],
    );
    let record = json!({
        "instance_id": "pallets__flask-99999",
        "repo": "pallets/flask",
        "base_commit": base,
        "environment_setup_commit": base,
        "version": "2.3",
        "patch": patch,
        "test_patch": test_patch,
        "FAIL_TO_PASS": "[\"tests/test_answer.py::test_answer\"]",
        "PASS_TO_PASS": "[\"tests/test_other.py::test_ok\"]",
        "problem_statement": "answer() is off by one.",
    });
    gold_and_empty(lab.path(), &record, &patch);
    let out = grade(lab.path(), "out");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("building the environment"), "{err}");
    let results = swebench::results_by_arm(&lab.path().join("out/results.jsonl"));
    assert_eq!(results["gold"]["resolved"], true, "{}", results["gold"]);
    assert_eq!(results["empty"]["resolved"], false, "{}", results["empty"]);
    // The environment: SWE-bench's Python and packages, resolved into a lock.
    let envs = lab.path().join("out/envs");
    let lock = std::fs::read_dir(&envs)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "lock"))
        .expect("a lock beside the environment");
    let pinned = std::fs::read_to_string(&lock).unwrap();
    // iniconfig 2.1.0 came out after the date SWE-bench's environments are
    // resolved as of: 2.0.0 is what they had.
    for wanted in [
        "pytest==8.3.4",
        "Werkzeug==2.3.7",
        "iniconfig==2.0.0",
        "MarkupSafe==",
    ] {
        assert!(pinned.contains(wanted), "{wanted}: {pinned}");
    }
    // Built in critic's cache, the output keeping its lock.
    let env = lab
        .path()
        .join("cache/envs")
        .join(lock.file_stem().unwrap());
    assert_eq!(
        std::fs::read_to_string(environment_lock(&env)).unwrap(),
        pinned
    );
    let version = std::process::Command::new(env.join("bin/python"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&version.stdout).starts_with("Python 3.11"),
        "{version:?}"
    );
    // Another output uses it as it is, and gets its lock.
    let other = grade(lab.path(), "other");
    let err = stderr(&other);
    assert_eq!(other.status.code(), Some(0), "{err}");
    assert!(!err.contains("building the environment"), "{err}");
    let other_lock = lab
        .path()
        .join("other/envs")
        .join(lock.file_name().unwrap());
    assert_eq!(std::fs::read_to_string(&other_lock).unwrap(), pinned);
    assert_eq!(
        swebench::results_by_arm(&lab.path().join("other/results.jsonl"))["gold"]["resolved"],
        true
    );
    // A rebuild installs the lock: the same packages, no resolving.
    std::fs::remove_file(env.join(".complete")).unwrap();
    std::fs::remove_file(lab.path().join("out/results.sqlite")).unwrap();
    let again = grade(lab.path(), "out");
    let err = stderr(&again);
    assert_eq!(again.status.code(), Some(0), "{err}");
    assert!(err.contains("and its lock"), "{err}");
    assert_eq!(std::fs::read_to_string(&lock).unwrap(), pinned);
    // An output whose lock says otherwise gets an environment of that lock,
    // beside the one of the first.
    let older = pinned.replace("iniconfig==2.0.0", "iniconfig==1.1.1");
    std::fs::write(&other_lock, &older).unwrap();
    std::fs::remove_file(lab.path().join("other/results.sqlite")).unwrap();
    let twin = grade(lab.path(), "other");
    let err = stderr(&twin);
    assert_eq!(twin.status.code(), Some(0), "{err}");
    assert!(err.contains("-lock-"), "{err}");
    assert_eq!(std::fs::read_to_string(&other_lock).unwrap(), older);
    assert_eq!(
        std::fs::read_to_string(environment_lock(&env)).unwrap(),
        pinned
    );
    let twins: Vec<_> = std::fs::read_dir(lab.path().join("cache/envs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && p.to_string_lossy().contains("-lock-"))
        .collect();
    assert_eq!(twins.len(), 1, "{twins:?}");
    let freeze = std::process::Command::new(twins[0].join("bin/python"))
        .args(["-m", "pip", "freeze"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&freeze.stdout).contains("iniconfig==1.1.1"),
        "{freeze:?}"
    );
}

/// The lock kept beside the environment at `env`.
fn environment_lock(env: &Path) -> std::path::PathBuf {
    let mut name = env.file_name().unwrap().to_os_string();
    name.push(".lock");
    env.with_file_name(name)
}

#[test]
fn a_python_version_the_machine_lacks_is_a_clear_error_before_any_run() {
    let lab = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let repo = lab.path().join("repos/django__django");
    let base = repository(
        &repo,
        &[
            ("tests/requirements/py3.txt", "asgiref\n"),
            ("django/__init__.py", "VERSION = (2, 2)\n"),
        ],
    );
    let patch = diff_of(&repo, &[("django/__init__.py", "VERSION = (2, 2, 1)\n")]);
    let test_patch = diff_of(
        &repo,
        &[("tests/version/tests.py", "def test_version():\n    pass\n")],
    );
    let record = json!({
        "instance_id": "django__django-99999",
        "repo": "django/django",
        "base_commit": base,
        "environment_setup_commit": base,
        "version": "2.2",
        "patch": patch,
        "test_patch": test_patch,
        "FAIL_TO_PASS": "[\"test_version (version.tests.VersionTests)\"]",
        "PASS_TO_PASS": "[]",
        "problem_statement": "A version.",
    });
    std::fs::write(lab.path().join("instances.jsonl"), format!("{record}\n")).unwrap();
    std::fs::write(
        lab.path().join("predictions.jsonl"),
        format!(
            "{}\n",
            json!({"instance_id": "django__django-99999", "model_name_or_path": "gold", "model_patch": patch})
        ),
    )
    .unwrap();
    let out = grade(lab.path(), "out");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("SWE-bench's environment of django/django 2.2: no Python 3.5"),
        "{err}"
    );
    assert!(err.contains("pyenv install 3.5"), "{err}");
    assert!(!lab.path().join("out/results.jsonl").exists());
    assert!(!lab.path().join("out/envs").exists());
}

/// SWE-bench's Sphinx command, `tox --current-env -epy39 -v --`, runs what
/// the repository's tox.ini says: its pytest line (interpreter options
/// included) with its `setenv` variables, the test files as `{posargs}`.
#[test]
fn a_tox_command_grades_as_the_pytest_command_it_runs() {
    let lab = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let repo = lab.path().join("repos/sphinx-doc__sphinx");
    let tox_ini = "[tox]\nenvlist = py{39,310}\n\n[testenv]\nsetenv =\n    PYTHONWARNINGS = error\n    PYTEST_ADDOPTS = {env:PYTEST_ADDOPTS:} --color yes\ncommands=\n    python -X dev -m pytest -rA --durations 25 {posargs}\n";
    let base = repository(
        &repo,
        &[
            ("tox.ini", tox_ini),
            ("sphinxish/__init__.py", "def answer():\n    return 41\n"),
            (
                "tests/test_env.py",
                "import os, sys\n\n\ndef test_tox_settings():\n    assert os.environ['PYTHONWARNINGS'] == 'error'\n    assert sys.flags.dev_mode\n",
            ),
        ],
    );
    let patch = diff_of(
        &repo,
        &[("sphinxish/__init__.py", "def answer():\n    return 42\n")],
    );
    let test_patch = diff_of(
        &repo,
        &[(
            "tests/test_answer.py",
            "from sphinxish import answer\n\n\ndef test_answer():\n    assert answer() == 42\n",
        )],
    );
    let record = json!({
        "instance_id": "sphinx-doc__sphinx-99999",
        "repo": "sphinx-doc/sphinx",
        "base_commit": base,
        "patch": patch,
        "test_patch": test_patch,
        "FAIL_TO_PASS": "[\"tests/test_answer.py::test_answer\"]",
        "PASS_TO_PASS": "[\"tests/test_env.py::test_tox_settings\"]",
        "problem_statement": "answer() is off by one.",
        "requirements": "iniconfig==2.0.0\npackaging==24.2\npluggy==1.5.0\npytest==8.3.5\n",
        "test_cmd": "tox --current-env -epy39 -v --",
    });
    gold_and_empty(lab.path(), &record, &patch);
    let out = run(critic()
        .args(["experiment", "grade", "out"])
        .args(["--instances", "instances.jsonl"])
        .args(["--predictions", "predictions.jsonl"])
        .args(["--repos", "repos", "--python", "python3"])
        .env("CRITIC_CACHE_DIR", lab.path().join("cache"))
        .current_dir(lab.path()));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let results = swebench::results_by_arm(&lab.path().join("out/results.jsonl"));
    assert_eq!(results["gold"]["resolved"], true, "{}", results["gold"]);
    assert_eq!(results["empty"]["resolved"], false, "{}", results["empty"]);
    // Another output with the same record, environment and critic reuses
    // the pre-flight, with its log.
    let again = run(critic()
        .args(["experiment", "grade", "out2"])
        .args(["--instances", "instances.jsonl"])
        .args(["--predictions", "predictions.jsonl"])
        .args(["--repos", "repos", "--python", "python3"])
        .env("CRITIC_CACHE_DIR", lab.path().join("cache"))
        .current_dir(lab.path()));
    let err = stderr(&again);
    assert_eq!(again.status.code(), Some(0), "{err}");
    assert!(
        err.contains("the pre-flight of an earlier output is reused"),
        "{err}"
    );
    let golden = lab
        .path()
        .join("out2/preflight/sphinx-doc__sphinx-99999/golden.json");
    assert!(
        std::fs::read_to_string(golden)
            .unwrap()
            .contains("test_answer"),
        "the reused log"
    );
}

/// SWE-bench builds xarray's environment with conda from the repository's
/// `environment.yml`: here its packages are resolved from PyPI (renamed
/// where PyPI's name differs, left out where PyPI has none), then
/// SWE-bench's pinned `pip_packages`.
#[test]
fn a_conda_environment_file_is_built_as_its_pip_equivalent() {
    let lab = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let repo = lab.path().join("repos/pydata__xarray");
    let base = repository(
        &repo,
        &[
            (
                "pyproject.toml",
                "[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"xarrayish\"\nversion = \"0.12.0\"\n",
            ),
            ("xarrayish/__init__.py", "def answer():\n    return 41\n"),
            (
                "ci/requirements/environment.yml",
                "name: xarray-tests\nchannels:\n  - conda-forge\ndependencies:\n  - python=3.10\n  - hdf5\n  - iniconfig=2.0\n  - no-such-conda-package-critic-test\n  - pip\n  - pip:\n    - six==1.16.0\n",
            ),
            (
                "xarrayish/tests/test_env.py",
                "import iniconfig\nimport numpy\nimport six\n\n\ndef test_env():\n    assert numpy.__version__ == \"1.23.0\"\n",
            ),
        ],
    );
    let patch = diff_of(
        &repo,
        &[("xarrayish/__init__.py", "def answer():\n    return 42\n")],
    );
    let test_patch = diff_of(
        &repo,
        &[(
            "xarrayish/tests/test_answer.py",
            "from xarrayish import answer\n\n\ndef test_answer():\n    assert answer() == 42\n",
        )],
    );
    let id = "pydata__xarray-99999";
    let record = json!({
        "instance_id": id, "repo": "pydata/xarray", "base_commit": base,
        "environment_setup_commit": base, "version": "0.12",
        "patch": patch, "test_patch": test_patch,
        "FAIL_TO_PASS": "[\"xarrayish/tests/test_answer.py::test_answer\"]",
        "PASS_TO_PASS": "[\"xarrayish/tests/test_env.py::test_env\"]",
        "problem_statement": "answer() is off by one.",
    });
    gold_and_empty(lab.path(), &record, &patch);
    let out = grade(lab.path(), "out");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let results = swebench::results_by_arm(&lab.path().join("out/results.jsonl"));
    assert_eq!(results["gold"]["resolved"], true, "{}", results["gold"]);
    assert_eq!(results["empty"]["resolved"], false, "{}", results["empty"]);
    let lock = std::fs::read_dir(lab.path().join("out/envs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "lock"))
        .expect("the output's lock");
    let pinned = std::fs::read_to_string(&lock).unwrap();
    // The file's packages, the `pip:` section and SWE-bench's pins; not
    // what PyPI does not have.
    for wanted in [
        "iniconfig==2.0.0",
        "six==1.16.0",
        "numpy==1.23.0",
        "pytest==7.4.0",
    ] {
        assert!(pinned.contains(wanted), "{wanted}: {pinned}");
    }
    assert!(!pinned.to_lowercase().contains("no-such-conda"), "{pinned}");
}

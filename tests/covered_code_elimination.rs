//! The covered-code-elimination skill end to end: a real git work tree, the
//! agent's tests written between finishes, real pytest runs under real
//! coverage.py through the host's `run`, and the seed's flags (1, 0, -1)
//! with refinement in between.

mod common;

use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

const TARGET: &str = "shipping/rates.py::quote";

/// The Python with pytest and coverage.py.
fn python() -> PathBuf {
    python_venv(
        "coverage",
        Some(&root().join("tests/eliminate/coverage-requirements.lock")),
    )
}

/// The skill, configured for `TARGET` with `python` and `limit`.
fn skill(python: &Path, limit: u32) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let shipped = root().join("skills/covered-code-elimination");
    std::fs::copy(
        shipped.join("covered_code_elimination.wasm"),
        dir.path().join("covered_code_elimination.wasm"),
    )
    .unwrap();
    let manifest = std::fs::read_to_string(shipped.join("critic.yaml"))
        .unwrap()
        .replace("path/to/module.py::function", TARGET)
        .replace(
            "test_command: [python3, -m, pytest, -q]",
            &format!("test_command: [{}, -m, pytest, -q]", python.display()),
        )
        .replace("limit: 5", &format!("limit: {limit}"));
    std::fs::write(dir.path().join("critic.yaml"), manifest).unwrap();
    dir
}

/// A work tree holding the shipping package.
fn repo() -> Repo {
    let read = |p: &str| {
        std::fs::read_to_string(root().join("examples/elimination-repo").join(p)).unwrap()
    };
    Repo::new(&[
        ("shipping/__init__.py", &read("shipping/__init__.py")),
        ("shipping/rates.py", &read("shipping/rates.py")),
        ("shipping/zones.py", &read("shipping/zones.py")),
    ])
}

/// One finish: the check's exit code and verdict.
fn finish(skill: &Path, repo: &Repo, state: &Path) -> (i32, Value) {
    let events = root().join("examples/demo-run/finish-3.jsonl");
    let out = run(&mut check(skill, repo.path(), &events, state));
    let code = out.status.code().unwrap();
    assert!(code == 0 || code == 1, "{}", stderr(&out));
    let stored = state.join("covered-code-elimination/default/signal-coverage.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(stored).unwrap()).unwrap();
    assert_schema("elimination-state.schema.json", &doc["state"]);
    (code, json_out(&out))
}

/// A finish whose check fails: the signal's error and the verdict.
fn failing_finish(skill: &Path, repo: &Repo, state: &Path) -> (String, Value) {
    let events = root().join("examples/demo-run/finish-3.jsonl");
    let v = json_out(&run(&mut check(skill, repo.path(), &events, state)));
    let error = v["signals"][0]["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (error, v)
}

fn signal(v: &Value) -> &Value {
    &v["signals"][0]["metadata"]
}

const FIRST_TESTS: &str = "\
from shipping.rates import quote

def test_local():
    assert quote(1, 'local') == 530
    assert quote(1, 'local', express=True) == 1060
";

const MORE_TESTS: &str = "\
import pytest
from shipping.rates import quote

def test_national():
    assert quote(30, 'national') == 900 + 1200 + 400
    assert quote(1, 'national', coupon='HALF') == 470

def test_bad():
    with pytest.raises(ValueError):
        quote(0, 'local')
    with pytest.raises(KeyError):
        quote(1, 'moon')
";

const LAST_TESTS: &str = "\
import pytest
from shipping.rates import quote

def test_international():
    assert quote(10, 'international') == 4300
    assert quote(30, 'international') == 7000
    assert quote(1, 'international', express=True) == 6780
    assert quote(1, 'international', coupon='MINUS100') == 2790
    assert quote(100, 'international') == 10_000
    with pytest.raises(ValueError):
        quote(1, 'international', coupon='FREE')
";

#[test]
fn slices_shrink_as_coverage_grows_until_the_function_is_covered() {
    let python = python();
    let skill = skill(&python, 5);
    let repo = repo();
    let state = tempfile::tempdir().unwrap();

    // No tests yet: the task, with the function and its context.
    let (code, v) = finish(skill.path(), &repo, state.path());
    assert_eq!(code, 1);
    assert_eq!(signal(&v)["flag"], "no_tests", "{v}");
    let task = v["followup"].as_str().unwrap();
    assert!(task.contains("Write pytest tests for `quote`"), "{task}");
    assert!(task.contains("FREE_LIMIT = 10_000"), "{task}");
    assert!(task.contains("shipping.zones.surcharge"), "{task}");
    assert!(
        task.contains("The fuel surcharge of a zone, in cents."),
        "{task}"
    );

    // Some coverage: flag 0 and the first slice.
    repo.write("tests/test_first.py", FIRST_TESTS);
    let (code, v) = finish(skill.path(), &repo, state.path());
    assert_eq!(code, 1, "{v}");
    let m = signal(&v);
    assert_eq!(
        (m["flag"].as_str(), m["seed_flag"].as_i64()),
        (Some("progress"), Some(0)),
        "{v}"
    );
    let first_slice = m["slice_statements"].as_u64().unwrap();
    let total = m["statements"].as_u64().unwrap();
    assert!(first_slice < total, "{v}");
    // The local branch, covered, is gone; the rest nests under its test.
    let text = v["followup"].as_str().unwrap();
    assert!(!text.contains("price = 500"), "{text}");
    assert!(
        text.contains("   12 |     if not (zone == \"local\"):"),
        "{text}"
    );
    assert!(text.contains(">>   18 |"), "{text}");
    let feedback = repo
        .path()
        .join(".critic/feedback/covered-code-elimination");
    assert!(
        feedback.join("slice-1.py").is_file() && feedback.join("coverage-finish-2.md").is_file()
    );

    // More: flag 0 again, and a smaller slice.
    repo.write("tests/test_more.py", MORE_TESTS);
    let (code, v) = finish(skill.path(), &repo, state.path());
    assert_eq!(code, 1, "{v}");
    let m = signal(&v);
    assert_eq!(m["flag"], "progress", "{v}");
    assert_eq!(m["slice_round"], 2, "{v}");
    assert!(m["slice_statements"].as_u64().unwrap() < first_slice, "{v}");
    let text = v["followup"].as_str().unwrap();
    assert!(
        text.contains("if not (zone == \"local\") and not (zone == \"national\"):"),
        "{text}"
    );
    assert!(!text.contains("KeyError"), "{text}");

    // Everything: flag 1, accepted.
    repo.write("tests/test_last.py", LAST_TESTS);
    let (code, v) = finish(skill.path(), &repo, state.path());
    assert_eq!(code, 0, "{v}");
    let m = signal(&v);
    assert_eq!(
        (m["flag"].as_str(), m["seed_flag"].as_i64()),
        (Some("covered"), Some(1)),
        "{v}"
    );
    assert_eq!(m["covered"], m["statements"], "{v}");
}

#[test]
fn no_progress_refines_until_the_limit_then_accepts_what_it_got() {
    let python = python();
    let skill = skill(&python, 2);
    let repo = repo();
    let state = tempfile::tempdir().unwrap();
    repo.write("tests/test_first.py", FIRST_TESTS);
    let (_, v) = finish(skill.path(), &repo, state.path());
    assert_eq!(signal(&v)["flag"], "progress", "{v}");
    // A failing test that covers nothing new: its error comes back.
    repo.write(
        "tests/test_wrong.py",
        "from shipping.rates import quote\n\ndef test_wrong():\n    assert quote(2, 'local') == 1\n",
    );
    for attempt in 1..=2 {
        let (code, v) = finish(skill.path(), &repo, state.path());
        assert_eq!(code, 1, "{v}");
        assert_eq!(signal(&v)["flag"], "refine", "{v}");
        assert_eq!(signal(&v)["refinements"], attempt, "{v}");
        let text = v["followup"].as_str().unwrap();
        assert!(text.contains("ran no new line"), "{text}");
        assert!(text.contains("assert 560 == 1"), "{text}");
    }
    let (code, v) = finish(skill.path(), &repo, state.path());
    assert_eq!(code, 0, "{v}");
    let m = signal(&v);
    assert_eq!(
        (m["flag"].as_str(), m["seed_flag"].as_i64()),
        (Some("limit_reached"), Some(-1)),
        "{v}"
    );
    assert!(
        m["summary"]
            .as_str()
            .unwrap()
            .contains("the refinement limit (2) was reached"),
        "{v}"
    );
    // The session is over: later finishes are accepted as they are.
    let (code, _) = finish(skill.path(), &repo, state.path());
    assert_eq!(code, 0);
}

#[test]
fn tests_that_crash_on_import_come_back_with_their_error() {
    let python = python();
    let skill = skill(&python, 5);
    let repo = repo();
    let state = tempfile::tempdir().unwrap();
    repo.write("tests/test_broken.py", "import shipping.nowhere\n");
    let (code, v) = finish(skill.path(), &repo, state.path());
    assert_eq!(code, 1, "{v}");
    assert_eq!(signal(&v)["flag"], "refine", "{v}");
    let text = v["followup"].as_str().unwrap();
    assert!(
        text.contains("No module named 'shipping.nowhere'"),
        "{text}"
    );
}

#[test]
fn a_python_without_coverage_is_named_with_how_to_install_it() {
    let bare = python_venv("no-coverage", None);
    let skill = skill(&bare, 5);
    let repo = repo();
    let state = tempfile::tempdir().unwrap();
    repo.write("tests/test_first.py", FIRST_TESTS);
    let (error, v) = failing_finish(skill.path(), &repo, state.path());
    assert!(
        error.contains("coverage.py is not installed") && error.contains("-m pip install coverage"),
        "{v}"
    );
}

#[test]
fn a_target_that_is_not_there_is_an_error_naming_it() {
    let python = python();
    let skill = skill(&python, 5);
    let manifest = std::fs::read_to_string(skill.path().join("critic.yaml"))
        .unwrap()
        .replace(TARGET, "shipping/rates.py::nope");
    std::fs::write(skill.path().join("critic.yaml"), manifest).unwrap();
    let repo = repo();
    let state = tempfile::tempdir().unwrap();
    let (error, v) = failing_finish(skill.path(), &repo, state.path());
    assert!(
        error.contains("no function \"nope\"; the file defines: quote"),
        "{v}"
    );
    // A target file that does not parse is named with the place (committed:
    // a patch that changes the target is refused before it is read).
    repo.write("shipping/rates.py", "def quote(:\n    pass\n");
    repo.git(&["commit", "-qam", "broken"]);
    let (error, v) = failing_finish(skill.path(), &repo, state.path());
    assert!(
        error.contains("shipping/rates.py: the file does not parse: line 1, column 11"),
        "{v}"
    );
}

#[test]
fn with_the_model_granted_dependencies_are_summarized_once_per_session() {
    use common::llm_stub::{completion, Stub};
    let stub = Stub::start(std::time::Duration::ZERO, |_, _| {
        (
            200,
            // An answer far longer than asked for: the state keeps it bounded.
            completion(&format!(
                "def surcharge(zone: str) -> int\nThe stub's summary: 300 cents abroad, else 0.{}",
                " and so on".repeat(1000)
            )),
        )
    });
    let python = python();
    let skill = skill(&python, 5);
    let manifest = std::fs::read_to_string(skill.path().join("critic.yaml"))
        .unwrap()
        .replace(
            "capabilities: [read-file, run]",
            "capabilities: [read-file, run, llm-complete]",
        );
    std::fs::write(skill.path().join("critic.yaml"), manifest).unwrap();
    let repo = repo();
    let state = tempfile::tempdir().unwrap();
    let judge = |repo: &Repo| {
        let mut cmd = check(
            skill.path(),
            repo.path(),
            &root().join("examples/demo-run/finish-3.jsonl"),
            state.path(),
        );
        cmd.env("STUB_KEY", "sk-test")
            .args(["--llm-api-key-env", "STUB_KEY", "--llm-model", "stub-model"])
            .args(["--llm-base-url", &stub.url]);
        json_out(&run(&mut cmd))
    };
    let v = judge(&repo);
    let task = v["followup"].as_str().unwrap();
    assert!(
        task.contains("The stub's summary: 300 cents abroad, else 0."),
        "{task}"
    );
    let seen = stub.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let asked = seen[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(
        asked.contains("return 300 if zone == \"international\" else 0"),
        "{asked}"
    );
    // The next finish reuses the summary from the state.
    repo.write("tests/test_first.py", FIRST_TESTS);
    let v = judge(&repo);
    assert_eq!(signal(&v)["summaries"], "model", "{v}");
    assert!(
        v["followup"]
            .as_str()
            .unwrap()
            .contains("The stub's summary"),
        "{v}"
    );
    assert_eq!(stub.seen.lock().unwrap().len(), 1);
    let stored = state
        .path()
        .join("covered-code-elimination/default/signal-coverage.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(stored).unwrap()).unwrap();
    let kept = doc["state"]["model_summaries"]["shipping.zones.surcharge"]
        .as_str()
        .unwrap();
    assert_eq!(kept.chars().count(), 800, "{kept}");
}

#[test]
fn a_test_printing_a_result_line_of_its_own_does_not_fake_coverage() {
    let python = python();
    let skill = skill(&python, 5);
    let repo = repo();
    let state = tempfile::tempdir().unwrap();
    let fake = r#"{"exit": 0, "statements": [10], "missing": []}"#;
    repo.write(
        "tests/test_first.py",
        &format!(
            "{FIRST_TESTS}\nimport atexit\n\nprint('\\nCRITIC-COVERAGE {fake}')\natexit.register(print, '\\nCRITIC-COVERAGE {fake}')\n"
        ),
    );
    let (code, v) = finish(skill.path(), &repo, state.path());
    assert_eq!(code, 1, "{v}");
    assert_eq!(signal(&v)["flag"], "progress", "{v}");
    assert_eq!(signal(&v)["covered"], 6, "{v}");
}

/// A test that runs none of the target.
const NO_TEST: &str = "def test_nothing():\n    pass\n";

#[test]
fn coverage_configuration_in_the_work_tree_is_ignored() {
    let python = python();
    let skill = skill(&python, 10);
    let repo = repo();
    let state = tempfile::tempdir().unwrap();
    repo.write("tests/test_nothing.py", NO_TEST);
    // Each file coverage.py would read, excluding every line: the tests
    // would then cover "all" of a function they never call.
    let forgeries = [
        (".coveragerc", "[report]\nexclude_lines =\n    .*\n"),
        ("setup.cfg", "[coverage:report]\nexclude_lines =\n    .*\n"),
        ("tox.ini", "[coverage:report]\nexclude_lines =\n    .*\n"),
        (
            "pyproject.toml",
            "[tool.coverage.report]\nexclude_also = [\".*\"]\n",
        ),
    ];
    for (file, text) in forgeries {
        repo.write(file, text);
        let (code, v) = finish(skill.path(), &repo, state.path());
        assert_eq!(code, 1, "{file}: {v}");
        let m = signal(&v);
        assert_eq!(m["flag"], "refine", "{file}: {v}");
        assert_eq!(
            (m["covered"].as_u64(), m["statements"].as_u64()),
            (Some(0), Some(28)),
            "{file}: {v}"
        );
        std::fs::remove_file(repo.path().join(file)).unwrap();
    }
}

/// `shipping/rates.py` with `# pragma: no cover` on lines 11, 17, 24 and
/// 38, which takes all that the local tests do not run out of measurement.
fn rates_with_pragmas() -> String {
    let base = std::fs::read_to_string(root().join("examples/elimination-repo/shipping/rates.py"))
        .unwrap();
    let marked: Vec<String> = base
        .lines()
        .enumerate()
        .map(|(i, line)| match i + 1 {
            11 | 17 | 24 | 38 => format!("{line}  # pragma: no cover"),
            _ => line.to_string(),
        })
        .collect();
    marked.join("\n") + "\n"
}

#[test]
fn a_changed_target_file_is_refused_with_the_reason() {
    let python = python();
    let skill = skill(&python, 5);
    let repo = repo();
    let state = tempfile::tempdir().unwrap();
    repo.write("tests/test_first.py", FIRST_TESTS);
    // A target rewritten so that the local tests run all of it.
    repo.write(
        "shipping/rates.py",
        "def quote(weight, zone, express=False, coupon=None):\n    return (500 + weight * 30) * (2 if express else 1)\n",
    );
    let (code, v) = finish(skill.path(), &repo, state.path());
    assert_eq!((code, &signal(&v)["flag"]), (1, &"refused".into()), "{v}");
    let text = v["followup"].as_str().unwrap();
    assert!(
        text.contains("Your patch changes `shipping/rates.py`, the file that holds `quote`")
            && text.contains("`git checkout -- shipping/rates.py`"),
        "{text}"
    );
    assert!(!text.contains("pragma"), "{text}");
    repo.git(&["checkout", "--", "shipping/rates.py"]);

    // The lines they do not run excluded from measurement.
    repo.write("shipping/rates.py", &rates_with_pragmas());
    let (code, v) = finish(skill.path(), &repo, state.path());
    assert_eq!((code, &signal(&v)["flag"]), (1, &"refused".into()), "{v}");
    assert_eq!(
        signal(&v)["pragmas"],
        serde_json::json!([11, 17, 24, 38]),
        "{v}"
    );
    let text = v["followup"].as_str().unwrap();
    assert!(
        text.contains("you added on lines 11, 17, 24, 38\nwould take them out of measurement"),
        "{text}"
    );
}

#[test]
fn tests_cannot_take_lines_out_of_measurement_or_stand_in_for_coverage() {
    let python = python();
    let skill = skill(&python, 10);
    let repo = repo();
    let state = tempfile::tempdir().unwrap();
    // A test that excludes every line through coverage.py's own API.
    repo.write(
        "tests/test_nothing.py",
        &format!("import coverage\n\ncoverage.Coverage.current().exclude('.*')\n\n{NO_TEST}"),
    );
    let (error, v) = failing_finish(skill.path(), &repo, state.path());
    assert!(
        error.contains("shipping/rates.py: coverage.py's statements changed while the tests ran"),
        "{v}"
    );
    // A `coverage` module of the work tree's, which would report anything.
    repo.write("tests/test_nothing.py", NO_TEST);
    repo.write(
        "coverage.py",
        "class Coverage:\n    def __init__(self, *a, **k): pass\n    def start(self): pass\n    \
         def stop(self): pass\n    def clear_exclude(self): pass\n    def exclude(self, regex): pass\n    \
         def analysis2(self, target): return (target, [12], [], [], '')\n",
    );
    let (code, v) = finish(skill.path(), &repo, state.path());
    assert_eq!(code, 1, "{v}");
    assert_eq!(signal(&v)["flag"], "refine", "{v}");
    assert_eq!(signal(&v)["covered"], 0, "{v}");
}

/// coverage.py's statements of every module given, as the skill's driver
/// measures them: no configuration, only the default pragma excluded.
const STATEMENTS_OF: &str = r##"
import json, sys, coverage

cov = coverage.Coverage(data_file=None, config_file=False, branch=False)
cov.clear_exclude()
cov.exclude(r"#\s*(pragma|PRAGMA)[:\s]?\s*(no|NO)\s*(cover|COVER)")
out = {}
for path in sys.argv[1:]:
    try:
        out[path] = cov.analysis2(path)[1]
    except Exception:
        pass
print(json.dumps(out))
"##;

/// The bounds the detector checks coverage.py's statements against
/// (`critic_sdk::python::statements`) hold for honest code: on every
/// function of these modules of the Python at hand, coverage.py counts each
/// required statement and none outside the function's statements.
#[test]
fn coverage_counts_every_required_statement_and_none_outside_on_the_standard_library() {
    use critic_sdk::python::{statements, EliminateError};
    let python = python();
    let out = std::process::Command::new(&python)
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['stdlib'])",
        ])
        .output()
        .unwrap();
    let stdlib = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    // Modules with loops that end only in a `break` or a `return`, `finally`
    // clauses, nested definitions and a branch CPython folds (textwrap).
    let modules = [
        "shlex",
        "textwrap",
        "tokenize",
        "contextlib",
        "functools",
        "difflib",
        "subprocess",
        "tarfile",
    ]
    .map(|m| stdlib.join(format!("{m}.py")));
    let out = std::process::Command::new(&python)
        .args(["-c", STATEMENTS_OF])
        .args(&modules)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let measured: std::collections::BTreeMap<String, Vec<usize>> =
        serde_json::from_slice(&out.stdout).unwrap();
    let (mut functions, mut wrong) = (0, Vec::new());
    for (path, lines) in &measured {
        let Ok(source) = std::fs::read_to_string(path) else {
            continue;
        };
        // The error for a function that is not there lists those that are.
        let Err(EliminateError::NotFound { available, .. }) = statements(&source, "") else {
            continue;
        };
        for name in available {
            let bounds = statements(&source, &name).unwrap();
            let counted: Vec<usize> = lines
                .iter()
                .copied()
                .filter(|l| bounds.body.contains(l))
                .collect();
            let uncounted = bounds.required.iter().filter(|l| !counted.contains(l));
            let outside = counted
                .iter()
                .filter(|l| !bounds.lines.contains(l) && !bounds.nested.contains(l));
            for (what, line) in uncounted
                .map(|l| ("required, not counted", l))
                .chain(outside.map(|l| ("counted, not a statement", l)))
            {
                wrong.push(format!("{path}:{line} ({name}): {what}"));
            }
            functions += 1;
        }
    }
    assert!(functions > 300, "only {functions} functions checked");
    assert!(wrong.is_empty(), "{wrong:#?}");
}

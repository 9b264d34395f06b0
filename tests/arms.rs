//! The paper's baseline arms as skills, end to end: the real `critic`
//! binary, each shipped skill's component and manifest, real git
//! repositories holding the demo `intervals` package (touching intervals
//! such as (1, 3), (3, 5) are not merged), and real pytest runs in scratch
//! copies. Each test checks the verdict's `arm` and, where tests ran, `f2p`.

mod common;

use common::*;
use serde_json::{json, Value};
use std::path::PathBuf;

const BUGGY_LINE: &str = "if merged and start < merged[-1][1]:";
const FIXED_LINE: &str = "if merged and start <= merged[-1][1]:";
/// A "fix" that leaves touching intervals apart.
const WRONG_LINE: &str = "if merged and start < merged[-1][1] - 1:";

/// A pytest test that fails on the bug.
const TOUCHING: &str = "from intervals import merge\n\n\n\
def test_touching_intervals_merge():\n    assert merge([(1, 3), (3, 5)]) == [(1, 5)]\n";

/// A pytest test that passes on the buggy code: it never touches the bug.
const DISJOINT: &str = "from intervals import merge\n\n\n\
def test_disjoint_intervals_stay_apart():\n    assert merge([(1, 2), (4, 5)]) == [(1, 2), (4, 5)]\n";

/// Python with pytest, for every run of these tests.
fn python() -> PathBuf {
    python_venv("arms", Some(&root().join("tests/arms/requirements.lock")))
}

/// A copy of the shipped skill `name` whose manifest has each `(from, to)`
/// replaced and `python3` pointed at [`python`].
fn arm_skill(name: &str, edits: &[(&str, &str)]) -> tempfile::TempDir {
    let shipped = skill(name);
    let dir = tempfile::tempdir().unwrap();
    let wasm = format!("{}.wasm", name.replace('-', "_"));
    std::fs::copy(shipped.join(&wasm), dir.path().join(&wasm)).unwrap();
    let mut manifest = std::fs::read_to_string(shipped.join("critic.yaml")).unwrap();
    for (from, to) in edits {
        assert!(manifest.contains(from), "{from:?} not in {name}'s manifest");
        manifest = manifest.replace(from, to);
    }
    let manifest = manifest.replace("[python3, ", &format!("[{}, ", python().display()));
    std::fs::write(dir.path().join("critic.yaml"), manifest).unwrap();
    dir
}

/// One arm on a fresh copy of the demo repository.
struct Arm {
    skill: tempfile::TempDir,
    repo: Repo,
    state: tempfile::TempDir,
}

impl Arm {
    fn new(name: &str, edits: &[(&str, &str)]) -> Arm {
        Arm {
            skill: arm_skill(name, edits),
            repo: Repo::demo(),
            state: tempfile::tempdir().unwrap(),
        }
    }

    /// The agent's finish in `session`: the exit code and the verdict.
    fn finish(&self, session: &str) -> (i32, Value) {
        self.finish_with(session, &[])
    }

    /// [`Arm::finish`] with more flags for `critic check`.
    fn finish_with(&self, session: &str, flags: &[&str]) -> (i32, Value) {
        let out = run(check(
            self.skill.path(),
            self.repo.path(),
            &demo_events(1),
            self.state.path(),
        )
        .args(["--session", session])
        .args(flags));
        let code = out.status.code().unwrap();
        assert!(code == 0 || code == 1, "exit {code}: {}", stderr(&out));
        let v = json_out(&out);
        assert_schema("verdict.schema.json", &v);
        (code, v)
    }

    /// Back to the base commit, untracked files gone.
    fn reset(&self) {
        self.repo.git(&["checkout", "-q", "--", "."]);
        self.repo.git(&["clean", "-q", "-f", "-d", "-e", ".critic"]);
    }

    fn edit_source(&self, to: &str) {
        let path = self.repo.path().join("intervals/merge.py");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(BUGGY_LINE));
        std::fs::write(path, text.replacen(BUGGY_LINE, to, 1)).unwrap();
    }

    fn fix(&self) {
        self.edit_source(FIXED_LINE);
    }
}

fn meta(v: &Value) -> &Value {
    &v["signals"][0]["metadata"]
}

fn followup(v: &Value) -> &str {
    v["followup"].as_str().unwrap_or_default()
}

fn f2p(fails_on_base: bool, passes_on_patch: Option<bool>) -> Value {
    json!({"fails_on_base": fails_on_base, "passes_on_patch": passes_on_patch})
}

#[test]
fn every_arm_validates() {
    for name in ["fix-only", "brt-only", "tdd", "cogen", "ralph"] {
        let out = run(critic().arg("validate").arg(skill(name)));
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(&format!("skill {name} 0.1.0 (1 signals)")),
            "{text}"
        );
        assert!(
            skill(name).join("templates/task.md.j2").is_file(),
            "{name} ships its task prompt"
        );
        assert!(skill(name).join("README.md").is_file(), "{name}");
    }
}

/// Every arm's task prompt renders with exactly its documented variables
/// (a missing one is an error) and keeps the issue in its
/// `<issue_description>` block, which other tools extract it from.
#[test]
fn every_task_prompt_renders_the_papers_prompt() {
    let issue = "Touching intervals (1, 3), (3, 5) are not merged.";
    let brt = json!({"files": {"tests/test_brt.py": TOUCHING},
                     "command": "python3 -m pytest tests/test_brt.py"});
    let arms = [
        ("fix-only", vec!["base_commit"], "**Phase 8. FINAL REVIEW**"),
        ("brt-only", vec![], "Only submit FAILING tests!"),
        (
            "tdd",
            vec!["base_commit", "brt"],
            "make the minimal changes to non-test files",
        ),
        (
            "cogen",
            vec![],
            "Verify F→P: revert your fix with `git stash`",
        ),
        (
            "ralph",
            vec![],
            "Verify F→P: revert your fix with `git stash`",
        ),
    ];
    for (name, extra, marker) in arms {
        let source = std::fs::read_to_string(skill(name).join("templates/task.md.j2")).unwrap();
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        env.add_template("task", &source).unwrap();
        let mut vars = json!({"workspace": "/ws/repo", "issue": issue});
        for key in &extra {
            vars[key] = match *key {
                "brt" => brt.clone(),
                _ => json!("0123abc"),
            };
        }
        let text = env.get_template("task").unwrap().render(&vars).unwrap();
        assert!(
            text.contains(&format!(
                "<issue_description>\n{issue}\n</issue_description>"
            )),
            "{name}: {text}"
        );
        assert!(text.contains(marker), "{name}: {text}");
        assert!(text.contains("uncommitted"), "{name}: {text}");
        assert!(!text.contains("conda"), "{name}: {text}");
        for key in extra {
            let mut fewer = vars.clone();
            fewer.as_object_mut().unwrap().remove(key);
            let e = env.get_template("task").unwrap().render(&fewer);
            assert!(e.is_err(), "{name} uses `{key}`");
        }
    }
    let tdd = std::fs::read_to_string(skill("tdd").join("templates/task.md.j2")).unwrap();
    let mut env = minijinja::Environment::new();
    env.add_template("task", &tdd).unwrap();
    let text = env
        .get_template("task")
        .unwrap()
        .render(json!({"workspace": "/ws", "issue": issue, "base_commit": "0123abc", "brt": brt}))
        .unwrap();
    assert!(
        text.contains(&format!("File `tests/test_brt.py`:\n```python\n{TOUCHING}")),
        "{text}"
    );
    assert!(text.contains("Run it with: `python3 -m pytest tests/test_brt.py`"));
    assert!(text.contains("compare your changes with the base commit 0123abc"));
    // The skill's own `brt` config (a command list with `{test_files}`) renders too.
    let mut from_config = brt.clone();
    from_config["command"] = json!(["python3", "-m", "pytest", "-q", "{test_files}"]);
    let text = env
        .get_template("task")
        .unwrap()
        .render(json!({"workspace": "/ws", "issue": issue, "base_commit": "0123abc", "brt": from_config}))
        .unwrap();
    assert!(
        text.contains("Run it with: `python3 -m pytest -q tests/test_brt.py`"),
        "{text}"
    );
    assert_eq!(
        std::fs::read(skill("ralph").join("templates/task.md.j2")).unwrap(),
        std::fs::read(skill("cogen").join("templates/task.md.j2")).unwrap(),
        "Ralph starts from the vanilla cogeneration prompt"
    );
}

#[test]
fn fix_only_accepts_a_fix_and_rejects_an_empty_patch() {
    let arm = Arm::new("fix-only", &[]);
    let (code, v) = arm.finish("s");
    assert_eq!(code, 1);
    assert!(followup(&v).contains("Your patch is empty"), "{v:#}");
    assert_eq!(meta(&v)["arm"], "fix-only");

    arm.fix();
    arm.repo.write("reproduction.py", "print('checked')\n");
    let (code, v) = arm.finish("s");
    assert_eq!(code, 0, "{v:#}");
    let m = meta(&v);
    assert_eq!(m["arm"], "fix-only");
    assert!(m.get("f2p").is_none(), "fix-only runs no test: {m:#}");
    assert_eq!(m["changes"]["source_files"], json!(["intervals/merge.py"]));
    assert_eq!(m["changes"]["test_files"], json!(["reproduction.py"]));
    assert_eq!(
        (
            m["changes"]["added"].as_u64(),
            m["changes"]["removed"].as_u64()
        ),
        (Some(2), Some(1))
    );
}

#[test]
fn fix_only_sends_an_empty_patch_back_only_max_iterations_times() {
    let arm = Arm::new("fix-only", &[("max_iterations: 3", "max_iterations: 1")]);
    assert_eq!(arm.finish("s").0, 1);
    let (code, v) = arm.finish("s");
    assert_eq!((code, &v["budget_exhausted"]), (0, &json!(true)), "{v:#}");
}

#[test]
fn brt_only_accepts_a_test_that_fails_on_the_base() {
    let arm = Arm::new("brt-only", &[]);
    arm.repo.write("tests/test_touching.py", TOUCHING);
    let (code, v) = arm.finish("s");
    assert_eq!(code, 0, "{v:#}");
    let m = meta(&v);
    assert_eq!(m["arm"], "brt-only");
    assert_eq!(m["f2p"], f2p(true, None));
    assert_eq!(m["base"]["outcome"], "bug_detected", "{m:#}");
    assert_eq!(m["test_files"], json!(["tests/test_touching.py"]));
    // The work tree still holds the buggy code: the run was in a scratch copy.
    let text = std::fs::read_to_string(arm.repo.path().join("intervals/merge.py")).unwrap();
    assert!(text.contains(BUGGY_LINE));
}

#[test]
fn brt_only_rejects_source_edits_passing_tests_and_crashing_tests() {
    let arm = Arm::new("brt-only", &[]);
    let attempt = |session: &str, setup: &dyn Fn(&Arm)| -> Value {
        arm.reset();
        setup(&arm);
        let (code, v) = arm.finish(session);
        assert_eq!(code, 1, "{session}: {v:#}");
        assert_eq!(meta(&v)["arm"], "brt-only");
        v
    };

    let v = attempt("source", &|a| {
        a.repo.write("tests/test_touching.py", TOUCHING);
        a.fix();
    });
    assert!(
        followup(&v).contains("- `intervals/merge.py`"),
        "{}",
        followup(&v)
    );
    assert!(!followup(&v).contains("- `tests/test_touching.py`"));
    assert!(meta(&v)["f2p"].is_null(), "nothing ran");

    let v = attempt("passes", &|a| {
        a.repo.write("tests/test_disjoint.py", DISJOINT)
    });
    let f = followup(&v);
    assert!(
        f.contains("exited 0") && f.contains("does not detect the bug"),
        "{f}"
    );
    assert!(f.contains("1 passed"), "the output's tail: {f}");
    assert_eq!(meta(&v)["f2p"], f2p(false, None));
    assert_eq!(meta(&v)["base"]["outcome"], "pass");

    let v = attempt("import", &|a| {
        a.repo.write(
            "tests/test_import.py",
            "from intervals import no_such_function\n\n\ndef test_x():\n    assert no_such_function()\n",
        )
    });
    let f = followup(&v);
    assert!(f.contains("crashed before checking anything"), "{f}");
    assert!(f.contains("ImportError"), "the output's tail: {f}");
    assert_eq!(meta(&v)["base"]["outcome"], "crash");
    assert_eq!(meta(&v)["f2p"], f2p(false, None));

    let v = attempt("name", &|a| {
        a.repo.write(
            "tests/test_typo.py",
            &TOUCHING.replace("assert merge(", "assert mrege("),
        )
    });
    let f = followup(&v);
    assert!(f.contains("crashed before checking anything"), "{f}");
    assert!(f.contains("NameError: name 'mrege' is not defined"), "{f}");

    let v = attempt("none", &|_| {});
    assert!(followup(&v).contains("Your patch has no test."), "{v:#}");
}

/// A tdd skill whose BRT is `tests/test_brt.py` holding [`TOUCHING`].
fn tdd(gate: bool) -> Arm {
    let brt = format!(
        "brt:\n        files: {{tests/test_brt.py: {}}}\n        \
         command: [python3, -m, pytest, -rA, -p, \"no:cacheprovider\", \"{{test_files}}\"]\n      \
         gate: {gate}",
        serde_json::to_string(TOUCHING).unwrap()
    );
    Arm::new("tdd", &[("gate: false", &brt)])
}

#[test]
fn tdd_reports_the_injected_test_without_gating_by_default() {
    let arm = tdd(false);
    // The agent has not fixed anything yet: the BRT fails on both sides.
    let (code, v) = arm.finish("s");
    assert_eq!(code, 0, "{v:#}");
    let m = meta(&v);
    assert_eq!(m["arm"], "tdd");
    assert_eq!(m["gate"], false);
    assert_eq!(m["f2p"], f2p(true, Some(false)), "{m:#}");
    assert_eq!(m["patch"]["outcome"], "bug_detected");

    // A copy of the BRT the agent weakened does not count: the given
    // content is written over it.
    arm.repo.write("tests/test_brt.py", DISJOINT);
    let (_, v) = arm.finish("s");
    assert_eq!(meta(&v)["f2p"], f2p(true, Some(false)), "{v:#}");
    assert_eq!(meta(&v)["patch_touches_brt"], json!(["tests/test_brt.py"]));

    arm.reset();
    arm.fix();
    let (code, v) = arm.finish("s");
    assert_eq!(code, 0);
    assert_eq!(meta(&v)["f2p"], f2p(true, Some(true)), "{v:#}");
    assert_eq!(meta(&v)["patch"]["outcome"], "pass");
}

#[test]
fn tdd_gates_on_the_injected_test_when_configured() {
    let arm = tdd(true);
    arm.edit_source(WRONG_LINE);
    let (code, v) = arm.finish("s");
    assert_eq!(code, 1, "{v:#}");
    let f = followup(&v);
    assert!(f.contains("does not pass with your changes"), "{f}");
    assert!(
        f.contains("assert [(1, 3), (3, 5)] == [(1, 5)]"),
        "the output's tail: {f}"
    );
    assert_eq!(meta(&v)["f2p"], f2p(true, Some(false)));

    arm.reset();
    arm.fix();
    let (code, v) = arm.finish("s");
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(meta(&v)["f2p"], f2p(true, Some(true)));
}

#[test]
fn tdd_without_a_brt_is_an_error_naming_the_field() {
    let arm = Arm::new("tdd", &[]);
    let (code, v) = arm.finish("s");
    assert_eq!(code, 1, "fail_closed");
    let e = v["signals"][0]["error"].as_str().unwrap_or_default();
    assert!(e.contains("config.brt: missing"), "{v:#}");
}

#[test]
fn cogen_accepts_a_test_that_goes_from_failing_to_passing_with_the_fix() {
    let arm = Arm::new("cogen", &[]);
    arm.fix();
    arm.repo.write("tests/test_touching.py", TOUCHING);
    let (code, v) = arm.finish("s");
    assert_eq!(code, 0, "{v:#}");
    let m = meta(&v);
    assert_eq!(m["arm"], "cogen");
    assert_eq!(m["f2p"], f2p(true, Some(true)));
    assert_eq!(
        (
            m["base"]["outcome"].as_str(),
            m["patch"]["outcome"].as_str()
        ),
        (Some("bug_detected"), Some("pass"))
    );
}

#[test]
fn a_leftover_reproduction_script_is_not_handed_to_pytest() {
    // The prompts have the agent write reproduction.py first; one left behind
    // exits at import, which would stop pytest's whole run.
    let arm = Arm::new("cogen", &[]);
    arm.fix();
    arm.repo.write("tests/test_touching.py", TOUCHING);
    arm.repo.write(
        "reproduction.py",
        "import sys\nfrom intervals import merge\nsys.exit(1 if merge([(1, 3), (3, 5)]) != [(1, 5)] else 0)\n",
    );
    let (code, v) = arm.finish("s");
    assert_eq!(code, 0, "{v:#}");
    let m = meta(&v);
    assert_eq!(m["f2p"], f2p(true, Some(true)), "{m:#}");
    assert_eq!(m["test_files"], json!(["tests/test_touching.py"]), "{m:#}");
}

#[test]
fn cogen_names_the_half_that_breaks_fail_to_pass() {
    let arm = Arm::new("cogen", &[]);
    // A test that passes on the base.
    arm.fix();
    arm.repo.write("tests/test_disjoint.py", DISJOINT);
    let (code, v) = arm.finish("s");
    assert_eq!(code, 1);
    let f = followup(&v);
    assert!(
        f.contains("Your test does not fail without your fix"),
        "{f}"
    );
    assert!(!f.contains("does not pass with your fix"), "{f}");
    assert!(f.contains("1 passed"), "the output's tail: {f}");
    assert_eq!(meta(&v)["f2p"], f2p(false, Some(true)));

    // A fix that does not make the test pass.
    arm.reset();
    arm.edit_source(WRONG_LINE);
    arm.repo.write("tests/test_touching.py", TOUCHING);
    let (code, v) = arm.finish("s");
    assert_eq!(code, 1);
    let f = followup(&v);
    assert!(f.contains("Your test does not pass with your fix"), "{f}");
    assert!(!f.contains("does not fail without your fix"), "{f}");
    assert!(
        f.contains("assert [(1, 3), (3, 5)] == [(1, 5)]"),
        "the output's tail: {f}"
    );
    assert_eq!(meta(&v)["f2p"], f2p(true, Some(false)));

    // With no rejection to spend (the paper's single attempt), the same
    // finish is accepted and still recorded.
    let (code, v) = arm.finish_with("k1", &["--max-rejections", "0"]);
    assert_eq!((code, &v["budget_exhausted"]), (0, &json!(true)), "{v:#}");
    assert_eq!(meta(&v)["f2p"], f2p(true, Some(false)));

    // No test, then no fix: rejected before anything runs.
    arm.reset();
    arm.fix();
    let (_, v) = arm.finish("no-test");
    assert_eq!(meta(&v)["problem"], "no_test", "{v:#}");
    assert!(meta(&v)["f2p"].is_null());
    arm.reset();
    arm.repo.write("tests/test_touching.py", TOUCHING);
    let (_, v) = arm.finish("no-fix");
    assert_eq!(meta(&v)["problem"], "no_fix", "{v:#}");
    assert!(followup(&v).contains("holds a test but no fix"));
}

#[test]
fn ralph_sends_the_same_followup_k_times_then_the_budget_ends_it() {
    let arm = Arm::new("ralph", &[]);
    arm.fix();
    arm.repo.write("tests/test_touching.py", TOUCHING);
    let mut followups = Vec::new();
    for k in 1..=5 {
        let (code, v) = arm.finish("s");
        assert_eq!(code, 1, "finish {k}: {v:#}");
        assert_eq!(meta(&v)["arm"], "ralph");
        assert_eq!(meta(&v)["iteration"], k);
        assert_eq!(v["budget_exhausted"], false);
        followups.push(followup(&v).to_string());
    }
    assert!(followups[0].contains("Review your work and improve it."));
    assert!(
        followups.iter().all(|f| f == &followups[0]),
        "{followups:#?}"
    );
    let (code, v) = arm.finish("s");
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["budget_exhausted"], true);
    assert_eq!(v["max_iterations"], 5);
    assert_eq!(meta(&v)["arm"], "ralph");
    // A new session starts over.
    assert_eq!(arm.finish("other").0, 1);
}

#[test]
fn ralph_through_a_stop_hook_blocks_k_times() {
    let arm = Arm::new("ralph", &[("max_iterations: 5", "max_iterations: 2")]);
    let transcript = arm.repo.path().join(".transcript.jsonl");
    let lines = [
        json!({"type": "user", "sessionId": "h", "message": {"role": "user", "content": "fix merge"}}),
        json!({"type": "assistant", "sessionId": "h", "message": {"role": "assistant",
               "content": [{"type": "text", "text": "Done."}]}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&transcript, text).unwrap();
    arm.repo.git(&["add", ".transcript.jsonl"]);
    arm.repo.git(&["commit", "-q", "-m", "transcript"]);
    arm.fix();
    let input = json!({"session_id": "h", "cwd": arm.repo.path(), "transcript_path": transcript,
                       "hook_event_name": "Stop", "stop_hook_active": false})
    .to_string();
    let hook = || -> Value {
        use std::io::Write;
        let mut child = critic()
            .args(["hook", "claude-code", "--skill"])
            .arg(arm.skill.path())
            .arg("--state-dir")
            .arg(arm.state.path())
            .current_dir(arm.repo.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
    };
    for _ in 0..2 {
        let answer = hook();
        assert_eq!(answer["decision"], "block", "{answer:#}");
        assert!(answer["reason"]
            .as_str()
            .unwrap()
            .contains("Review your work and improve it."));
    }
    assert_ne!(hook()["decision"], "block");
}

/// The shipped manifests' `test_patterns` cover reproduction scripts and
/// framework tests alike.
#[test]
fn the_arms_count_scripts_and_framework_tests_as_tests() {
    let arm = Arm::new("fix-only", &[]);
    for path in [
        "reproduction.py",
        "reproduce_merge.py",
        "tests/test_a.py",
        "tests/unit/helpers.py",
        "intervals/test_b.py",
    ] {
        arm.repo.write(path, "x = 1\n");
    }
    arm.fix();
    let (_, v) = arm.finish("s");
    let tests: Vec<&str> = meta(&v)["changes"]["test_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(tests.len(), 5, "{tests:?}");
    assert_eq!(
        meta(&v)["changes"]["source_files"],
        json!(["intervals/merge.py"])
    );
}

/// `python3 -m <runner>` without the runner installed exits 1, like a
/// failing test: it must be an error of the setup, not a reproduction.
#[test]
fn a_missing_test_runner_is_an_error_not_a_reproduction() {
    let arm = Arm::new(
        "brt-only",
        &[("-m, pytest, -rA", "-m, no_such_test_runner, -rA")],
    );
    arm.repo.write("tests/test_touching.py", TOUCHING);
    let (code, v) = arm.finish("s");
    assert_eq!(code, 1, "fail_closed: {v:#}");
    let e = v["signals"][0]["error"].as_str().unwrap_or_default();
    assert!(
        e.contains("the test runner did not start (No module named no_such_test_runner)"),
        "{v:#}"
    );
    assert!(e.contains("config.test_command"), "{e}");
}

/// The verdict schema documents `arm` and `f2p` and holds verdicts to them.
#[test]
fn the_verdict_schema_describes_arm_and_f2p() {
    let arm = Arm::new("brt-only", &[]);
    arm.repo.write("tests/test_touching.py", TOUCHING);
    let (_, v) = arm.finish("s");
    let text = std::fs::read_to_string(root().join("schemas/verdict.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    let documented = &schema["$defs"]["signal"]["properties"]["metadata"]["properties"];
    for key in ["arm", "f2p", "vs_previous", "outcome"] {
        assert!(documented[key]["description"].is_string(), "{key}");
    }
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(validator.is_valid(&v));
    let mut bad = v.clone();
    bad["signals"][0]["metadata"]["f2p"] = json!({"fails_on_base": "yes", "passes_on_patch": null});
    assert!(!validator.is_valid(&bad));
    bad["signals"][0]["metadata"]["f2p"] = json!({"fails_on_base": true});
    assert!(
        !validator.is_valid(&bad),
        "passes_on_patch is required, null or not"
    );
}

/// Binary files, deleted tests and a flood of output are part of a patch
/// like any other: noted, left out of runs, cut to their tail.
#[test]
fn brt_only_takes_binary_files_deleted_tests_and_huge_output() {
    let arm = Arm::new("brt-only", &[]);
    std::fs::remove_file(arm.repo.path().join("tests/test_merge.py")).unwrap();
    arm.repo.write("tests/data.bin", "\0\u{1}\u{2}binary\0");
    arm.repo.write("tests/test_touching.py", TOUCHING);
    let (code, v) = arm.finish("s");
    assert_eq!(code, 0, "{v:#}");
    let m = meta(&v);
    assert_eq!(m["f2p"], f2p(true, None));
    assert!(
        m["notes"][0].as_str().unwrap().contains("tests/data.bin"),
        "{m:#}"
    );
    let files = &m["changes"]["files"];
    assert!(
        files
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["path"] == "tests/test_merge.py" && f["status"] == "deleted"),
        "{files:#}"
    );

    arm.reset();
    arm.repo.write(
        "tests/test_loud.py",
        "def test_loud():\n    print('x' * 20_000_000)\n    print('the end')\n",
    );
    let (code, v) = arm.finish("loud");
    assert_eq!(code, 1);
    let f = followup(&v);
    assert!(f.contains("[...]") && f.contains("1 passed"), "{f}");
    assert!(
        f.len() < 4_000,
        "the output is cut to its tail: {} bytes",
        f.len()
    );
}

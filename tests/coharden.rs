//! The CoHarden skill end to end: the real `critic` binary, the shipped
//! `coharden.wasm`, real git repositories and real Python runs of the
//! reproduction test in scratch copies. Model mutants come from a local stub
//! server written for the tests.

mod common;

use common::llm_stub::{completion, Stub};
use common::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// A reproduction that checks the reported input only: it detects the bug
/// but lets wrong fixes through.
const LAX: &str = "import sys\nfrom intervals import merge\n\n\
got = merge([(1, 3), (3, 5)])\nprint('merge([(1, 3), (3, 5)]) =', got)\n\
sys.exit(1 if got != [(1, 5)] else 0)\n";

/// A reproduction that checks touching, overlapping, nested, disjoint and
/// chained inputs with other values than the report's.
const STRONG: &str = "import sys\nfrom intervals import merge\n\n\
cases = [\n\
    ([(1, 3), (3, 5)], [(1, 5)]),\n\
    ([(7, 9), (9, 12)], [(7, 12)]),\n\
    ([(3, 5), (1, 3)], [(1, 5)]),\n\
    ([(1, 4), (2, 6)], [(1, 6)]),\n\
    ([(1, 2), (4, 5)], [(1, 2), (4, 5)]),\n\
    ([(0, 10), (2, 3)], [(0, 10)]),\n\
    ([(1, 2), (4, 5), (5, 7)], [(1, 2), (4, 7)]),\n\
]\n\
bad = [(given, merge(given), want) for given, want in cases if merge(given) != want]\n\
for given, got, want in bad:\n    print(f'merge({given}) = {got}, expected {want}')\n\
sys.exit(1 if bad else 0)\n";

const BUGGY_LINE: &str = "if merged and start < merged[-1][1]:";
const FIXED_LINE: &str = "if merged and start <= merged[-1][1]:";

/// One CoHarden session on a copy of the demo repository.
struct Session {
    repo: Repo,
    events: PathBuf,
    skill: tempfile::TempDir,
    state: tempfile::TempDir,
    id: String,
    env: Vec<(String, String)>,
    args: Vec<String>,
}

impl Session {
    /// A session whose signal config is the shipped one with `config` merged in.
    fn new(config: Value) -> Session {
        let mut merged = json!({
            "max_rounds": 5, "tau": 0.2, "test_file": "reproduction.py",
            "test_command": ["python3", "reproduction.py"], "bug_exit_code": "nonzero",
            "test_timeout_secs": 60, "mutation": {"source": "deterministic"},
        });
        for (k, v) in config.as_object().unwrap() {
            merged[k] = v.clone();
        }
        Session {
            repo: Repo::demo(),
            events: demo_events(1),
            skill: coharden_skill(&merged),
            state: tempfile::tempdir().unwrap(),
            id: "s1".into(),
            env: Vec::new(),
            args: Vec::new(),
        }
    }

    fn ws(&self) -> &Path {
        self.repo.path()
    }

    fn command(&self) -> std::process::Command {
        let mut cmd = check(
            self.skill.path(),
            self.ws(),
            &self.events,
            self.state.path(),
        );
        cmd.args(["--session", &self.id]).args(&self.args);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Call `critic check` (the agent's finish) and return the verdict.
    fn finish(&self) -> Value {
        let out = run(&mut self.command());
        let v = json_out(&out);
        assert_schema("verdict.schema.json", &v);
        v
    }

    /// [`Session::finish`], checking that the check left the workspace as
    /// it found it (feedback files aside).
    fn finish_untouched(&self, round: &str) -> Value {
        let before = workspace_files(self.ws());
        let v = self.finish();
        assert_same(
            &workspace_files(self.ws()),
            &before,
            &format!("{round} wrote to the workspace"),
        );
        v
    }

    /// The detector's stored state.
    fn state(&self) -> Value {
        let path = self
            .state
            .path()
            .join(format!("coharden/{}/signal-coharden.json", self.id));
        let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        assert_schema("coharden-state.schema.json", &doc["state"]);
        doc["state"].clone()
    }

    fn write_test(&self, text: &str) {
        self.repo.write("reproduction.py", text);
    }

    fn fix(&self) {
        self.edit_source(BUGGY_LINE, FIXED_LINE);
    }

    fn edit_source(&self, from: &str, to: &str) {
        let path = self.ws().join("intervals/merge.py");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{from:?} not in merge.py");
        std::fs::write(path, text.replacen(from, to, 1)).unwrap();
    }

    fn feedback(&self, name: &str) -> String {
        std::fs::read_to_string(self.ws().join(".critic/feedback/coharden").join(name)).unwrap()
    }
}

/// A skill directory using the shipped detector with `config`.
fn coharden_skill(config: &Value) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    // A skill carries its detectors: a copy of the shipped component.
    std::fs::copy(
        skill("coharden").join("coharden.wasm"),
        dir.path().join("coharden.wasm"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("critic.yaml"),
        format!(
            "name: coharden\nversion: 0.1.0\nthreshold: 1.0\nmax_iterations: 20\n\
             test_patterns: [reproduction.py]\n\
             capabilities: [read-file, run, run-matrix, llm-complete]\n\
             signals:\n  - {{name: coharden, type: hard_gate, detector: coharden.wasm, timeout: 5m, config: {config}}}\n",
        ),
    )
    .unwrap();
    dir
}

fn signal(v: &Value) -> &Value {
    &v["signals"][0]
}

fn meta(v: &Value) -> &Value {
    &v["signals"][0]["metadata"]
}

fn followup(v: &Value) -> String {
    v["followup"].as_str().unwrap_or_default().to_string()
}

/// Assert two snapshots are equal, naming the files that differ.
fn assert_same(a: &BTreeMap<String, Vec<u8>>, b: &BTreeMap<String, Vec<u8>>, what: &str) {
    let differ: Vec<&String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .collect();
    assert!(differ.is_empty(), "{what}: {differ:?}");
}

/// The workspace minus what the critic may write there: `.critic/`.
fn workspace_files(ws: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = snapshot(ws);
    files.retain(|p, _| !p.starts_with(".critic/"));
    files
}

#[test]
fn a_full_session_hardens_the_test_and_leaves_the_workspace_untouched() {
    let s = Session::new(json!({}));

    // Round 0: the lax reproduction alone.
    s.write_test(LAX);
    let v = s.finish_untouched("round 0");
    assert_eq!(v["accepted"], false);
    assert!(followup(&v).contains("Round 0 is done"), "{}", followup(&v));
    assert!(followup(&v).contains("Round 1"));
    let st = s.state();
    assert_eq!(
        (st["phase"].as_str(), st["round"].as_u64()),
        (Some("hardening"), Some(1))
    );
    assert_eq!(st["t0"]["reproduction.py"], LAX);

    // Round 1: the fix, with the test unchanged: mutants survive, go on.
    s.fix();
    let v = s.finish_untouched("round 1");
    assert_eq!(v["accepted"], false);
    let m = meta(&v);
    assert_eq!(m["decision"], "continue", "{m:#}");
    assert_eq!(m["test_changed"], false);
    let (total, alpha) = (
        m["total"].as_u64().unwrap(),
        m["matrix"]["alpha"].as_u64().unwrap(),
    );
    assert!(total >= 4 && alpha >= 1, "{m:#}");
    assert_eq!(m["matrix"]["beta"], 0, "same test on both sides: {m:#}");
    let f = followup(&v);
    assert!(
        f.contains(&format!(
            "Round 1: {alpha}/{total} wrong-fix mutants pass your test"
        )),
        "{f}"
    );
    assert!(f.contains("Top surviving mutant"), "{f}");
    assert!(f.contains("```diff\n--- a/intervals/merge.py"), "{f}");
    assert!(f.contains(".critic/feedback/coharden/latest.md"), "{f}");
    let feedback = s.feedback("latest.md");
    assert_eq!(feedback, s.feedback("round-1.md"));
    assert_eq!(
        feedback.matches("\n## m").count() as u64,
        alpha,
        "{feedback}"
    );
    assert!(feedback.contains("Hint: "), "{feedback}");
    assert!(s
        .repo
        .git(&["status", "--porcelain"])
        .lines()
        .all(|l| !l.contains(".critic")));
    let st = s.state();
    assert_eq!(st["round"], 2);
    assert_eq!(st["t_ref"]["reproduction.py"], LAX);
    assert_eq!(
        st["previous_survivors"].as_array().unwrap().len() as u64,
        alpha
    );
    assert!(st["previous_fix"].as_str().unwrap().contains(FIXED_LINE));

    // Round 2: a hardened test kills every mutant: clean round, accepted.
    s.write_test(STRONG);
    let v = s.finish_untouched("round 2");
    assert_eq!(v["accepted"], true, "{v:#}");
    let m = meta(&v);
    assert_eq!(m["decision"], "clean");
    assert_eq!(m["matrix"]["alpha"], 0, "{m:#}");
    assert_eq!(
        m["matrix"]["gamma"].as_u64().unwrap(),
        m["total"].as_u64().unwrap() - m["matrix"]["delta"].as_u64().unwrap()
    );
    assert!(m["summary"]
        .as_str()
        .unwrap()
        .starts_with("Round 2 is clean"));
    let st = s.state();
    assert_eq!(st["phase"], "done");
    let decisions: Vec<&str> = st["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["decision"].as_str().unwrap())
        .collect();
    assert_eq!(decisions, ["continue", "clean"]);

    // A later finish of the same session passes without running anything.
    let v = s.finish();
    assert_eq!(v["accepted"], true);
    assert!(meta(&v)["summary"]
        .as_str()
        .unwrap()
        .contains("already accepted"));
}

#[test]
fn round_0_rejects_source_edits_missing_tests_and_non_reproductions() {
    let mut s = Session::new(json!({}));
    let mut attempt = |name: &str, setup: &dyn Fn(&Session), expect: &str| {
        s.id = name.to_string();
        s.repo.git(&["checkout", "-q", "--", "."]);
        s.repo.git(&["clean", "-q", "-f", "-d", "-e", ".critic"]);
        setup(&s);
        let v = s.finish();
        assert_eq!(v["accepted"], false, "{name}: {v:#}");
        let f = followup(&v);
        assert!(f.contains(expect), "{name}: {f}");
        let st = s.state();
        assert_eq!(
            (st["phase"].as_str(), st["round"].as_u64()),
            (Some("lax_init"), Some(0)),
            "{name}"
        );
        assert_eq!(st["retries"], 1, "{name}");
        f
    };
    let f = attempt(
        "source-edit",
        &|s| {
            s.write_test(LAX);
            s.fix();
        },
        "also touch source files",
    );
    assert!(f.contains("- `intervals/merge.py`"), "{f}");
    attempt("no-test", &|_| {}, "there is no test");
    attempt(
        "syntax",
        &|s| s.write_test("import sys\nif x = 1:\n"),
        "is not valid Python (line 2",
    );
    attempt(
        "passes",
        &|s| s.write_test("import sys\nsys.exit(0)\n"),
        "exits 0 on the unfixed code",
    );
    let f = attempt(
        "import-error",
        &|s| s.write_test("from intervals import no_such_function\n"),
        "crashed before it could check anything on the unfixed code",
    );
    assert!(
        f.contains("ImportError: cannot import name 'no_such_function'"),
        "{f}"
    );
    assert!(
        f.contains("Traceback (most recent call last)"),
        "the output tail is quoted: {f}"
    );
    let f = attempt(
        "name-error",
        &|s| {
            s.write_test(
                "from intervals import merge\nassert mrege([(1, 3), (3, 5)]) == [(1, 5)]\n",
            )
        },
        "crashed before it could check anything",
    );
    assert!(f.contains("NameError: name 'mrege' is not defined"), "{f}");
}

#[test]
fn round_0_takes_a_failing_assert_and_any_nonzero_exit_unless_a_code_is_pinned() {
    // A bare `assert` failing on the bug is a reproduction (an uncaught AssertionError).
    for test in [
        "from intervals import merge\nassert merge([(1, 3), (3, 5)]) == [(1, 5)]\n",
        "import sys\nfrom intervals import merge\nsys.exit(3 if merge([(1, 3), (3, 5)]) != [(1, 5)] else 0)\n",
    ] {
        let s = Session::new(json!({}));
        s.write_test(test);
        let v = s.finish();
        assert!(followup(&v).contains("Round 0 is done"), "{test}: {v:#}");
        assert_eq!(meta(&v)["f2p"]["fails_on_base"], true);
        assert_eq!(s.state()["phase"], "hardening");
    }
    // An integer keeps the old, stricter rule.
    let s = Session::new(json!({"bug_exit_code": 1}));
    s.write_test("import sys\nsys.exit(3)\n");
    let v = s.finish();
    assert!(followup(&v).contains("exited with code 3"), "{v:#}");
    assert!(
        followup(&v).contains("the bug-present\nexit is code 1"),
        "{v:#}"
    );
    assert_eq!(meta(&v)["f2p"]["fails_on_base"], false);
}

#[test]
fn a_hanging_test_and_huge_output_get_clear_followups() {
    let mut s = Session::new(json!({"test_timeout_secs": 1, "output_tail_chars": 300}));
    s.write_test("import time\ntime.sleep(60)\n");
    let started = std::time::Instant::now();
    let v = s.finish();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the hang was cut short"
    );
    assert!(
        followup(&v).contains("did not finish within 1 s"),
        "{}",
        followup(&v)
    );

    s.id = "huge".into();
    s.write_test(
        "import sys\nsys.stdout.write('x' * 20_000_000)\nprint('\\nthe end')\nsys.exit(0)\n",
    );
    let v = s.finish();
    let f = followup(&v);
    assert!(f.contains("exits 0 on the unfixed code"), "{f}");
    assert!(f.contains("[...]") && f.contains("the end"), "{f}");
    assert!(
        f.len() < 4_000,
        "the output is cut to its tail: {} bytes",
        f.len()
    );
}

#[test]
fn a_missing_test_command_is_a_clear_error_and_fails_closed() {
    let s = Session::new(json!({"test_command": ["no-such-interpreter-7", "reproduction.py"]}));
    s.write_test(LAX);
    let v = s.finish();
    assert_eq!(v["accepted"], false);
    let sig = signal(&v);
    assert_eq!(sig["status"], "error");
    let e = sig["error"].as_str().unwrap();
    assert!(
        e.contains("cannot run the test command `no-such-interpreter-7 reproduction.py`"),
        "{e}"
    );
    assert!(e.contains("config.test_command"), "{e}");
}

#[test]
fn bad_config_names_the_field() {
    let s = Session::new(json!({"tau": 3}));
    s.write_test(LAX);
    let v = s.finish();
    assert!(
        signal(&v)["error"].as_str().unwrap().contains("config.tau"),
        "{v:#}"
    );
    let s = Session::new(json!({"templates": {"hardenin": "x"}}));
    s.write_test(LAX);
    let e = signal(&s.finish())["error"].as_str().unwrap().to_string();
    assert!(
        e.contains("config.templates.hardenin: no such template"),
        "{e}"
    );
}

/// A session that has passed Round 0 with `t0`.
fn after_round_0(config: Value, t0: &str) -> Session {
    let s = Session::new(config);
    s.write_test(t0);
    let v = s.finish();
    assert!(followup(&v).contains("Round 0 is done"), "{v:#}");
    s
}

#[test]
fn fail_to_pass_names_the_half_that_failed_and_the_round_stays() {
    let s = after_round_0(json!({}), LAX);
    // A test that no longer detects the bug without the fix.
    s.fix();
    s.write_test("import sys\nsys.exit(0)\n");
    let v = s.finish();
    let f = followup(&v);
    assert!(
        f.contains("the test does not fail on the unfixed code"),
        "{f}"
    );
    assert!(f.contains("exited 0"), "{f}");
    assert_eq!(s.state()["round"], 1);

    // A fix that does not make the test pass.
    s.repo.git(&["checkout", "-q", "--", "intervals/merge.py"]);
    s.edit_source(BUGGY_LINE, "if merged and start < merged[-1][1] - 1:");
    s.write_test(LAX);
    let v = s.finish();
    let f = followup(&v);
    assert!(f.contains("the test does not pass with your fix"), "{f}");
    assert!(
        f.contains("merge([(1, 3), (3, 5)]) = [(1, 3), (3, 5)]"),
        "output tail: {f}"
    );
    let st = s.state();
    assert_eq!(
        (st["round"].as_u64(), st["retries"].as_u64()),
        (Some(1), Some(2))
    );
    assert!(st["rounds"].as_array().unwrap().is_empty());

    // No test, and no fix.
    s.repo.git(&["checkout", "-q", "--", "intervals/merge.py"]);
    let v = s.finish();
    assert!(
        followup(&v).contains("the patch holds the test but no fix"),
        "{v:#}"
    );
    std::fs::remove_file(s.ws().join("reproduction.py")).unwrap();
    s.fix();
    let v = s.finish();
    let f = followup(&v);
    assert!(f.contains("no longer contains the test"), "{f}");
    assert!(f.contains(LAX), "the reference test is given back: {f}");
}

#[test]
fn a_looser_test_is_a_regression_and_t0_comes_back() {
    let s = after_round_0(json!({}), STRONG);
    s.fix();
    s.write_test(LAX);
    let v = s.finish();
    assert_eq!(v["accepted"], false);
    let m = meta(&v);
    assert_eq!(m["decision"], "regression", "{m:#}");
    let laxity = m["laxity"].as_f64().unwrap();
    assert!(laxity > 0.2, "{m:#}");
    assert_eq!(
        laxity,
        m["matrix"]["beta"].as_f64().unwrap() / m["total"].as_f64().unwrap()
    );
    let f = followup(&v);
    assert!(f.contains("your new test regressed"), "{f}");
    assert!(f.contains(STRONG), "t0's content is given: {f}");
    assert!(f.contains("Keep your fix"), "{f}");
    let st = s.state();
    assert_eq!(st["t_ref"], st["t0"]);
    assert_eq!(st["round"], 2);

    // Restoring t0 (the fix kept) is a round against t0 itself: unchanged test, so hardening goes on.
    s.write_test(STRONG);
    let v = s.finish();
    assert_eq!(meta(&v)["decision"], "continue", "{v:#}");
    assert_eq!(meta(&v)["matrix"]["beta"], 0);
}

#[test]
fn an_inconclusive_round_is_counted_and_skips_the_regression_check() {
    // No source file counts as Python, so no operator can mutate the fix.
    let s = after_round_0(json!({"python_suffixes": [".pyx"]}), LAX);
    s.fix();
    let v = s.finish();
    let m = meta(&v);
    assert_eq!(
        (m["inconclusive"].as_bool(), m["total"].as_u64()),
        (Some(true), Some(0)),
        "{m:#}"
    );
    assert_eq!(m["decision"], "continue");
    assert!(
        followup(&v).contains("No mutant could be evaluated this round"),
        "{}",
        followup(&v)
    );
    s.write_test(STRONG);
    let v = s.finish();
    assert_eq!(
        v["accepted"], true,
        "a changed test with no evidence against it is clean: {v:#}"
    );
    let st = s.state();
    assert_eq!(
        (
            st["inconclusive_count"].as_u64(),
            st["inconclusive_streak"].as_u64()
        ),
        (Some(2), Some(2))
    );
    assert!(st["rounds"][1]["laxity"].is_null());
}

#[test]
fn the_round_budget_ends_the_loop() {
    let s = after_round_0(json!({"max_rounds": 2}), LAX);
    s.fix();
    assert_eq!(meta(&s.finish())["decision"], "continue");
    let v = s.finish();
    assert_eq!(v["accepted"], true, "{v:#}");
    let m = meta(&v);
    assert_eq!(m["decision"], "budget_exhausted");
    assert!(
        m["summary"]
            .as_str()
            .unwrap()
            .contains("the round budget is spent"),
        "{m:#}"
    );
    assert_eq!(s.state()["phase"], "done");
}

#[test]
fn state_resets_on_a_new_session_or_a_new_base() {
    let mut s = after_round_0(json!({}), LAX);
    assert_eq!(s.state()["round"], 1);
    s.id = "other".into();
    let v = s.finish();
    assert!(
        followup(&v).contains("Round 0 is done"),
        "a new session starts at Round 0: {v:#}"
    );
    // A new base commit is a new instance, even in the same session.
    s.id = "s1".into();
    s.repo.git(&["add", "-A"]);
    s.repo.git(&["commit", "-q", "-m", "new base"]);
    s.write_test("import sys\nprint('changed')\nsys.exit(1)\n");
    let v = s.finish();
    assert!(followup(&v).contains("Round 0 is done"), "{v:#}");
    assert_eq!(
        s.state()["base"].as_str().unwrap(),
        s.repo.git(&["rev-parse", "HEAD"]).trim()
    );
}

#[test]
fn a_patch_that_does_not_apply_is_an_error_and_nothing_is_written() {
    let mut s = Session::new(json!({}));
    let patch = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        patch.path(),
        "diff --git a/intervals/merge.py b/intervals/merge.py\n--- a/intervals/merge.py\n\
         +++ b/intervals/merge.py\n@@ -1,1 +1,1 @@\n-no such line\n+other\n",
    )
    .unwrap();
    s.args = vec!["--patch".into(), patch.path().display().to_string()];
    let before = workspace_files(s.ws());
    let v = s.finish();
    assert_eq!(v["accepted"], false);
    let e = signal(&v)["error"].as_str().unwrap_or_default().to_string();
    assert!(
        e.contains("intervals/merge.py") && e.contains("does not apply"),
        "{v:#}"
    );
    assert_same(&workspace_files(s.ws()), &before, "workspace");
}

/// The number the sampling prompt shows for the buggy line of merge.py.
fn buggy_line_number(prompt: &str) -> String {
    prompt
        .lines()
        .find(|l| l.contains(BUGGY_LINE))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .to_string()
}

/// A model answer to `prompt`: a real variant (`kind` 0), prose without
/// code (1), or an edit outside the file (2).
fn model_answer(prompt: &str, kind: u64) -> String {
    let line = buggy_line_number(prompt);
    match kind {
        0 => format!(
            "The variant only merges exactly touching intervals.\n```python\n\
             edit_file(\"intervals/merge.py\", {line}, {line}, \"        if merged and start == merged[-1][1]:\")\n```\n"
        ),
        1 => "I would rather not.".into(),
        _ => "```python\nedit_file('intervals/merge.py', 900, 901, 'pass')\n```".into(),
    }
}

#[test]
fn model_mutants_come_from_parallel_samples_with_the_issue_and_both_tests() {
    // The samples of one prompt are told apart by arrival: of every three
    // requests, one gets a real variant, one prose, one an edit out of range.
    let stub = Stub::start(Duration::from_millis(150), |n, body| {
        let prompt = body["messages"][0]["content"].as_str().unwrap_or_default();
        (200, completion(&model_answer(prompt, n as u64 % 3)))
    });
    let mut s = Session::new(json!({"mutation": {"source": "llm", "samples": 3,
        "operators": ["behavior_substitution", "incomplete_fix"]}}));
    s.args = ["--llm-base-url", &stub.url, "--llm-model", "stub"]
        .map(String::from)
        .to_vec();
    s.write_test(LAX);
    s.finish();
    s.fix();
    s.write_test(&LAX.replace("print(", "print('result:', "));
    let v = s.finish();
    let seen = stub.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 6, "2 operators x 3 samples");
    assert!(
        stub.peak.load(Ordering::SeqCst) > 1,
        "samples are sent in parallel"
    );
    let prompts: Vec<&str> = seen
        .iter()
        .map(|r| r.body["messages"][0]["content"].as_str().unwrap())
        .collect();
    let per_op = |name: &str| {
        prompts
            .iter()
            .filter(|p| p.contains(&format!("Strategy: {name}")))
            .count()
    };
    assert_eq!(
        (per_op("behavior substitution"), per_op("incomplete fix")),
        (3, 3)
    );
    let prompt = prompts[0];
    assert!(
        prompt.contains("Touching intervals such as (1, 3) and (3, 5) are not merged"),
        "the issue is the first user message: {prompt}"
    );
    assert!(
        prompt.contains("--- BEGIN FILE intervals/merge.py ---"),
        "{prompt}"
    );
    assert!(
        prompt.contains(&format!("12         {BUGGY_LINE}")),
        "the base file, numbered: {prompt}"
    );
    assert!(
        prompt.contains("print('result:', ") && prompt.contains("print('merge("),
        "both tests: {prompt}"
    );
    assert!(
        !prompt.contains("reproduction.py"),
        "the pair is anonymous: {prompt}"
    );
    assert!(
        prompt.contains(&format!("+        {FIXED_LINE}")),
        "the fix is the reference: {prompt}"
    );

    let m = meta(&v);
    // Two operators produced the same `==` variant: one admitted, one a duplicate.
    assert_eq!(m["total"], 1, "{m:#}");
    assert_eq!(
        m["matrix"]["alpha"], 1,
        "the lax test lets `==` through: {m:#}"
    );
    let st = s.state();
    let reasons: Vec<&str> = st["rounds"][0]["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons.len(), 5, "{reasons:?}");
    assert_eq!(
        reasons
            .iter()
            .filter(|r| r.starts_with("unparseable answer"))
            .count(),
        2,
        "{reasons:?}"
    );
    assert_eq!(
        reasons
            .iter()
            .filter(|r| r.starts_with("the edits do not apply"))
            .count(),
        2,
        "{reasons:?}"
    );
    assert_eq!(
        reasons.iter().filter(|r| r.contains("duplicate")).count(),
        1,
        "{reasons:?}"
    );
    assert_eq!(st["rounds"][0]["mutants"][0]["origin"], "llm");
    assert!(s.feedback("latest.md").contains("start == merged[-1][1]"));
}

#[test]
fn an_unreachable_model_fails_in_llm_mode_and_falls_back_in_auto_mode() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let args = [
        "--llm-base-url",
        &url,
        "--llm-model",
        "stub",
        "--llm-attempts",
        "1",
    ]
    .map(String::from)
    .to_vec();

    let mut s = after_round_0(json!({"mutation": {"source": "llm"}}), LAX);
    s.args = args.clone();
    s.fix();
    let v = s.finish();
    let e = signal(&v)["error"].as_str().unwrap_or_default().to_string();
    assert!(e.contains("every model request failed"), "{v:#}");
    assert_eq!(v["accepted"], false);

    let mut s = after_round_0(json!({"mutation": {"source": "auto"}}), LAX);
    s.args = args;
    s.fix();
    let v = s.finish();
    let m = meta(&v);
    assert_eq!(m["decision"], "continue", "{v:#}");
    assert!(
        m["notes"][0]
            .as_str()
            .unwrap()
            .contains("deterministic operators were used"),
        "{m:#}"
    );
    assert!(m["total"].as_u64().unwrap() > 0);
}

#[test]
fn a_host_killed_mid_round_leaves_the_workspace_byte_identical() {
    let scratch = tempfile::tempdir().unwrap();
    let mut s = after_round_0(json!({}), LAX);
    s.env = vec![(
        "CRITIC_SCRATCH_DIR".into(),
        scratch.path().display().to_string(),
    )];
    s.fix();
    // Every run of this test says it is under way (a file in its scratch
    // copy), then sleeps, so the round is mid-flight for a while.
    s.write_test(&format!(
        "import pathlib, time\npathlib.Path(\"mid-round\").touch()\ntime.sleep(3)\n{LAX}"
    ));
    let before = snapshot(s.ws());
    let mut child = s
        .command()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mid_round = || {
        let mut stack = vec![scratch.path().to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                if entry.file_name() == "mid-round" {
                    return true;
                }
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(entry.path());
                }
            }
        }
        false
    };
    let started = std::time::Instant::now();
    while !mid_round() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the round never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert_same(
        &snapshot(s.ws()),
        &before,
        "a killed round changed the workspace",
    );
    assert_eq!(s.state()["round"], 1, "the state is the last completed one");

    // The next finish sweeps the orphaned copies and completes the round.
    s.write_test(LAX);
    let v = s.finish();
    assert_eq!(meta(&v)["decision"], "continue", "{v:#}");
    let left: Vec<PathBuf> = std::fs::read_dir(scratch.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_hanging_mutant_is_excluded_not_counted() {
    // The model's only variant never returns from merge().
    let stub = Stub::start(Duration::ZERO, |_, body| {
        let line = buggy_line_number(body["messages"][0]["content"].as_str().unwrap_or_default());
        let answer = format!(
            "```python\nedit_file('intervals/merge.py', {line}, {line}, \
             '        while True:\\n            pass\\n        if merged and start <= merged[-1][1]:')\n```"
        );
        (200, completion(&answer))
    });
    let mut s = after_round_0(
        json!({"test_timeout_secs": 2, "mutation": {"source": "llm", "samples": 1,
               "operators": ["behavior_substitution"]}}),
        LAX,
    );
    s.args = ["--llm-base-url", &stub.url, "--llm-model", "stub"]
        .map(String::from)
        .to_vec();
    s.fix();
    let started = std::time::Instant::now();
    let v = s.finish();
    assert!(started.elapsed() < Duration::from_secs(30));
    let m = meta(&v);
    assert_eq!(
        (m["total"].as_u64(), m["inconclusive"].as_bool()),
        (Some(0), Some(true)),
        "{m:#}"
    );
    let excluded = &s.state()["rounds"][0]["excluded"];
    let reason = excluded[0]["reason"].as_str().unwrap();
    assert!(reason.contains("did not finish within 2 s"), "{excluded:#}");
}

#[test]
fn the_previous_rounds_survivors_are_carried_onto_the_new_fix_and_counted() {
    let s = after_round_0(json!({}), LAX);
    s.fix();
    let v = s.finish();
    let m = meta(&v);
    assert_eq!(m["decision"], "continue", "{m:#}");
    let survivors = m["matrix"]["alpha"].as_u64().unwrap();
    assert!(survivors >= 1, "{m:#}");
    // Round 1 has no previous round.
    assert_eq!(m["vs_previous"]["carried"], 0, "{m:#}");
    assert!(
        followup(&v).contains("first hardening round"),
        "{}",
        followup(&v)
    );

    // Round 2, the same pair: every survivor of round 1 still passes.
    let v = s.finish();
    let m = meta(&v);
    assert_eq!(m["decision"], "continue", "{m:#}");
    assert_eq!(
        m["vs_previous"],
        json!({"persistent": survivors, "regressed": 0, "newly_killed": 0,
               "carried": survivors, "excluded": 0}),
        "{m:#}"
    );
    let f = followup(&v);
    assert!(
        f.contains(&format!(
            "Vs the previous round: {survivors} persistent, 0 regressed, 0 newly killed"
        )),
        "{f}"
    );

    // Round 3: the fix written another way moves the lines under the
    // survivors, and a stronger test kills every one that still applies.
    s.edit_source(FIXED_LINE, "if merged and not start > merged[-1][1]:");
    s.write_test(STRONG);
    let v = s.finish();
    let m = meta(&v);
    assert_eq!(v["accepted"], true, "{m:#}");
    let vs = &m["vs_previous"];
    assert_eq!(vs["persistent"], 0, "{m:#}");
    assert_eq!(
        vs["newly_killed"].as_u64().unwrap() + vs["excluded"].as_u64().unwrap(),
        survivors,
        "{m:#}"
    );
    let last = &s.state()["rounds"][2]["vs_previous"];
    for e in last["excluded"].as_array().unwrap() {
        assert!(
            e["reason"].as_str().unwrap().contains("no longer matches"),
            "{last:#}"
        );
    }
    assert!(s.feedback("latest.md").contains("Vs the previous round"));
}

#[test]
fn every_verdict_names_the_returned_test_and_a_regression_hands_back_t0() {
    let s = after_round_0(json!({"max_rounds": 2}), STRONG);
    let sha = |text: &str| {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(text.as_bytes()))
    };
    s.fix();
    s.write_test(LAX);
    let v = s.finish();
    let m = meta(&v);
    assert_eq!(m["decision"], "regression", "{m:#}");
    assert_eq!(m["arm"], "coharden");
    assert_eq!(
        m["outcome"],
        json!({"test": "t0", "test_sha256": sha(STRONG), "test_file": "reproduction.py"})
    );
    assert_eq!(s.feedback("final-test/reproduction.py"), STRONG);

    // The agent ignores the request and keeps the lax test: round K
    // regresses again, the budget ends, and the algorithm returns t0.
    let v = s.finish();
    assert_eq!(v["accepted"], true, "{v:#}");
    let m = meta(&v);
    assert_eq!(m["decision"], "budget_exhausted", "{m:#}");
    assert_eq!(m["reverted_to_t0"], true);
    assert!(
        m["summary"].as_str().unwrap().contains("returns t0"),
        "{m:#}"
    );
    assert_eq!(m["outcome"]["test"], "t0");
    assert_eq!(m["outcome"]["test_sha256"], sha(STRONG));
    assert_eq!(s.feedback("final-test/reproduction.py"), STRONG);
    assert_eq!(
        std::fs::read_to_string(s.ws().join("reproduction.py")).unwrap(),
        LAX,
        "the host never writes the workspace"
    );
    // Later finishes keep saying so.
    assert_eq!(meta(&s.finish())["outcome"]["test"], "t0");

    // A clean round returns the agent's own test.
    let s = after_round_0(json!({}), LAX);
    s.fix();
    s.write_test(STRONG);
    let v = s.finish();
    assert_eq!(v["accepted"], true, "{v:#}");
    assert_eq!(
        meta(&v)["outcome"],
        json!({"test": "t_k", "test_sha256": sha(STRONG), "test_file": "reproduction.py"})
    );
    assert_eq!(
        meta(&v)["f2p"],
        json!({"fails_on_base": true, "passes_on_patch": true})
    );
}

#[test]
fn a_cosmetic_edit_of_the_test_does_not_end_the_loop() {
    let s = after_round_0(json!({}), LAX);
    s.fix();
    assert_eq!(meta(&s.finish())["decision"], "continue");
    // Renamed variable, a docstring, another print, a comment: the same test.
    let cosmetic = format!(
        "\"\"\"Touching intervals.\"\"\"\n{}",
        LAX.replace("got", "result")
            .replace("print(", "# show it\nprint('again')\nprint(")
    );
    s.write_test(&cosmetic);
    let v = s.finish();
    let m = meta(&v);
    assert_eq!(
        (m["decision"].as_str(), m["test_changed"].as_bool()),
        (Some("continue"), Some(false)),
        "{m:#}"
    );
    // A new input is a change: with nothing left alive, the round is clean.
    s.write_test(&cosmetic.replace(
        "result = merge([(1, 3), (3, 5)])",
        "result = merge([(1, 3), (3, 5)])\nif merge([(3, 5), (1, 3)]) != [(1, 5)]:\n    result = None",
    ));
    let v = s.finish();
    assert_eq!(meta(&v)["test_changed"], true, "{v:#}");
}

#[test]
fn without_lax_init_the_first_finish_is_a_joint_round_whose_test_is_the_reference() {
    let s = Session::new(json!({"lax_init": false}));
    s.write_test(LAX);
    s.fix();
    let v = s.finish();
    let m = meta(&v);
    assert_eq!(m["arm"], "coharden-no-lax-init");
    assert_eq!(
        (m["round"].as_u64(), m["decision"].as_str()),
        (Some(1), Some("continue")),
        "{m:#}"
    );
    assert_eq!(m["matrix"]["beta"], 0, "{m:#}");
    let st = s.state();
    assert_eq!(
        (
            &st["t0"]["reproduction.py"],
            &st["t_ref"]["reproduction.py"]
        ),
        (&json!(LAX), &json!(LAX))
    );
    s.write_test(STRONG);
    let v = s.finish();
    assert_eq!(
        (v["accepted"].as_bool(), meta(&v)["decision"].as_str()),
        (Some(true), Some("clean")),
        "{v:#}"
    );
    // A first finish that breaks fail-to-pass does not become the reference:
    // the next good pair is round 1 against itself, so hardening goes on.
    let s = Session::new(json!({"lax_init": false}));
    s.write_test("import sys\nsys.exit(0)\n");
    s.fix();
    let v = s.finish();
    assert_eq!(meta(&v)["problem"], "fails_to_fail", "{v:#}");
    assert!(s.state()["t0"].as_object().unwrap().is_empty());
    s.write_test(LAX);
    let v = s.finish();
    assert_eq!(meta(&v)["decision"], "continue", "{v:#}");
    assert_eq!(s.state()["t0"]["reproduction.py"], LAX);
    // A test alone in the first finish is not a joint round.
    let s = Session::new(json!({"lax_init": false}));
    s.write_test(LAX);
    assert!(followup(&s.finish()).contains("holds the test but no fix"));
}

#[test]
fn without_hardening_the_first_fail_to_pass_pair_is_accepted() {
    let s = after_round_0(json!({"hardening": false}), LAX);
    s.fix();
    let v = s.finish();
    assert_eq!(v["accepted"], true, "{v:#}");
    let m = meta(&v);
    assert_eq!(m["arm"], "coharden-no-hardening");
    assert_eq!(m["decision"], "fail_to_pass", "{m:#}");
    assert!(m.get("total").is_none(), "no mutants: {m:#}");
    assert_eq!(s.state()["rounds"][0]["decision"], "fail_to_pass");

    // Neither phase: vanilla cogeneration, gated on fail-to-pass alone.
    let s = Session::new(json!({"lax_init": false, "hardening": false}));
    s.write_test("import sys\nsys.exit(0)\n");
    s.fix();
    let v = s.finish();
    assert_eq!(v["accepted"], false);
    assert_eq!(
        meta(&v)["f2p"],
        json!({"fails_on_base": false, "passes_on_patch": true})
    );
    assert!(followup(&v).contains("the test does not fail on the unfixed code"));
    s.write_test(LAX);
    let v = s.finish();
    assert_eq!(v["accepted"], true, "{v:#}");
    assert_eq!(meta(&v)["arm"], "coharden-no-lax-init-no-hardening");
}

#[test]
fn the_mutation_prompt_shows_the_issue_not_the_task_instructions() {
    let stub = Stub::start(Duration::from_millis(0), |_, _| {
        (200, completion("no code"))
    });
    let mut s = Session::new(json!({"mutation": {"source": "llm", "samples": 1,
        "operators": ["vanilla"]}}));
    // The recorded CoHarden run: its first user message is the rendered task.
    s.events = root().join("examples/coharden-run/finish-1.jsonl");
    s.args = ["--llm-base-url", &stub.url, "--llm-model", "stub"]
        .map(String::from)
        .to_vec();
    s.write_test(LAX);
    s.finish();
    s.fix();
    s.finish();
    let seen = stub.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let prompt = seen[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(
        prompt.contains("--- BEGIN ISSUE ---\nTouching intervals such as (1, 3) and (3, 5) are not merged by intervals.merge(), although they share the point 3.\n--- END ISSUE ---"),
        "{prompt}"
    );
    assert!(
        !prompt.contains("Round 0"),
        "no task instructions: {prompt}"
    );
    assert!(
        prompt.contains("Strategy: none in particular"),
        "the vanilla operator: {prompt}"
    );
    assert_eq!(s.state()["issue_source"], "issue_description");
}

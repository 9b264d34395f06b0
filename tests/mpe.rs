//! `critic mpe` end to end: a real Python package (`tests/fixtures/mpe/intervals`)
//! in a real git repository as a SWE-bench instance, generated tests as
//! SWT-bench predictions, pools from a directory, from the SDK's
//! deterministic operators and from a model (a local stand-in for the paid
//! API, scripted per operator, then replayed from the record), every test
//! run a real pytest run in a confined scratch copy, and the report opened
//! in headless Chromium.

#[path = "common/browser.rs"]
mod browser;
mod common;

use common::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const INSTANCE: &str = "acme__intervals-7";

/// The bug: touching intervals ((1, 3) and (3, 5)) are left apart.
const BUG: &str = "start < merged[-1][1]";
/// The golden fix.
const FIX: &str = "start <= merged[-1][1]";
/// A fix written differently that behaves the same.
const EQUIVALENT: &str = "not start > merged[-1][1]";
/// The fix for the one input the lax test uses.
const SHORTCUT: &str = "(start < merged[-1][1] or (start, end) == (3, 5))";
/// Merges intervals one apart too.
const OFF_BY_ONE: &str = "start <= merged[-1][1] + 1";
/// `gaps`, and the same with zero-length gaps hidden (the bug stays).
const GAPS: &str = "for a, b in zip(merged, merged[1:])]";
const GAPS_HIDDEN: &str = "for a, b in zip(merged, merged[1:]) if a[1] < b[0]]";
/// An import that leaves the package unimportable.
const IMPORT: &str = "from bisect import bisect_right\n";
const IMPORT_BROKEN: &str = "from bisect import bisect_right\nfrom intervals import _speedups\n";

/// The golden tests the instance's `test_patch` adds.
const GOLDEN_TESTS: &str = "\n\ndef test_merge_joins_touching_intervals():\n    \
assert merge([(1, 3), (3, 5)]) == [(1, 5)]\n    assert merge([(5, 6), (0, 2), (2, 5)]) == [(0, 6)]\n\n\n\
def test_touching_intervals_leave_no_gap():\n    assert gaps([(0, 1), (1, 3), (4, 5)]) == [(3, 4)]\n";

/// Generated tests, by generator.
const RIGOROUS: &str = "from intervals import merge\n\n\ndef test_touching_intervals_merge():\n    \
assert merge([(1, 3), (3, 5)]) == [(1, 5)]\n    assert merge([(4, 6), (0, 2), (2, 4)]) == [(0, 6)]\n\n\n\
def test_neighbours_one_apart_stay_apart():\n    assert merge([(1, 2), (3, 4)]) == [(1, 2), (3, 4)]\n";
const LAX: &str = "from intervals import merge\n\n\ndef test_touching():\n    \
assert merge([(1, 3), (3, 5)]) == [(1, 5)]\n";
const WRONG_WAY: &str = "from intervals import merge\n\n\ndef test_touching_stay_apart():\n    \
assert merge([(1, 3), (3, 5)]) == [(1, 3), (3, 5)]\n";
const NEVER_FAILS: &str = "from intervals import total\n\n\ndef test_total():\n    \
assert total([(0, 4)]) == 4\n";
const NEVER_PASSES: &str = "from intervals import merge\n\n\ndef test_touching():\n    \
assert merge([(1, 3), (3, 5)]) == [(1, 6)]\n";
/// The lax test, printing a forged pass after pytest's summary.
const FORGER: &str = "import atexit\n\natexit.register(print, \"PASSED tests/test_touching.py::test_touching\")\n\n\n\
from intervals import merge  # noqa: E402\n\n\ndef test_touching():\n    \
assert merge([(1, 3), (3, 5)]) == [(1, 5)]\n";
const DOES_NOT_IMPORT: &str = "from intervals.core import union\n\n\ndef test_union():\n    \
assert union([(1, 3), (3, 5)]) == [(1, 5)]\n";

/// Python with pytest.
fn python() -> PathBuf {
    python_venv("arms", Some(&root().join("tests/arms/requirements.lock")))
}

/// An instance in a real repository, with its inputs written as files.
struct Bench {
    /// Confined runs do not see /tmp: everything lives under target/.
    dir: tempfile::TempDir,
    instance: Value,
}

/// `git args` in `dir`, which must succeed; its output.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@localhost"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

impl Bench {
    fn new() -> Bench {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let mut bench = Bench {
            dir,
            instance: Value::Null,
        };
        let clone = bench.clone_dir();
        std::fs::create_dir_all(bench.repos()).unwrap();
        copy_tree(&fixture("mpe/intervals"), &clone);
        git(&clone, &["init", "-q", "-b", "main"]);
        git(&clone, &["add", "-A"]);
        git(&clone, &["commit", "-q", "-m", "base"]);
        let base = git(&clone, &["rev-parse", "HEAD"]).trim().to_string();
        let core = bench.base_file("intervals/core.py");
        let tests = bench.base_file("tests/test_core.py");
        let patch = bench.diff_of(&[("intervals/core.py", &core.replace(BUG, FIX))]);
        let test_patch =
            bench.diff_of(&[("tests/test_core.py", &format!("{tests}{GOLDEN_TESTS}"))]);
        let p2p = [
            "tests/test_core.py::test_merge_keeps_disjoint_intervals_apart",
            "tests/test_core.py::test_merge_joins_overlaps",
            "tests/test_core.py::test_total_counts_overlap_once",
            "tests/test_core.py::test_gaps_between_intervals",
            "tests/test_core.py::test_find_a_point",
            "tests/test_core.py::test_reversed_interval_is_refused",
            "tests/test_parse.py::test_round_trip",
            "tests/test_parse.py::test_empty_parts_are_skipped",
        ];
        bench.instance = json!({
            "instance_id": INSTANCE,
            "repo": "acme/intervals",
            "base_commit": base,
            "patch": patch,
            "test_patch": test_patch,
            // As SWE-bench ships them: JSON lists encoded as strings.
            "FAIL_TO_PASS": json!([
                "tests/test_core.py::test_merge_joins_touching_intervals",
                "tests/test_core.py::test_touching_intervals_leave_no_gap",
            ]).to_string(),
            "PASS_TO_PASS": json!(p2p).to_string(),
            "problem_statement": "merge() leaves touching intervals such as (1, 3) and (3, 5) apart.",
        });
        bench.write_instances(&[bench.instance.clone()]);
        bench
    }

    fn repos(&self) -> PathBuf {
        self.dir.path().join("repos")
    }

    /// The clone of the instance's repository, as a user would have it.
    fn clone_dir(&self) -> PathBuf {
        self.repos().join("acme__intervals")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The diff from the base commit that gives each file this content,
    /// made by git in a scratch clone.
    fn diff_of(&self, files: &[(&str, &str)]) -> String {
        let scratch = tempfile::tempdir_in(self.dir.path()).unwrap();
        let at = scratch.path().join("c");
        git(
            self.dir.path(),
            &[
                "clone",
                "-q",
                self.clone_dir().to_str().unwrap(),
                at.to_str().unwrap(),
            ],
        );
        for (path, content) in files {
            let p = at.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }
        git(&at, &["add", "-A"]);
        git(&at, &["diff", "--cached"])
    }

    fn base_file(&self, path: &str) -> String {
        read(&self.clone_dir().join(path))
    }

    /// The core module with `from` replaced by `to`.
    fn core_with(&self, from: &str, to: &str) -> String {
        let core = self.base_file("intervals/core.py");
        assert!(core.contains(from), "{from:?}");
        core.replace(from, to)
    }

    fn write_instances(&self, records: &[Value]) {
        write_jsonl(&self.path("instances.jsonl"), records);
    }

    /// A prediction whose test module is `tests/test_touching.py`.
    fn prediction(&self, generator: &str, test: &str) -> Value {
        json!({
            "instance_id": INSTANCE,
            "model_name_or_path": generator,
            "model_patch": self.diff_of(&[("tests/test_touching.py", test)]),
        })
    }

    fn write_predictions(&self, generators: &[(&str, &str)]) {
        let records: Vec<Value> = generators
            .iter()
            .map(|(g, t)| self.prediction(g, t))
            .collect();
        write_jsonl(&self.path("predictions.jsonl"), &records);
    }

    /// The hand-written pool: one variant per operator, one that breaks
    /// the package's import, one that does not apply.
    fn write_pool(&self) -> PathBuf {
        let dir = self.path("pool");
        let at = dir.join(INSTANCE);
        std::fs::create_dir_all(&at).unwrap();
        let core = "intervals/core.py";
        let variants = [
            ("vanilla-1", self.core_with(BUG, EQUIVALENT)),
            ("input_shortcut-1", self.core_with(BUG, SHORTCUT)),
            ("behavior_substitution-1", self.core_with(BUG, OFF_BY_ONE)),
            ("incomplete_fix-1", self.core_with(GAPS, GAPS_HIDDEN)),
            (
                "symptom_suppression-1",
                self.core_with(IMPORT, IMPORT_BROKEN),
            ),
        ];
        for (name, content) in &variants {
            let diff = self.diff_of(&[(core, content)]);
            std::fs::write(at.join(format!("{name}.diff")), diff).unwrap();
        }
        let elsewhere = self
            .diff_of(&[(core, &self.core_with(BUG, FIX))])
            .replace(core, "intervals/missing.py");
        std::fs::write(at.join("from-elsewhere.diff"), elsewhere).unwrap();
        dir
    }

    /// `critic mpe` on this bench's files, writing to `out`.
    fn mpe(&self, out: &str, more: &[&str]) -> Command {
        let mut cmd = critic();
        cmd.env_remove("CRITIC_LLM_BASE_URL")
            .env_remove("CRITIC_LLM_CACHE")
            .arg("mpe")
            .arg("--instances")
            .arg(self.path("instances.jsonl"))
            .arg("--predictions")
            .arg(self.path("predictions.jsonl"))
            .arg("--repos")
            .arg(self.repos())
            .arg("--python")
            .arg(python())
            .arg("--output-dir")
            .arg(self.path(out))
            .args(["--test-timeout", "60"])
            .args(more);
        cmd
    }

    /// [`Bench::mpe`] as a user in the bench's directory types it: every
    /// path relative.
    fn mpe_relative(&self, out: &str, more: &[&str]) -> Command {
        let mut cmd = critic();
        cmd.env_remove("CRITIC_LLM_BASE_URL")
            .env_remove("CRITIC_LLM_CACHE")
            .current_dir(self.dir.path())
            .args(["mpe", "--instances", "instances.jsonl"])
            .args(["--predictions", "predictions.jsonl", "--repos", "repos"])
            .arg("--python")
            .arg(python())
            .args(["--output-dir", out, "--test-timeout", "60"])
            .args(more);
        cmd
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn write_jsonl(path: &Path, records: &[Value]) {
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(path, text).unwrap();
}

fn jsonl(path: &Path) -> Vec<Value> {
    read(path)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// results.jsonl by generator.
fn results(out: &Path) -> BTreeMap<String, Value> {
    jsonl(&out.join("results.jsonl"))
        .into_iter()
        .map(|r| (r["model_name_or_path"].as_str().unwrap().to_string(), r))
        .collect()
}

fn ok(out: Output) -> Output {
    assert!(
        out.status.success(),
        "status {:?}\n{}",
        out.status,
        stderr(&out)
    );
    out
}

/// The number after `{label} ` in the run's last stderr summary line.
fn test_runs(out: &Output) -> usize {
    let text = stderr(out);
    let line = text.lines().find(|l| l.contains("test runs)")).unwrap();
    let before = line.split(" test runs)").next().unwrap();
    before.rsplit(' ').next().unwrap().parse().unwrap()
}

#[test]
fn each_class_is_reached_with_a_pool_from_a_directory_and_the_report_renders() {
    let bench = Bench::new();
    bench.write_predictions(&[
        ("rigorous-gen", RIGOROUS),
        ("lax-gen", LAX),
        ("wrong-way-gen", WRONG_WAY),
        ("never-fails-gen", NEVER_FAILS),
        ("never-passes-gen", NEVER_PASSES),
        ("no-import-gen", DOES_NOT_IMPORT),
    ]);
    // A prediction that adds no test at all: a class of its own.
    let mut records = jsonl(&bench.path("predictions.jsonl"));
    records.push(json!({
        "instance_id": INSTANCE,
        "model_name_or_path": "no-test-gen",
        "model_patch": bench.diff_of(&[("NOTES.txt", "nothing to test\n")]),
    }));
    write_jsonl(&bench.path("predictions.jsonl"), &records);
    let pool = bench.write_pool();
    let run = ok(run_cmd(bench.mpe("out", &["--pool"]).arg(&pool)));
    let out = bench.path("out");
    let r = results(&out);
    assert_eq!(r.len(), 7, "{r:#?}");

    let rigorous = &r["rigorous-gen"];
    assert_eq!(rigorous["class"], "rigorous", "{rigorous:#}");
    assert_eq!(
        rigorous["f2p"],
        json!({"fails_on_buggy": true, "passes_on_golden": true})
    );
    assert_eq!(
        rigorous["matrix"],
        json!({"alpha": 1, "beta": 0, "gamma": 0, "delta": 3, "total": 4})
    );
    assert_eq!(rigorous["laxity"], 0.0);
    let lax = &r["lax-gen"];
    assert_eq!(lax["class"], "lax", "{lax:#}");
    assert_eq!(
        lax["matrix"],
        json!({"alpha": 1, "beta": 2, "gamma": 0, "delta": 1, "total": 4})
    );
    assert_eq!(lax["laxity"], 0.5);
    // Both saw the same pool: two discarded (no import; does not apply).
    for pair in [rigorous, lax] {
        let pool = &pair["pool"];
        for op in [
            "vanilla",
            "input_shortcut",
            "behavior_substitution",
            "incomplete_fix",
        ] {
            assert_eq!(pool[op]["admissible"], 1, "{op}: {pool:#}");
        }
        assert_eq!(pool["symptom_suppression"]["discarded"], 1, "{pool:#}");
        assert_eq!(pool["external"]["discarded"], 1, "{pool:#}");
    }
    for (generator, reason) in [
        ("wrong-way-gen", "both"),
        ("never-fails-gen", "passes_on_buggy"),
        ("never-passes-gen", "fails_on_golden"),
    ] {
        assert_eq!(r[generator]["class"], "misaligned", "{generator}");
        assert_eq!(r[generator]["misaligned_reason"], reason, "{generator}");
        assert!(r[generator]["matrix"].is_null(), "no pool for misaligned");
    }
    assert_eq!(
        r["no-test-gen"]["class"], "no_test",
        "{:#}",
        r["no-test-gen"]
    );
    let broken = &r["no-import-gen"];
    assert_eq!(broken["class"], "harness_error", "{broken:#}");
    assert!(
        broken["reason"].as_str().unwrap().contains("union"),
        "{broken:#}"
    );

    // Per-variant outcomes, with why each discarded one was.
    let variants = jsonl(&out.join(format!("variants/{INSTANCE}/lax-gen.jsonl")));
    assert_eq!(variants.len(), 6);
    let by_op = |op: &str| variants.iter().find(|v| v["operator"] == op).unwrap();
    assert_eq!(by_op("input_shortcut")["cell"], "beta");
    assert_eq!(by_op("vanilla")["cell"], "alpha");
    assert_eq!(by_op("incomplete_fix")["cell"], "delta");
    let no_import = by_op("symptom_suppression");
    assert_eq!(no_import["admissible"], false);
    assert!(
        no_import["discard_reason"]
            .as_str()
            .unwrap()
            .contains("no runnable repository"),
        "{no_import}"
    );
    assert!(by_op("external")["discard_reason"]
        .as_str()
        .unwrap()
        .contains("intervals/missing.py"));

    // tau is the median laxity of the F->P pool: (0 + 0.5) / 2.
    let summary: Value = serde_json::from_str(&read(&out.join("summary.json"))).unwrap();
    assert_eq!(summary["tau"], 0.25, "{summary:#}");
    assert_eq!(summary["operators"], "pool");
    assert_eq!(summary["per_model"]["lax-gen"]["pairs"], 1, "{summary:#}");
    let counts = &summary["counts"];
    assert_eq!(
        (
            &counts["rigorous"],
            &counts["lax"],
            &counts["misaligned"],
            &counts["no_test"],
            &counts["harness_error"]
        ),
        (&json!(1), &json!(1), &json!(3), &json!(1), &json!(1)),
        "{counts:#}"
    );
    let sweep = summary["sweep"].as_array().unwrap();
    let taus: Vec<f64> = sweep.iter().map(|r| r["tau"].as_f64().unwrap()).collect();
    assert_eq!(taus, [0.05, 0.10, 0.15, 0.25, 0.25, 0.30, 0.40, 0.50]);
    for row in sweep {
        assert_eq!(
            (&row["rigorous"], &row["lax"], &row["misaligned"]),
            (&json!(1), &json!(1), &json!(3)),
            "{row}"
        );
    }
    assert!(
        stderr(&run)
            .contains("1 rigorous, 1 lax, 3 misaligned, 1 without a test, 1 harness errors"),
        "{}",
        stderr(&run)
    );

    // A fixed tau reclasses without running anything again.
    let again = ok(run_cmd(
        bench.mpe("out", &["--tau", "0.6", "--pool"]).arg(&pool),
    ));
    assert_eq!(test_runs(&again), 0, "{}", stderr(&again));
    assert_eq!(results(&out)["lax-gen"]["class"], "rigorous");

    report_renders(
        &out.join("report.html"),
        &["rigorous-gen", "lax-gen", "0.600"],
    );
}

fn run_cmd(cmd: &mut Command) -> Output {
    cmd.output().unwrap()
}

/// The report opens in a real headless Chromium 1400 px wide with no
/// error, fetches nothing, draws its charts with their legends beneath
/// them (covering no bar), and holds `texts`.
fn report_renders(report: &Path, texts: &[&str]) {
    let html = read(report);
    for attr in [
        "src=\"http",
        "href=\"http",
        "src='http",
        "@import",
        "<script",
    ] {
        assert!(!html.contains(attr), "the report loads {attr}");
    }
    let chromium = browser::Chromium::start(1400, 1000);
    let page = chromium.open(report);
    assert_eq!(page.errors(), Vec::<String>::new());
    let (width, window) = page.overflow();
    assert!(width <= window, "{width} px wide in a {window} px window");
    assert_eq!(
        page.eval("document.querySelectorAll('figure svg').length"),
        3
    );
    assert_eq!(
        page.eval("document.querySelectorAll('figure figcaption').length"),
        3,
        "each chart's legend beneath it"
    );
    let text = page
        .eval("document.body.innerText")
        .as_str()
        .unwrap()
        .to_string();
    for t in texts {
        assert!(text.contains(t), "{t} not on the page");
    }
    assert!(page.links().is_empty(), "the page links nowhere");
}

/// A chat-completions stand-in for the paid model API: each operator's
/// requests get that operator's answers in turn.
/// Once `closed` is set, every request fails.
fn scripted_model(
    script: BTreeMap<&'static str, Vec<String>>,
    closed: Arc<AtomicBool>,
) -> llm_stub::Stub {
    let turns: Arc<Mutex<BTreeMap<&'static str, usize>>> = Arc::default();
    llm_stub::Stub::start(Duration::ZERO, move |_, body| {
        if closed.load(Ordering::SeqCst) {
            return (500, "{\"error\": \"closed\"}".into());
        }
        let prompt = body["messages"][0]["content"].as_str().unwrap_or_default();
        let Some((op, answers)) = script
            .iter()
            .find(|(op, _)| prompt.contains(&format!("Strategy: {op}")))
        else {
            return (400, "{\"error\": \"no operator in the prompt\"}".into());
        };
        let mut turns = turns.lock().unwrap();
        let n = turns.entry(op).or_default();
        let answer = &answers[(*n).min(answers.len() - 1)];
        *n += 1;
        (200, llm_stub::completion(answer))
    })
}

fn edit(line: usize, content: &str) -> String {
    format!(
        "Here is the fix.\n\n```python\nedit_file(\"intervals/core.py\", {line}, {line}, {content:?})\n```\n"
    )
}

#[test]
fn the_model_path_resamples_discarded_variants_and_replays_from_the_record() {
    let bench = Bench::new();
    bench.write_predictions(&[("lax-gen", LAX)]);
    let core = bench.base_file("intervals/core.py");
    let line_of = |text: &str| core.lines().position(|l| l.contains(text)).unwrap() + 1;
    let bug_line = line_of(BUG);
    let bug_text = core.lines().nth(bug_line - 1).unwrap();
    let gaps_line = line_of(GAPS);
    let gaps_text = core.lines().nth(gaps_line - 1).unwrap();
    let import_line = line_of(IMPORT.trim());
    let equivalent = edit(bug_line, &bug_text.replace(BUG, EQUIVALENT));
    let shortcut = edit(bug_line, &bug_text.replace(BUG, SHORTCUT));
    let refusal = "I would rather not write a wrong fix.".to_string();
    let script: BTreeMap<&'static str, Vec<String>> = [
        ("none in particular", vec![equivalent]),
        (
            "input-specific shortcut",
            vec![refusal.clone(), shortcut.clone(), shortcut],
        ),
        (
            "behavior substitution",
            vec![edit(bug_line, &bug_text.replace(BUG, OFF_BY_ONE))],
        ),
        (
            "incomplete fix",
            vec![
                edit(400, "x = 1"),
                edit(import_line, IMPORT_BROKEN),
                edit(gaps_line, &gaps_text.replace(GAPS, GAPS_HIDDEN)),
            ],
        ),
        ("symptom suppression", vec![refusal]),
    ]
    .into();
    let closed = Arc::new(AtomicBool::new(false));
    let model = scripted_model(script, closed.clone());
    let cache = bench.path("llm-record");
    let flags = |url: &str, seed: &str| {
        vec![
            "--samples-per-operator".to_string(),
            "2".into(),
            "--max-attempts".into(),
            "4".into(),
            "--seed".into(),
            seed.to_string(),
            "--llm-base-url".into(),
            url.to_string(),
            "--llm-model".into(),
            "stand-in".into(),
            "--llm-cache".into(),
            cache.display().to_string(),
        ]
    };
    let args = flags(&model.url, "7");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(run_cmd(&mut bench.mpe("out", &args)));
    let first = results(&bench.path("out"));
    let pair = &first["lax-gen"];
    assert_eq!(pair["class"], "lax", "{pair:#}");
    assert_eq!(
        pair["matrix"],
        json!({"alpha": 2, "beta": 4, "gamma": 0, "delta": 2, "total": 8})
    );
    let pool = &pair["pool"];
    let tally = |op: &str| {
        (
            pool[op]["sampled"].as_u64().unwrap(),
            pool[op]["admissible"].as_u64().unwrap(),
            pool[op]["discarded"].as_u64().unwrap(),
        )
    };
    assert_eq!(tally("vanilla"), (2, 2, 0), "{pool:#}");
    assert_eq!(
        tally("input_shortcut"),
        (3, 2, 1),
        "resampled once: {pool:#}"
    );
    assert_eq!(tally("behavior_substitution"), (2, 2, 0));
    assert_eq!(
        tally("incomplete_fix"),
        (4, 2, 2),
        "resampled twice: {pool:#}"
    );
    assert_eq!(tally("symptom_suppression"), (4, 0, 4), "the cap: {pool:#}");
    assert_eq!(pool["symptom_suppression"]["cap_reached"], true);
    assert_eq!(model.seen.lock().unwrap().len(), 15);
    // Every prompt shows the two tests, and the order varies.
    let seen = model.seen.lock().unwrap().clone();
    let lax_first = seen
        .iter()
        .filter(|s| {
            let p = s.body["messages"][0]["content"].as_str().unwrap();
            p.find("def test_touching()").unwrap()
                < p.find("def test_merge_joins_touching_intervals").unwrap()
        })
        .count();
    assert!(0 < lax_first && lax_first < 15, "{lax_first} of 15");
    let variants = jsonl(&bench.path(&format!("out/variants/{INSTANCE}/lax-gen.jsonl")));
    let reasons: Vec<&str> = variants
        .iter()
        .filter_map(|v| v["discard_reason"].as_str())
        .collect();
    assert!(
        reasons.iter().any(|r| r.contains("unusable answer")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("do not apply")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("no runnable repository")),
        "{reasons:?}"
    );
    // The admissible variants are kept as a pool another run can take.
    let kept = std::fs::read_dir(bench.path(&format!("out/pool/lax-gen/{INSTANCE}")))
        .unwrap()
        .count();
    assert_eq!(kept, 8);

    // Replay: a fresh output directory, the same record, a model that
    // answers nothing any more.
    closed.store(true, Ordering::SeqCst);
    let args = flags(&model.url, "7");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(run_cmd(&mut bench.mpe("replayed", &args)));
    let mut replayed = results(&bench.path("replayed"));
    let mut first = first;
    for r in [&mut replayed, &mut first] {
        r.values_mut().for_each(|v| {
            v.as_object_mut().unwrap().remove("variants");
        });
    }
    assert_eq!(replayed, first);
    assert_eq!(model.seen.lock().unwrap().len(), 15, "nothing asked again");

    // A model that cannot be reached gives an error, not a result.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", dead.local_addr().unwrap());
    drop(dead);
    let args = flags(&url, "8");
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.extend(["--llm-attempts", "1"]);
    let failed = run_cmd(&mut bench.mpe("unreachable", &args));
    assert_eq!(failed.status.code(), Some(2), "{}", stderr(&failed));
    let r = results(&bench.path("unreachable"));
    assert_eq!(r["lax-gen"]["class"], "error", "{:#}", r["lax-gen"]);
    assert!(
        stderr(&failed).contains("lax-gen: drawing the pool"),
        "{}",
        stderr(&failed)
    );
}

#[test]
fn the_deterministic_path_needs_no_model_and_says_so() {
    let bench = Bench::new();
    bench.write_predictions(&[
        ("rigorous-gen", RIGOROUS),
        ("lax-gen", LAX),
        ("forger-gen", FORGER),
    ]);
    // Relative paths, as typed in the bench's directory, work as absolute.
    ok(run_cmd(&mut bench.mpe_relative(
        "out",
        &[
            "--operators",
            "deterministic",
            "--samples-per-operator",
            "3",
        ],
    )));
    let out = bench.path("out");
    let r = results(&out);
    for pair in r.values() {
        assert_eq!(pair["operators"], "deterministic", "{pair:#}");
        assert!(pair["matrix"]["total"].as_u64().unwrap() > 0, "{pair:#}");
        assert_eq!(
            pair["pool"]["vanilla"]["sampled"], 0,
            "no model, no vanilla"
        );
        assert_eq!(pair["pool"]["vanilla"]["exhausted"], true);
    }
    assert!(r["rigorous-gen"]["laxity"].as_f64() <= r["lax-gen"]["laxity"].as_f64());
    // A pass forged after pytest's summary changes nothing: the forger is
    // judged as the lax test it is.
    assert_eq!(r["forger-gen"]["f2p"], r["lax-gen"]["f2p"]);
    assert_eq!(r["forger-gen"]["matrix"], r["lax-gen"]["matrix"]);
    let summary: Value = serde_json::from_str(&read(&out.join("summary.json"))).unwrap();
    assert_eq!(summary["operators"], "deterministic");
    assert!(read(&out.join("report.html")).contains("deterministic operators"));
    assert!(!out.join("llm-cache").exists());
}

#[test]
fn an_interrupted_run_resumes_where_it_stopped() {
    let bench = Bench::new();
    let generators = [
        ("never-fails-gen", NEVER_FAILS),
        ("rigorous-gen", RIGOROUS),
        ("lax-gen", LAX),
    ];
    bench.write_predictions(&generators);
    let flags = [
        "--operators",
        "deterministic",
        "--samples-per-operator",
        "4",
        "--workers",
        "1",
    ];
    let whole = ok(run_cmd(&mut bench.mpe("whole", &flags)));
    let all_runs = test_runs(&whole);

    let mut child = bench
        .mpe("out", &flags)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let done = bench.path(&format!("out/pairs/{INSTANCE}/rigorous-gen.json"));
    let deadline = Instant::now() + Duration::from_secs(300);
    while !done.exists() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "finished before the interrupt"
        );
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(10));
    }
    // Ctrl-C.
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    child.wait().unwrap();
    assert!(
        !bench.path("out/results.jsonl").exists(),
        "interrupted before the end"
    );
    // Whatever was written is whole.
    for (path, bytes) in snapshot(&bench.path("out")) {
        if path.ends_with(".json") {
            serde_json::from_slice::<Value>(&bytes).unwrap_or_else(|e| panic!("{path}: {e}"));
        }
        if path.ends_with(".jsonl") {
            for line in String::from_utf8(bytes).unwrap().lines() {
                serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{path}: {e}"));
            }
        }
    }

    let resumed = ok(run_cmd(&mut bench.mpe("out", &flags)));
    assert!(
        stderr(&resumed).contains("1 of 3 pairs to evaluate (2 already finished)"),
        "{}",
        stderr(&resumed)
    );
    let runs = test_runs(&resumed);
    assert!(
        runs < all_runs,
        "{runs} runs again of {all_runs}: the cache of runs is kept"
    );
    let strip = |mut r: BTreeMap<String, Value>| {
        r.values_mut().for_each(|v| {
            v.as_object_mut().unwrap().remove("variants");
        });
        r
    };
    assert_eq!(
        strip(results(&bench.path("out"))),
        strip(results(&bench.path("whole")))
    );
    let again = ok(run_cmd(&mut bench.mpe("out", &flags)));
    assert!(stderr(&again).contains("0 of 3 pairs to evaluate"));
    assert_eq!(test_runs(&again), 0);

    // A changed prediction is evaluated again; the others are kept.
    bench.write_predictions(&[
        ("never-fails-gen", NEVER_FAILS),
        ("rigorous-gen", RIGOROUS),
        ("lax-gen", RIGOROUS),
    ]);
    let changed = ok(run_cmd(&mut bench.mpe("out", &flags)));
    assert!(
        stderr(&changed).contains("1 of 3 pairs to evaluate (2 already finished)"),
        "{}",
        stderr(&changed)
    );
    let r = results(&bench.path("out"));
    assert_eq!(r["lax-gen"]["matrix"], r["rigorous-gen"]["matrix"]);
}

#[test]
fn bad_inputs_name_the_record_and_field_and_lose_nothing() {
    let bench = Bench::new();
    bench.write_predictions(&[("never-fails-gen", NEVER_FAILS)]);
    let flags = [
        "--operators",
        "deterministic",
        "--samples-per-operator",
        "1",
    ];
    ok(run_cmd(&mut bench.mpe("out", &flags)));
    let before = read(&bench.path("out/results.jsonl"));

    let refused = |instances: &[Value], predictions: Option<&[Value]>, wanted: &[&str]| {
        bench.write_instances(instances);
        if let Some(p) = predictions {
            write_jsonl(&bench.path("predictions.jsonl"), p);
        }
        let out = run_cmd(&mut bench.mpe("out", &flags));
        assert!(!out.status.success());
        let text = stderr(&out);
        for w in wanted {
            assert!(text.contains(w), "{w:?} not in: {text}");
        }
        assert!(!text.contains("panicked"), "{text}");
        assert_eq!(
            read(&bench.path("out/results.jsonl")),
            before,
            "nothing lost"
        );
    };
    let good = bench.instance.clone();
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("base_commit");
    refused(
        &[missing],
        None,
        &["instances.jsonl:1", INSTANCE, "`base_commit`"],
    );
    let mut elsewhere = good.clone();
    elsewhere["repo"] = json!("acme/not-cloned");
    refused(
        &[elsewhere],
        None,
        &["instances.jsonl:1", "field `repo`", "acme__not-cloned"],
    );
    let mut django = good.clone();
    django["log_parser"] = json!("django");
    refused(
        &[django],
        None,
        &[
            "instances.jsonl:1",
            "django's runner",
            "MPE judges generated tests with pytest",
        ],
    );
    let mut stranger = bench.prediction("never-fails-gen", NEVER_FAILS);
    stranger["instance_id"] = json!("acme__intervals-999");
    refused(
        std::slice::from_ref(&good),
        Some(&[bench.prediction("never-fails-gen", NEVER_FAILS), stranger]),
        &[
            "predictions.jsonl:2",
            "acme__intervals-999",
            "`instance_id`",
        ],
    );
    let mut no_generator = bench.prediction("x", NEVER_FAILS);
    no_generator
        .as_object_mut()
        .unwrap()
        .remove("model_name_or_path");
    refused(
        std::slice::from_ref(&good),
        Some(&[no_generator]),
        &["predictions.jsonl:1", "`model_name_or_path`"],
    );
    // An interpreter without pytest (the record's own `python`): refused
    // before any pair runs, naming what to install.
    let bare = common::python_venv("no-pytest", None);
    let mut no_pytest = good.clone();
    no_pytest["python"] = json!(bare);
    refused(
        &[no_pytest],
        Some(&[bench.prediction("never-fails-gen", NEVER_FAILS)]),
        &[
            "instances.jsonl:1",
            "cannot import pytest",
            "-m pip install pytest",
        ],
    );

    // A golden patch that does not apply: that instance's pairs are errors
    // naming the record and field; the other instance's are results.
    let mut broken = good.clone();
    broken["instance_id"] = json!("acme__intervals-8");
    broken["patch"] = json!(good["patch"]
        .as_str()
        .unwrap()
        .replace("sorted(check(i)", "sorted(checked(i)"));
    bench.write_instances(&[good.clone(), broken]);
    let mut second = bench.prediction("never-fails-gen", NEVER_FAILS);
    second["instance_id"] = json!("acme__intervals-8");
    write_jsonl(
        &bench.path("predictions.jsonl"),
        &[bench.prediction("never-fails-gen", NEVER_FAILS), second],
    );
    let out = run_cmd(&mut bench.mpe("out", &flags));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(
        text.contains("1 of 2 pairs to evaluate (1 already finished)"),
        "{text}"
    );
    assert!(text.contains("instances.jsonl:2"), "{text}");
    assert!(text.contains("field `patch`"), "{text}");
    let r = jsonl(&bench.path("out/results.jsonl"));
    assert_eq!(r.len(), 2);
    assert_eq!(r[0]["class"], "misaligned");
    assert_eq!(r[1]["class"], "error");
    assert!(r[1]["reason"].as_str().unwrap().contains("field `patch`"));
}

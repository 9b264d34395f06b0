//! `critic experiment` end to end: three small real Python packages with
//! seeded bugs, each a git repository made here and described as a
//! SWE-bench instance; the shipped `fix-only` and `brt-only` arms; an agent
//! behind the `command` adapter (a scripted program, `AGENT`, that writes
//! what its plan says for each arm and round: a stand-in for a model, not
//! an imitation of any agent's transcript); every finish judged by the real
//! `critic check`, every grade a real pytest run in a confined scratch copy.

#[path = "common/browser.rs"]
mod browser;
mod common;

use common::agents::{npm_bin, python_with_package, Standin};
use common::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The agent: for the arm in `CRITIC_SESSION` (`<arm>-<sample>-<attempt>`)
/// and the round in `CRITIC_ROUND`, writes the files its plan gives for
/// the package the workspace holds, runs its shell command if it has one,
/// sleeps if told, asks its model (through the run's proxy, when the
/// experiment has one) for the tokens it is told to use, writes the files
/// the model's answer names if the step has an `ask`, reports the tokens in
/// its own transcript (`CRITIC_EVENTS_FILE`), and prints what it did.
const AGENT: &str = r#"#!/usr/bin/env python3
import json, os, pathlib, sys, time
plan = json.loads(pathlib.Path(os.environ["AGENT_PLAN"]).read_text())
ws = pathlib.Path(os.environ["CRITIC_WORKSPACE"])
assert pathlib.Path.cwd().resolve() == ws.resolve(), "runs in the workspace"
prompt = pathlib.Path(sys.argv[1]).read_text()
arm = os.environ["CRITIC_SESSION"].rsplit("-", 2)[0]
round_ = os.environ["CRITIC_ROUND"]
package = next(p for p in plan if (ws / p).is_dir())
step = plan[package].get(arm, {}).get(round_, {})
for path, content in step.get("write", {}).items():
    (ws / path).parent.mkdir(parents=True, exist_ok=True)
    (ws / path).write_text(content)
if "sh" in step:
    import subprocess
    subprocess.run(step["sh"], shell=True, cwd=ws, check=True)
time.sleep(step.get("sleep", 0))
if "tokens" in step and "CRITIC_MODEL_BASE_URL" in os.environ:
    import urllib.request, urllib.error
    call = urllib.request.Request(
        os.environ["CRITIC_MODEL_BASE_URL"] + "/v1/messages",
        data=json.dumps({"tokens": step["tokens"], "arm": arm, "round": round_, "prompt": prompt,
                         "ask": step.get("ask"), "stream": "ask" in step}).encode(),
        headers={"x-api-key": os.environ["CRITIC_MODEL_API_KEY"], "content-type": "application/json"})
    try:
        answer = urllib.request.urlopen(call).read().decode()
    except urllib.error.HTTPError as e:
        print(f"the model refused: {e.read().decode()}")
        sys.exit(3)
    if "ask" in step:
        # The model's streamed text names the files to write.
        events = [json.loads(l[6:]) for l in answer.splitlines() if l.startswith("data: ")]
        text = "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta")
        for path, content in json.loads(text).items():
            (ws / path).parent.mkdir(parents=True, exist_ok=True)
            (ws / path).write_text(content)
if "tokens" in step:
    # The agent's own transcript, in the host's normalized events, with
    # what its model call used.
    with open(os.environ["CRITIC_EVENTS_FILE"], "a") as t:
        usage = {"input_tokens": step["tokens"], "output_tokens": 0}
        t.write(json.dumps({"index": 0, "kind": "message", "source": "agent", "text": "working",
                            "id": f"call-{round_}", "usage": usage}) + "\n")
        t.write(json.dumps({"index": 1, "kind": "finish", "source": "agent", "text": "done"}) + "\n")
print(f"{arm} round {round_} on {package}: wrote {sorted(step.get('write', {}))}")
"#;

/// One seeded-bug package: its files at the base, the golden fix, the
/// golden test appended to its test module, and a wrong fix.
struct Package {
    name: &'static str,
    module: &'static str,
    source: &'static str,
    bug: &'static str,
    fix: &'static str,
    wrong: &'static str,
    tests: &'static str,
    golden_test: &'static str,
    /// `(test name, body)`s.
    p2p: &'static [&'static str],
    f2p: &'static str,
    issue: &'static str,
    /// A reproduction test that fails on the bug, and one that does not.
    good_brt: &'static str,
    lax_brt: &'static str,
}

const PACKAGES: [Package; 3] = [
    Package {
        name: "textutil",
        module: "textutil/__init__.py",
        source: "def slugify(text):\n    words = text.strip().split()\n    return \"-\".join(words)\n",
        bug: "\"-\".join(words)",
        fix: "\"-\".join(w.lower() for w in words)",
        wrong: "\"-\".join(words).replace(\"H\", \"h\")",
        tests: "from textutil import slugify\n\n\ndef test_joins_words():\n    assert slugify(\"a b\") == \"a-b\"\n\n\ndef test_strips():\n    assert slugify(\"  a \") == \"a\"\n",
        golden_test: "\n\ndef test_lowercases():\n    assert slugify(\"Hello World\") == \"hello-world\"\n",
        p2p: &["test_joins_words", "test_strips"],
        f2p: "test_lowercases",
        issue: "slugify(\"Hello World\") gives \"Hello-World\"; slugs must be lowercase.",
        good_brt: "from textutil import slugify\n\n\ndef test_issue():\n    assert slugify(\"Hello World\") == \"hello-world\"\n",
        lax_brt: "from textutil import slugify\n\n\ndef test_issue():\n    assert slugify(\"a b\") == \"a-b\"\n",
    },
    Package {
        name: "stats",
        module: "stats/__init__.py",
        source: "def median(xs):\n    s = sorted(xs)\n    return s[len(s) // 2]\n",
        bug: "return s[len(s) // 2]",
        fix: "n = len(s)\n    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2",
        wrong: "return s[(len(s) - 1) // 2]",
        tests: "from stats import median\n\n\ndef test_odd():\n    assert median([3, 1, 2]) == 2\n",
        golden_test: "\n\ndef test_even_is_the_mean_of_the_middle_two():\n    assert median([4, 1, 3, 2]) == 2.5\n",
        p2p: &["test_odd"],
        f2p: "test_even_is_the_mean_of_the_middle_two",
        issue: "median([1, 2, 3, 4]) is 3; it should be 2.5.",
        good_brt: "from stats import median\n\n\ndef test_issue():\n    assert median([1, 2, 3, 4]) == 2.5\n",
        lax_brt: "from stats import median\n\n\ndef test_issue():\n    assert median([1, 2, 3]) == 2\n",
    },
    Package {
        name: "bounds",
        module: "bounds/__init__.py",
        source: "def clamp(x, lo, hi):\n    if x < lo:\n        return hi\n    if x > hi:\n        return hi\n    return x\n",
        bug: "if x < lo:\n        return hi",
        fix: "if x < lo:\n        return lo",
        wrong: "if x < lo - 1:\n        return lo",
        tests: "from bounds import clamp\n\n\ndef test_inside():\n    assert clamp(5, 0, 10) == 5\n\n\ndef test_above():\n    assert clamp(11, 0, 10) == 10\n",
        golden_test: "\n\ndef test_below():\n    assert clamp(-1, 0, 10) == 0\n",
        p2p: &["test_inside", "test_above"],
        f2p: "test_below",
        issue: "clamp(-1, 0, 10) returns 10 instead of 0.",
        good_brt: "from bounds import clamp\n\n\ndef test_issue():\n    assert clamp(-1, 0, 10) == 0\n",
        lax_brt: "from bounds import clamp\n\n\ndef test_issue():\n    assert clamp(5, 0, 10) == 5\n",
    },
];

impl Package {
    fn fixed(&self) -> String {
        assert!(self.source.contains(self.bug), "{}", self.name);
        self.source.replace(self.bug, self.fix)
    }

    fn wrong_fix(&self) -> String {
        self.source.replace(self.bug, self.wrong)
    }

    fn test_module(&self) -> String {
        format!("tests/test_{}.py", self.name)
    }
}

/// Python with pytest.
fn python() -> PathBuf {
    python_venv("arms", Some(&root().join("tests/arms/requirements.lock")))
}

/// An experiment's inputs on disk, under target/ (a confined run does not
/// see /tmp).
struct Lab {
    dir: tempfile::TempDir,
}

impl Lab {
    fn new() -> Lab {
        let lab = Lab {
            dir: tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap(),
        };
        std::fs::create_dir_all(lab.path("repos")).unwrap();
        let records: Vec<Value> = PACKAGES.iter().map(|p| lab.instance(p)).collect();
        write_jsonl(&lab.path("instances.jsonl"), &records);
        let agent = lab.path("agent.py");
        std::fs::write(&agent, AGENT).unwrap();
        std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
        lab
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The package's repository, and its instance record.
    fn instance(&self, p: &Package) -> Value {
        let repo = Repo {
            dir: tempfile::tempdir_in(self.path("repos")).unwrap(),
        };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.write(p.module, p.source);
        repo.write(&p.test_module(), p.tests);
        repo.write("tests/__init__.py", "");
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "base"]);
        let base = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
        repo.write(p.module, &p.fixed());
        let patch = repo.git(&["diff"]);
        repo.git(&["checkout", "-q", "--", "."]);
        repo.write(&p.test_module(), &format!("{}{}", p.tests, p.golden_test));
        let test_patch = repo.git(&["diff"]);
        repo.git(&["checkout", "-q", "--", "."]);
        let clone = self.path(&format!("repos/acme__{}", p.name));
        std::fs::rename(repo.dir.keep(), &clone).unwrap();
        let id = |t: &str| format!("{}::{t}", p.test_module());
        json!({
            "instance_id": format!("acme__{}-1", p.name),
            "repo": format!("acme/{}", p.name),
            "base_commit": base,
            "patch": patch,
            "test_patch": test_patch,
            "FAIL_TO_PASS": json!([id(p.f2p)]).to_string(),
            "PASS_TO_PASS": json!(p.p2p.iter().map(|t| id(t)).collect::<Vec<_>>()).to_string(),
            "problem_statement": p.issue,
        })
    }

    /// The experiment file `exp.yaml` with `extra` appended, and the
    /// agent's plan.
    fn write(&self, plan: &Value, extra: &str) -> PathBuf {
        std::fs::write(self.path("plan.json"), plan.to_string()).unwrap();
        let agent = format!(
            "agent:\n  command: [./agent.py, \"{{prompt_file}}\"]\n  timeout: 60s\n  env: {{AGENT_PLAN: {}}}\n",
            self.path("plan.json").display()
        );
        self.write_with(&agent, extra)
    }

    /// [`Lab::write`] with the fix-only arm alone.
    fn write_fix_only(&self, plan: &Value, extra: &str) -> PathBuf {
        let file = self.write(plan, extra);
        let text = std::fs::read_to_string(&file).unwrap().replace(
            &format!(
                "\n  brt-only: {{skill: {}/brt-only, max_iterations: 1}}",
                root().join("skills").display()
            ),
            "",
        );
        std::fs::write(&file, text).unwrap();
        file
    }

    /// The experiment file `exp.yaml` with this `agent` block (and what
    /// goes with it) and `extra` appended.
    fn write_with(&self, agent: &str, extra: &str) -> PathBuf {
        let file = self.path("exp.yaml");
        let text = format!(
            "name: demo-exp\ninstances: instances.jsonl\nrepos: repos\npython: {python}\n{agent}\
arms:\n  fix-only: {{skill: {skills}/fix-only}}\n  brt-only: {{skill: {skills}/brt-only, max_iterations: 1}}\n{extra}",
            python = python().display(),
            skills = root().join("skills").display(),
        );
        std::fs::write(&file, text).unwrap();
        file
    }

    /// `critic experiment run` of `file` into `out`, with `env` added.
    fn run_with_env(&self, file: &Path, out: &str, env: &[(&str, &str)]) -> Output {
        run(critic()
            .args(["experiment", "run"])
            .arg(file)
            .arg("--output-dir")
            .arg(self.path(out))
            .envs(env.iter().copied()))
    }

    /// The experiment file for a real agent `program` behind `adapter` on
    /// textutil, its model `standin`.
    fn write_stand_in(&self, adapter: &str, program: &Path, standin: &Standin) -> PathBuf {
        let agent = format!(
            "agent:\n  adapter: {adapter}\n  program: {}\n  timeout: 300s\n\
model: {{base_url: \"{}\", model: stand-in-model, api_key_env: STANDIN_API_KEY}}\n",
            program.display(),
            standin.url()
        );
        self.write_with(&agent, "filter: {ids: [acme__textutil-1]}\n")
    }

    /// `critic experiment run` of `file` into `out`, no run retried, with
    /// the stand-in model's key.
    fn run_once(&self, file: &Path) -> Output {
        run(critic()
            .args(["experiment", "run"])
            .arg(file)
            .arg("--output-dir")
            .arg(self.path("out"))
            .args(["--retries", "0"])
            .env("STANDIN_API_KEY", "stand-in-key"))
    }

    /// `critic experiment run` of `file` into `out`.
    fn run(&self, file: &Path, out: &str, flags: &[&str]) -> Output {
        run(critic()
            .args(["experiment", "run"])
            .arg(file)
            .arg("--output-dir")
            .arg(self.path(out))
            .args(flags))
    }
}

/// What each package's agent does per arm and round.
fn plan() -> Value {
    let by = |name: &str| PACKAGES.iter().find(|p| p.name == name).unwrap();
    let (text, stats, bounds) = (by("textutil"), by("stats"), by("bounds"));
    let brt = |body: &str| json!({"write": {"tests/test_issue.py": body}});
    json!({
        "textutil": {
            // An empty first finish: fix-only sends it back.
            "fix-only": {"2": {"write": {text.module: text.fixed()}}},
            "brt-only": {"1": brt(text.good_brt)},
        },
        "stats": {
            "fix-only": {"1": {"write": {stats.module: stats.wrong_fix()}}},
            // A test that passes on the bug: rejected once, then the budget ends.
            "brt-only": {"1": brt(stats.lax_brt)},
        },
        "bounds": {
            "fix-only": {"1": {"write": {bounds.module: bounds.fixed()}}},
            "brt-only": {"1": brt(bounds.good_brt)},
        },
    })
}

fn write_jsonl(path: &Path, records: &[Value]) {
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(path, text).unwrap();
}

fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// results.jsonl by (instance, arm), durations left out.
fn results(out: &Path) -> BTreeMap<(String, String), Value> {
    jsonl(&out.join("results.jsonl"))
        .into_iter()
        .map(|mut r| {
            let key = (
                r["instance_id"].as_str().unwrap().to_string(),
                r["arm"].as_str().unwrap().to_string(),
            );
            r.as_object_mut().unwrap().remove("duration_s");
            (key, r)
        })
        .collect()
}

fn key(package: &str, arm: &str) -> (String, String) {
    (format!("acme__{package}-1"), arm.to_string())
}

#[test]
fn two_arms_on_three_packages_are_run_checked_and_graded() {
    let lab = Lab::new();
    let file = lab.write(&plan(), "");
    let out = lab.run(&file, "out", &["--workers", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dir = lab.path("out");
    let r = results(&dir);
    assert_eq!(r.len(), 6, "{r:#?}");
    for (k, v) in &r {
        assert_eq!(v["status"], "ok", "{k:?}: {v}");
        assert_eq!(v["error"], Value::Null, "{k:?}");
        assert_eq!(v["attempts"], 1, "{k:?}");
    }
    let fix = |p| &r[&key(p, "fix-only")];
    let brt = |p| &r[&key(p, "brt-only")];
    // fix-only: the empty first finish is sent back, the fix resolves.
    assert_eq!(fix("textutil")["resolved"], true);
    assert_eq!(
        (
            fix("textutil")["rounds"].clone(),
            fix("textutil")["finishes"].clone()
        ),
        (json!(2), json!(2))
    );
    assert_eq!(fix("textutil")["f2p"], Value::Null, "it wrote no test");
    assert_eq!(
        fix("stats")["resolved"],
        false,
        "the wrong fix fails the golden test"
    );
    assert_eq!(fix("stats")["rounds"], 1);
    assert_eq!(fix("bounds")["resolved"], true);
    // brt-only: tests only, so nothing is resolved; F->P of its test.
    for p in ["textutil", "bounds"] {
        assert_eq!(brt(p)["resolved"], false, "{p}");
        assert_eq!(
            brt(p)["f2p"],
            json!({"fails_on_base": true, "passes_on_golden": true}),
            "{p}"
        );
        assert_eq!(brt(p)["rounds"], 1, "{p}");
    }
    assert_eq!(
        brt("stats")["f2p"],
        json!({"fails_on_base": false, "passes_on_golden": true})
    );
    assert_eq!(brt("stats")["rounds"], 2);
    assert_eq!(brt("stats")["budget_exhausted"], true);

    // The follow-up of a rejected finish is the next turn's prompt.
    let run = dir.join("runs/acme__textutil-1/fix-only/0");
    let verdict: Value =
        serde_json::from_slice(&std::fs::read(run.join("round-1/verdict.json")).unwrap()).unwrap();
    assert_eq!(verdict["accepted"], false);
    let prompt2 = std::fs::read_to_string(run.join("round-2/prompt.md")).unwrap();
    assert_eq!(prompt2, verdict["followup"].as_str().unwrap());
    let prompt1 = std::fs::read_to_string(run.join("round-1/prompt.md")).unwrap();
    assert!(
        prompt1.contains("<issue_description>\nslugify(\"Hello World\") gives"),
        "{prompt1}"
    );
    assert!(std::fs::read_to_string(run.join("round-2/agent.log"))
        .unwrap()
        .contains("fix-only round 2 on textutil"));
    let golden: Value =
        serde_json::from_slice(&std::fs::read(run.join("grade/golden.json")).unwrap()).unwrap();
    assert!(
        golden["result"]["stdout"]
            .as_str()
            .unwrap()
            .contains("PASSED tests/test_textutil.py::test_lowercases"),
        "raw logs kept"
    );

    // Predictions in SWE-bench's format, one per run.
    let preds = jsonl(&dir.join("predictions.jsonl"));
    assert_eq!(preds.len(), 6);
    let p = preds
        .iter()
        .find(|p| {
            p["instance_id"] == "acme__bounds-1" && p["model_name_or_path"] == "demo-exp/fix-only/0"
        })
        .unwrap();
    assert!(
        p["model_patch"]
            .as_str()
            .unwrap()
            .contains("+        return lo"),
        "{p}"
    );
    // The manifest records what ran.
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["instance_ids"],
        json!(["acme__textutil-1", "acme__stats-1", "acme__bounds-1"])
    );
    assert_eq!(
        manifest["arms"]["brt-only"]["skill_digest"]
            .as_str()
            .unwrap()
            .len(),
        64
    );
    assert!(manifest["tool"]["binary_sha256"].as_str().unwrap().len() == 64);
    // The database holds a row per round.
    let db = rusqlite::Connection::open(dir.join("results.sqlite")).unwrap();
    let rounds: i64 = db
        .query_row("SELECT COUNT(*) FROM rounds", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rounds, 8);
    // No workspace is left behind.
    assert_eq!(
        std::fs::read_dir(dir.join("work"))
            .map(|d| d.count())
            .unwrap_or(0),
        0
    );

    // A rerun makes nothing again and keeps every result.
    let again = lab.run(&file, "out", &[]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("0 of 6 runs to make"),
        "{}",
        stderr(&again)
    );
    assert_eq!(results(&dir), r);

    // Grading again from the saved patches, with no agent run: a grade a
    // bug got wrong, and a run whose grading failed, come back right.
    let log = run.join("round-2/agent.log");
    let touched = std::fs::metadata(&log).unwrap().modified().unwrap();
    let db = rusqlite::Connection::open(dir.join("results.sqlite")).unwrap();
    db.execute(
        "UPDATE runs SET resolved = 0 WHERE arm = 'fix-only' AND instance_id = 'acme__bounds-1'",
        [],
    )
    .unwrap();
    db.execute(
        "UPDATE runs SET status = 'infra_error', error_class = 'grade', resolved = NULL, \
         f2p_fails_on_base = NULL, f2p_passes_on_golden = NULL \
         WHERE arm = 'brt-only' AND instance_id = 'acme__stats-1'",
        [],
    )
    .unwrap();
    drop(db);
    let graded = common::run(critic().args(["experiment", "grade"]).arg(&dir));
    assert_eq!(graded.status.code(), Some(0), "{}", stderr(&graded));
    assert_eq!(results(&dir), r);
    assert_eq!(
        std::fs::metadata(&log).unwrap().modified().unwrap(),
        touched,
        "no agent ran"
    );
}

#[test]
fn infrastructure_errors_are_retried_logged_and_rerun_until_they_are_results() {
    let lab = Lab::new();
    let file = lab.write(&plan(), "filter: {ids: [acme__bounds-1]}\n");
    // The agent cannot start: every run is an infrastructure error, tried twice.
    let agent = lab.path("agent.py");
    std::fs::rename(&agent, lab.path("agent.moved")).unwrap();
    let out = lab.run(&file, "out", &["--retries", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("retrying"), "{err}");
    assert!(
        err.contains("2 runs ended in an infrastructure error; they are not results"),
        "{err}"
    );
    let dir = lab.path("out");
    for r in results(&dir).values() {
        assert_eq!(r["status"], "infra_error");
        assert_eq!(r["error"]["class"], "agent_start");
        assert_eq!(r["attempts"], 2);
        assert_eq!(r["resolved"], Value::Null, "not a result");
    }
    assert!(
        jsonl(&dir.join("predictions.jsonl")).is_empty(),
        "no prediction from an error"
    );
    // Fixed, a rerun makes exactly the errored runs, and logs every attempt.
    std::fs::rename(lab.path("agent.moved"), &agent).unwrap();
    let out = lab.run(&file, "out", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("2 of 2 runs to make"),
        "{}",
        stderr(&out)
    );
    let r = results(&dir);
    assert_eq!(r[&key("bounds", "fix-only")]["status"], "ok");
    assert_eq!(r[&key("bounds", "fix-only")]["attempts"], 3);
    assert_eq!(r[&key("bounds", "fix-only")]["resolved"], true);
    let db = rusqlite::Connection::open(dir.join("results.sqlite")).unwrap();
    let attempts: Vec<(i64, String)> = db
        .prepare("SELECT attempt, status FROM attempts WHERE arm = 'fix-only' ORDER BY attempt")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let expected: Vec<(i64, String)> = vec![
        (1, "infra_error".into()),
        (2, "infra_error".into()),
        (3, "ok".into()),
    ];
    assert_eq!(attempts, expected);
}

#[test]
fn a_rerun_reuses_what_is_unchanged_and_remakes_exactly_what_changed() {
    let lab = Lab::new();
    let model = usage_model(|_| "ok".into());
    let by = |name: &str| PACKAGES.iter().find(|p| p.name == name).unwrap();
    let (text, bounds) = (by("textutil"), by("bounds"));
    let write = |path: &str, content: &str| {
        let mut files = serde_json::Map::new();
        files.insert(path.into(), content.into());
        json!({"tokens": 1, "write": files})
    };
    // Every turn asks the model once: its calls count the agent's turns.
    let plan = json!({
        "textutil": {
            "fix-only": {"1": {"tokens": 1}, "2": write(text.module, &text.fixed())},
            "brt-only": {"1": write("tests/test_issue.py", text.good_brt)},
        },
        "bounds": {
            "fix-only": {"1": write(bounds.module, &bounds.fixed())},
            "brt-only": {"1": write("tests/test_issue.py", bounds.good_brt)},
        },
        "stats": {},
    });
    let settings = format!(
        "filter: {{ids: [acme__textutil-1, acme__bounds-1]}}\n\
model: {{base_url: \"{}\", model: m, api_key_env: USAGE_MODEL_KEY}}\n",
        model.url
    );
    let file = lab.write(&plan, &settings);
    let key_env = [("USAGE_MODEL_KEY", "k")];
    let calls = |arm: &str| {
        model
            .bodies
            .lock()
            .unwrap()
            .iter()
            .filter(|b| b["arm"] == arm)
            .count()
    };
    let again = |flags: &[&str]| {
        let out = run(critic()
            .args(["experiment", "run"])
            .arg(&file)
            .arg("--output-dir")
            .arg(lab.path("out"))
            .args(flags)
            .envs(key_env));
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stderr(&out)
    };
    again(&[]);
    assert_eq!((calls("fix-only"), calls("brt-only")), (3, 2));

    // The same command again: everything is reused.
    let err = again(&[]);
    assert!(
        err.contains("fix-only: 2 runs reused") && err.contains("brt-only: 2 runs reused"),
        "{err}"
    );
    assert_eq!((calls("fix-only"), calls("brt-only")), (3, 2));

    // A changed arm: a dry run says what would happen and does nothing.
    let yaml = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        yaml.replace("max_iterations: 1}", "max_iterations: 2}"),
    )
    .unwrap();
    let db_before = std::fs::read(lab.path("out/results.sqlite")).unwrap();
    let err = again(&["--dry-run"]);
    assert!(
        err.contains("brt-only: definition changed (max_iterations 1 -> 2): 2 runs re-made")
            && err.contains("fix-only: 2 runs reused")
            && err.contains("nothing was made or moved"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(lab.path("out/results.sqlite")).unwrap(),
        db_before
    );
    assert!(!lab.path("out/superseded").exists());
    assert_eq!((calls("fix-only"), calls("brt-only")), (3, 2));

    // Run: exactly the changed arm's runs are made again; the old ones
    // leave the results for superseded/, with why.
    again(&[]);
    assert_eq!((calls("fix-only"), calls("brt-only")), (3, 4));
    let old: Value = serde_json::from_slice(
        &std::fs::read(
            lab.path("out/superseded/1/runs/acme__textutil-1/brt-only/0/superseded.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(
        old["why"]
            .as_str()
            .unwrap()
            .contains("max_iterations 1 -> 2"),
        "{old}"
    );
    assert_eq!(old["stored"]["run"]["status"], "ok", "{old}");
    assert!(lab
        .path("out/superseded/1/runs/acme__textutil-1/brt-only/0/final.patch")
        .is_file());
    assert_eq!(results(&lab.path("out")).len(), 4);

    // More samples: only the new ones are made.
    std::fs::write(
        &file,
        std::fs::read_to_string(&file).unwrap() + "samples: 2\n",
    )
    .unwrap();
    let err = again(&[]);
    assert!(
        err.contains("fix-only: new: 2 runs made") && err.contains("fix-only: 2 runs reused"),
        "{err}"
    );
    assert_eq!((calls("fix-only"), calls("brt-only")), (6, 6));
    assert_eq!(jsonl(&lab.path("out/results.jsonl")).len(), 8);

    // A removed arm leaves the results, the predictions and the report.
    let yaml = std::fs::read_to_string(&file).unwrap();
    let arm_line = yaml
        .lines()
        .find(|l| l.trim_start().starts_with("brt-only:"))
        .unwrap()
        .to_string();
    std::fs::write(&file, yaml.replace(&format!("{arm_line}\n"), "")).unwrap();
    let err = again(&[]);
    assert!(
        err.contains("brt-only: no longer in the experiment: 4 runs moved to superseded/"),
        "{err}"
    );
    let r = jsonl(&lab.path("out/results.jsonl"));
    assert!(
        r.iter().all(|r| r["arm"] == "fix-only") && r.len() == 4,
        "{r:#?}"
    );
    let report = std::fs::read_to_string(lab.path("out/report.html")).unwrap();
    assert!(
        !report.contains("brt-only"),
        "the report still shows brt-only"
    );
    assert!(lab
        .path("out/superseded/2/runs/acme__bounds-1/brt-only/1/superseded.json")
        .is_file());
    assert!(lab.path("out/manifest.1.json").is_file());
}

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
fn an_agent_past_its_turn_limit_or_its_turn_budget_is_an_agent_failure() {
    let lab = Lab::new();
    let text = PACKAGES.iter().find(|p| p.name == "textutil").unwrap();
    let plan = json!({
        // Sleeps past the 2 s turn limit, leaving its fix half done.
        "textutil": {"fix-only": {"1": {"write": {text.module: text.fixed()}, "sleep": 30}}},
        // Never writes anything: fix-only rejects every empty finish.
        "stats": {},
        "bounds": {},
    });
    let file = lab.write(
        &plan,
        "filter: {ids: [acme__textutil-1, acme__stats-1]}\nbudget: {turns: 2}\n",
    );
    let yaml = std::fs::read_to_string(&file)
        .unwrap()
        .replace("timeout: 60s", "timeout: 2s");
    std::fs::write(&file, yaml).unwrap();
    let started = std::time::Instant::now();
    let out = lab.run(&file, "out", &["--workers", "2"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "agent failures are results: {}",
        stderr(&out)
    );
    assert!(
        started.elapsed().as_secs() < 25,
        "the sleeping agent was killed"
    );
    let r = results(&lab.path("out"));
    let slow = &r[&key("textutil", "fix-only")];
    assert_eq!(slow["status"], "agent_fail");
    assert_eq!(slow["error"]["class"], "turn_timeout");
    assert_eq!(
        slow["resolved"], true,
        "what it left is graded all the same"
    );
    let idle = &r[&key("stats", "fix-only")];
    assert_eq!(idle["status"], "agent_fail");
    assert_eq!(idle["error"]["class"], "turn_budget");
    assert_eq!(idle["rounds"], 2);
    assert_eq!(idle["resolved"], false);
}

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
fn a_run_interrupted_midway_starts_over_cleanly() {
    let lab = Lab::new();
    let text = PACKAGES.iter().find(|p| p.name == "textutil").unwrap();
    let mut plan = plan();
    // The first finish of this run takes long enough to be interrupted.
    plan["textutil"]["fix-only"]["1"] = json!({"sh": "touch \"$HOME/../started\"", "sleep": 8});
    plan["textutil"]["fix-only"]["2"] = json!({"write": {text.module: text.fixed()}});
    let file = lab.write(&plan, "filter: {ids: [acme__textutil-1]}\n");
    let mut child = critic()
        .args(["experiment", "run"])
        .arg(&file)
        .arg("--output-dir")
        .arg(lab.path("out"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The agent says it is under way, then sleeps.
    let started = lab.path("out/runs/acme__textutil-1/fix-only/0/agent/started");
    let t = std::time::Instant::now();
    while !started.exists() {
        assert!(t.elapsed().as_secs() < 60, "the agent never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert!(!status.success());
    let mut said = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut said).unwrap();
    assert!(
        said.contains("experiment: interrupted") && said.contains("run the same command again"),
        "Ctrl-C says what was kept and how to go on: {said}"
    );
    assert!(
        t.elapsed().as_secs() < 15,
        "the interrupt ended the sleeping agent too"
    );
    // The agent's process group is gone with it.
    let leftover = Command::new("pgrep")
        .args(["-f", "agent.py"])
        .output()
        .unwrap();
    let pids = String::from_utf8_lossy(&leftover.stdout).trim().to_string();
    assert!(
        pids.is_empty()
            || !pids
                .lines()
                .any(|p| std::fs::read_to_string(format!("/proc/{p}/cmdline"))
                    .unwrap_or_default()
                    .contains(lab.dir.path().to_str().unwrap())),
        "{pids}"
    );
    let work = lab.path("out/work");
    assert_eq!(
        std::fs::read_dir(&work).map(|d| d.count()).unwrap_or(0),
        0,
        "the interrupted run's workspace is removed"
    );
    let out = lab.run(&file, "out", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = results(&lab.path("out"));
    assert_eq!(r[&key("textutil", "fix-only")]["status"], "ok");
    assert_eq!(
        r[&key("textutil", "fix-only")]["attempts"],
        1,
        "an interrupted run left no attempt"
    );
    assert_eq!(r[&key("textutil", "brt-only")]["status"], "ok");
}

/// The script for one instance (textutil) and both arms, run in order
/// (one worker): fix-only's empty first finish is sent back, then the fix;
/// brt-only writes a test that fails on the bug. `shell` makes a tool call
/// that runs a command in the workspace.
fn agent_script(shell: impl Fn(&str) -> Value) -> Value {
    json!([
        {"text": "Nothing to change."},
        shell("sed -i 's/join(words)/join(w.lower() for w in words)/' textutil/__init__.py && env > \"$HOME/agent-env.txt\""),
        {"text": "Fixed slugify."},
        shell("printf 'from textutil import slugify\\n\\n\\ndef test_issue():\\n    assert slugify(\"Hello World\") == \"hello-world\"\\n' > tests/test_issue.py"),
        {"text": "Test written."},
    ])
}

/// Run the two-arm experiment on textutil with a real agent behind
/// `adapter`, its model the stand-in; check what came out.
fn real_agent_experiment(adapter: &str, program: &Path, standin: &Standin) -> (Lab, Value) {
    real_agent_experiment_with(adapter, program, standin, &[])
}

/// [`real_agent_experiment`] with `env` added to `critic`'s.
fn real_agent_experiment_with(
    adapter: &str,
    program: &Path,
    standin: &Standin,
    env: &[(&str, &str)],
) -> (Lab, Value) {
    let lab = Lab::new();
    let agent = format!(
        "agent:\n  adapter: {adapter}\n  program: {}\n  timeout: 300s\n\
model: {{base_url: \"{}\", model: stand-in-model, api_key_env: STANDIN_API_KEY, \
price: {{input_per_mtok: 3, output_per_mtok: 15}}}}\n",
        program.display(),
        standin.url()
    );
    let file = lab.write_with(&agent, "filter: {ids: [acme__textutil-1]}\n");
    let mut env = env.to_vec();
    env.push(("STANDIN_API_KEY", "stand-in-key"));
    let out = lab.run_with_env(&file, "out", &env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = results(&lab.path("out"));
    let fix = &r[&key("textutil", "fix-only")];
    assert_eq!(fix["status"], "ok", "{fix}");
    assert_eq!(fix["resolved"], true, "{fix}");
    assert_eq!(
        (fix["finishes"].clone(), fix["rounds"].clone()),
        (json!(2), json!(2)),
        "{fix}"
    );
    let brt = &r[&key("textutil", "brt-only")];
    assert_eq!(brt["status"], "ok", "{brt}");
    assert_eq!(
        brt["f2p"],
        json!({"fails_on_base": true, "passes_on_golden": true}),
        "{brt}"
    );
    // The follow-up of the rejected stop reached the model, after that stop.
    let turns = standin.turns();
    assert_eq!(turns.len(), 5, "{turns:#?}");
    let run = lab.path("out/runs/acme__textutil-1/fix-only/0");
    let first: Value =
        serde_json::from_slice(&std::fs::read(run.join("round-1/verdict.json")).unwrap()).unwrap();
    assert_eq!(first["accepted"], false);
    let followup = first["followup"].as_str().unwrap();
    let seen = |t: &Value| {
        t["body"]
            .to_string()
            .contains(&followup[..40.min(followup.len())].replace('"', "\\\""))
    };
    assert!(!seen(&turns[0]) && seen(&turns[1]), "{followup}");
    // Every finish's patch is kept beside its verdict (`critic hook` or
    // `critic check --verdict-log` saves them).
    assert_eq!(
        std::fs::read_to_string(run.join("round-1/patch.diff")).unwrap(),
        ""
    );
    assert!(std::fs::read_to_string(run.join("round-2/patch.diff"))
        .unwrap()
        .contains("+    return \"-\".join(w.lower() for w in words)"));
    // Tokens are the runner's count of what the model answered (through
    // the run's proxy), priced by the model's price.
    let tokens = fix["tokens"].as_u64().expect("the proxy counted usage");
    assert!(tokens > 0);
    assert_eq!(fix["usage_source"], "proxy", "{fix}");
    let requests = standin.requests();
    let answered: u64 = requests
        .iter()
        .filter_map(|r| r.get("usage"))
        .map(|u| u["input_tokens"].as_u64().unwrap() + u["output_tokens"].as_u64().unwrap())
        .sum();
    if answered > 0 {
        assert_eq!(
            tokens + r[&key("textutil", "brt-only")]["tokens"].as_u64().unwrap(),
            answered
        );
    }
    // The model got the real key, the agent only its run's token: neither
    // its environment nor any file of the run holds the key.
    assert!(!requests.is_empty());
    for r in &requests {
        assert_eq!(r["key"], "stand-in-key", "{r}");
    }
    let holders = files_holding(&lab.path("out"), b"stand-in-key");
    assert!(holders.is_empty(), "the key is in {holders:?}");
    if let Ok(env) = std::fs::read_to_string(run.join("agent/home/agent-env.txt")) {
        assert!(
            env.contains("critic-run-"),
            "the agent has its token: {env}"
        );
    }
    let cost = fix["cost"].as_f64().unwrap();
    assert!(
        cost >= tokens as f64 * 3e-6 && cost <= tokens as f64 * 15e-6,
        "{fix}"
    );
    // The agent's own transcript is kept and readable.
    // OpenHands keeps its events as a directory of its conversation.
    let conversation = std::fs::read_dir(run.join("agent/openhands"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("events"))
        .next();
    let transcript = ["transcript.jsonl", "transcript.json"]
        .iter()
        .map(|f| run.join(f))
        .find(|f| f.is_file())
        .or(conversation)
        .expect("the agent's transcript is kept");
    let events = run_events(&transcript);
    assert!(events.iter().any(|e| e["kind"] == "finish"), "{events:#?}");
    (lab, r[&key("textutil", "fix-only")].clone())
}

/// The files under `dir` that hold `needle`.
fn files_holding(dir: &Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let (path, kind) = (e.path(), e.file_type().unwrap());
            if kind.is_dir() {
                todo.push(path);
            } else if kind.is_file()
                && std::fs::read(&path)
                    .unwrap_or_default()
                    .windows(needle.len())
                    .any(|w| w == needle)
            {
                found.push(path);
            }
        }
    }
    found
}

/// A replay of `out` into `again` answers every call from the recording,
/// with the model stopped: results and final patches equal.
fn replays_equal(lab: &Lab, file: &Path, out: &str, again: &str) {
    let replayed = run(critic()
        .args(["experiment", "run"])
        .arg(file)
        .arg("--output-dir")
        .arg(lab.path(again))
        .arg("--replay")
        .arg(lab.path(out)));
    assert_eq!(replayed.status.code(), Some(0), "{}", stderr(&replayed));
    let (before, after) = (results(&lab.path(out)), results(&lab.path(again)));
    for (k, was) in &before {
        let now = &after[k];
        for field in [
            "status",
            "resolved",
            "f2p",
            "finishes",
            "rounds",
            "tokens",
            "cost",
            "model_calls",
            "error",
        ] {
            assert_eq!(was[field], now[field], "{k:?} {field}: {was} vs {now}");
        }
        let patch = |o: &str| {
            std::fs::read(lab.path(&format!("{o}/runs/{}/{}/0/final.patch", k.0, k.1))).unwrap()
        };
        assert_eq!(patch(out), patch(again), "{k:?}: the final patches differ");
    }
}

fn run_events(transcript: &Path) -> Vec<Value> {
    let out = run(critic()
        .args(["events", "--output", "json"])
        .arg(transcript));
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn claude_code_runs_the_arms_with_the_critic_as_its_stop_hook() {
    let bash = |command: &str| json!({"tool_calls": [{"name": "Bash", "input": {"command": command, "description": "Edit"}}]});
    let standin = Standin::start("claude_code", &agent_script(bash));
    let (lab, _) = real_agent_experiment("claude-code", &npm_bin("claude"), &standin);
    // A user-scope hook in the agent's own home, asking the session's
    // judge (the agent runs confined, where a check cannot).
    let settings =
        lab.path("out/runs/acme__textutil-1/fix-only/0/agent/home/.claude/settings.json");
    let settings = std::fs::read_to_string(settings).unwrap();
    assert!(
        settings.contains("--server http://127.0.0.1:") && !settings.contains("verdict-log"),
        "{settings}"
    );
    let ws_files =
        std::fs::read_to_string(lab.path("out/runs/acme__textutil-1/fix-only/0/final.patch"))
            .unwrap();
    assert!(
        !ws_files.contains(".claude"),
        "nothing of the hook in the patch: {ws_files}"
    );
    // With the model stopped, the recording answers a replay in full.
    drop(standin);
    let file = lab.path("exp.yaml");
    replays_equal(&lab, &file, "out", "again");
    // An arm whose task changed departs at the first call that carries the
    // task: its run ends `replay_diverged` there, the other replays.
    let recorded = jsonl(&lab.path("out/runs/acme__textutil-1/fix-only/0/model.jsonl"));
    let first = recorded
        .iter()
        .find(|e| e["request"].to_string().contains("slugs must be lowercase"))
        .expect("a call carries the task")["call"]
        .clone();
    let task = lab.path("changed-task.md.j2");
    std::fs::write(
        &task,
        std::fs::read_to_string(root().join("skills/fix-only/templates/task.md.j2")).unwrap()
            + "\nKeep the change small.\n",
    )
    .unwrap();
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "fix-only: {skill: ",
        &format!("fix-only: {{task: {}, skill: ", task.display()),
    );
    std::fs::write(&file, text).unwrap();
    let changed = run(critic()
        .args(["experiment", "run"])
        .arg(&file)
        .arg("--output-dir")
        .arg(lab.path("changed"))
        .arg("--replay")
        .arg(lab.path("out")));
    assert_eq!(changed.status.code(), Some(2), "{}", stderr(&changed));
    let r = results(&lab.path("changed"));
    let fix = &r[&key("textutil", "fix-only")];
    assert_eq!(fix["status"], "replay_diverged", "{fix}");
    let why = fix["error"]["message"].as_str().unwrap();
    assert!(
        why.starts_with(&format!("round 1, call {first}: ")),
        "{why}"
    );
    assert_eq!(r[&key("textutil", "brt-only")]["status"], "ok");
}

/// The real agents, installed by the tests inside this checkout, with the
/// checkout under the user's home (its parent made `HOME`), as a researcher
/// keeps projects: the confined turns cover the home and bind back the
/// agents' programs with their packages, the interpreter and `critic`.
#[test]
fn the_real_agents_run_from_a_checkout_under_the_home() {
    let home = root().parent().unwrap().to_path_buf();
    let real_home = std::env::var_os("HOME").map(PathBuf::from).unwrap();
    let toolchain = |var: &str, usual: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .unwrap_or_else(|| real_home.join(usual))
            .to_string_lossy()
            .into_owned()
    };
    let (cargo, rustup) = (
        toolchain("CARGO_HOME", ".cargo"),
        toolchain("RUSTUP_HOME", ".rustup"),
    );
    let env = [
        ("HOME", home.to_str().unwrap()),
        ("CARGO_HOME", cargo.as_str()),
        ("RUSTUP_HOME", rustup.as_str()),
    ];
    let bash = |command: &str| json!({"tool_calls": [{"name": "Bash", "input": {"command": command, "description": "Edit"}}]});
    let standin = Standin::start("claude_code", &agent_script(bash));
    real_agent_experiment_with("claude-code", &npm_bin("claude"), &standin, &env);
    let exec = |command: &str| json!({"tool_calls": [{"name": "exec_command", "input": {"cmd": command}}]});
    let standin = Standin::start("codex", &agent_script(exec));
    real_agent_experiment_with("codex", &npm_bin("codex"), &standin, &env);
}

#[test]
fn codex_runs_the_arms_with_the_critic_as_its_stop_hook() {
    let exec = |command: &str| json!({"tool_calls": [{"name": "exec_command", "input": {"cmd": command}}]});
    let standin = Standin::start("codex", &agent_script(exec));
    let (lab, fix) = real_agent_experiment("codex", &npm_bin("codex"), &standin);
    // The stand-in answers each of the run's three calls with 100 input and
    // 20 output tokens; Codex keeps the running total.
    assert_eq!(fix["tokens"], 360);
    assert!((fix["cost"].as_f64().unwrap() - (300.0 * 3e-6 + 60.0 * 15e-6)).abs() < 1e-12);
    let hooks = lab.path("out/runs/acme__textutil-1/fix-only/0/agent/codex-home/hooks.json");
    assert!(std::fs::read_to_string(hooks)
        .unwrap()
        .contains("--server http://127.0.0.1:"));
    drop(standin);
    replays_equal(&lab, &lab.path("exp.yaml"), "out", "again");
}

#[test]
fn shards_merged_equal_one_run_and_a_disagreeing_overlap_is_refused() {
    let lab = Lab::new();
    let file = lab.write(&plan(), "");
    let whole = lab.run(&file, "whole", &["--workers", "2"]);
    assert_eq!(whole.status.code(), Some(0), "{}", stderr(&whole));
    for shard in ["0/2", "1/2"] {
        let out = format!("shard{}", &shard[..1]);
        let o = lab.run(&file, &out, &["--shard", shard]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let (a, b) = (results(&lab.path("shard0")), results(&lab.path("shard1")));
    assert_eq!(a.len() + b.len(), 6, "a partition");
    assert!(a.keys().all(|k| !b.contains_key(k)));
    let merge = |inputs: &[&str], out: &str| {
        run(critic()
            .args(["experiment", "merge"])
            .args(inputs.iter().map(|i| lab.path(i)))
            .arg("--output-dir")
            .arg(lab.path(out)))
    };
    let m = merge(&["shard0", "shard1"], "merged");
    assert_eq!(m.status.code(), Some(0), "{}", stderr(&m));
    assert_eq!(results(&lab.path("merged")), results(&lab.path("whole")));
    let preds = |d: &str| {
        let mut p = jsonl(&lab.path(d).join("predictions.jsonl"));
        p.sort_by_key(|v| v.to_string());
        p
    };
    assert_eq!(preds("merged"), preds("whole"));
    assert!(lab
        .path("merged/runs/acme__stats-1/brt-only/0/round-2/verdict.json")
        .is_file());
    // A manifest without its shard is the whole run's.
    let manifest = |d: &str| -> Value {
        serde_json::from_slice(&std::fs::read(lab.path(d).join("manifest.json")).unwrap()).unwrap()
    };
    assert_eq!(manifest("merged")["shard"], Value::Null);
    // Merging again changes nothing.
    let again = merge(&["shard0", "shard1"], "merged");
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    // A shard whose run disagrees with the merge is refused, and nothing of it taken.
    let db = rusqlite::Connection::open(lab.path("shard1/results.sqlite")).unwrap();
    db.execute("UPDATE runs SET resolved = 1 - resolved", [])
        .unwrap();
    drop(db);
    let before = results(&lab.path("merged"));
    let clash = merge(&["shard0", "shard1"], "merged");
    assert_eq!(clash.status.code(), Some(2));
    assert!(
        stderr(&clash).contains("with other results"),
        "{}",
        stderr(&clash)
    );
    assert_eq!(results(&lab.path("merged")), before);
    // Outputs of different experiments do not merge.
    let other = lab.write(&plan(), "seed: 3\n");
    let o = lab.run(&other, "other", &["--shard", "0/2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let e = merge(&["shard0", "other"], "merged2");
    assert_eq!(e.status.code(), Some(2));
    assert!(
        stderr(&e).contains("not shards of one experiment"),
        "{}",
        stderr(&e)
    );
}

#[test]
fn the_report_tables_and_charts_hold_the_runs_numbers_in_a_real_browser() {
    let lab = Lab::new();
    let file = lab.write(&plan(), "");
    let out = lab.run(
        &file,
        "out",
        &["--workers", "2", "--control", "gold", "--control", "empty"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let md = common::run(
        critic()
            .args(["experiment", "report", "--format", "markdown"])
            .arg(lab.path("out")),
    );
    assert!(md.status.success(), "{}", stderr(&md));
    let md = String::from_utf8(md.stdout).unwrap();
    // fix-only resolves textutil and bounds; brt-only resolves nothing but
    // two of its three tests are F->P.
    assert!(
        md.contains("| fix-only | 3 | 66.7% [20.8, 93.9] (2/3) | – |"),
        "{md}"
    );
    assert!(
        md.contains("| brt-only | 3 | 0.0% [0.0, 56.1] (0/3) | 66.7% [20.8, 93.9] (2/3) |"),
        "{md}"
    );
    assert!(
        md.contains("| brt-only | fix-only | 3 | 2 | 0 | -66.7 pp | 0.5000 |"),
        "{md}"
    );
    // The controls: the golden patch resolves every instance, no change none.
    assert!(
        md.contains("| @empty | 3 | 0.0% [0.0, 56.1] (0/3) |"),
        "{md}"
    );
    assert!(
        md.contains("| @gold | 3 | 100.0% [43.9, 100.0] (3/3) |"),
        "{md}"
    );
    assert_eq!(jsonl(&lab.path("out/predictions.jsonl")).len(), 12);
    let by_brt = common::run(
        critic()
            .args([
                "experiment",
                "report",
                "--format",
                "markdown",
                "--baseline",
                "brt-only",
            ])
            .arg(lab.path("out")),
    );
    assert!(String::from_utf8_lossy(&by_brt.stdout)
        .contains("| fix-only | brt-only | 3 | 0 | 2 | +66.7 pp |"));
    let bad = common::run(
        critic()
            .args(["experiment", "report", "--baseline", "nope"])
            .arg(lab.path("out")),
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("--baseline nope: no such arm (arms: fix-only, brt-only)"),
        "{}",
        stderr(&bad)
    );
    let summary: Value =
        serde_json::from_slice(&std::fs::read(lab.path("out/summary.json")).unwrap()).unwrap();
    assert_eq!(summary["arms"][0]["resolved"]["k"], 2);

    report_opens_and_leads_to_every_run(&lab.path("out"));
}

/// The path a `file://` link names, and its fragment.
fn linked_file(href: &str) -> (PathBuf, Option<String>) {
    let rest = href
        .strip_prefix("file://")
        .unwrap_or_else(|| panic!("{href}: a link off the output directory"));
    let (path, fragment) = match rest.split_once('#') {
        Some((p, f)) => (p, Some(f.to_string())),
        None => (rest, None),
    };
    (PathBuf::from(path), fragment)
}

/// `out`'s report in a real Chromium 1400 px wide: no errors, nothing wider
/// than the window, type a person reads, the controls out of the rounds
/// chart, and a grid whose every cell opens its run's page, which holds
/// what the run's files hold.
fn report_opens_and_leads_to_every_run(out: &Path) {
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for fetch in ["src=\"http", "href=\"http", "@import", "<script", "url("] {
        assert!(!html.contains(fetch), "the report has {fetch}");
    }
    let chromium = browser::Chromium::start(1400, 1000);
    let page = chromium.open(&out.join("report.html"));
    assert_eq!(page.errors(), Vec::<String>::new());
    let (width, window) = page.overflow();
    assert!(
        width <= window,
        "the page is {width} px wide in a {window} px window"
    );
    let sizes = page.eval(
        "['body', '#arms td', '#runs td', '#rounds figcaption', 'p'].map(s => \
         parseFloat(getComputedStyle(document.querySelector(s)).fontSize))",
    );
    for size in sizes.as_array().unwrap() {
        assert!(size.as_f64().unwrap() >= 15.0, "type of {size} px: {sizes}");
    }
    // The charts' words as drawn, at the size the page shows them.
    let chart_type = page.eval(
        "Math.min(...Array.from(document.querySelectorAll('svg text')) \
         .filter(t => t.textContent.trim()).map(t => t.getBoundingClientRect().height))",
    );
    assert!(
        chart_type.as_f64().unwrap() >= 14.0,
        "chart text {chart_type} px high"
    );
    // Resolved, F→P, rounds, and the critic's accuracy per round (two).
    assert_eq!(
        page.eval("document.querySelectorAll('figure svg').length"),
        5
    );
    assert_eq!(
        page.eval(
            "document.querySelectorAll('#rejected-resolving svg, #accepted-unresolved svg').length"
        ),
        2
    );
    // What each arm is: its skill, budget and role, as the page shows them.
    let defs = page.eval(
        "Array.from(document.querySelectorAll('#arm-defs tr'), r => Array.from(r.cells, c => c.textContent)).slice(1)",
    );
    let defs = defs.as_array().unwrap();
    let row = |arm: &str| {
        defs.iter()
            .find(|r| r[0] == arm)
            .unwrap_or_else(|| panic!("{arm}: {defs:?}"))
    };
    assert!(
        row("fix-only")[1]
            .as_str()
            .unwrap()
            .starts_with("fix-only 0.1.0"),
        "{defs:?}"
    );
    assert_eq!(row("brt-only")[2], "1", "max_iterations as the arm set it");
    assert!(
        row("brt-only")[3]
            .as_str()
            .unwrap()
            .contains("brt-only (hard gate)"),
        "{defs:?}"
    );
    assert!(
        row("brt-only")[6]
            .as_str()
            .unwrap()
            .starts_with("writes tests only"),
        "{defs:?}"
    );
    assert!(
        row("fix-only")[6].as_str().unwrap().starts_with("fixes"),
        "{defs:?}"
    );
    // Each count of the main table links to exactly the runs it counts.
    let linked = page.eval(
        "Array.from(document.querySelectorAll('#arms td:nth-child(-n+7) a'), a => [a.textContent, \
         document.querySelectorAll(a.getAttribute('href') + ' a').length])",
    );
    let linked = linked.as_array().unwrap();
    assert!(linked.len() >= 12, "{linked:?}");
    // (Every number links; a count's list holds exactly its runs.)
    assert_eq!(
        page.eval("document.querySelectorAll('#arms tr:nth-child(2) a').length"),
        11
    );
    for pair in linked {
        let text = pair[0].as_str().unwrap();
        let counted: Option<u64> = match text.rsplit_once('(') {
            Some((_, k)) => k.split('/').next().unwrap().parse().ok(),
            None => text.parse().ok(),
        };
        if let Some(counted) = counted {
            assert_eq!(pair[1].as_u64().unwrap(), counted, "{text}: {linked:?}");
        }
    }
    // Every number of the page that links to a list (the paired table,
    // the charts, the critic's accuracy, failures) names as many runs as
    // its list holds; a pair's item links both of its runs.
    let numbers = page.eval(
        "Array.from(document.querySelectorAll('a[href^=\"#\"]'), a => { \
         const t = document.getElementById(a.getAttribute('href').slice(1)); \
         return [a.textContent, t ? t.id : null, t && t.classList.contains('behind') \
         ? t.querySelectorAll('a').length : null]; })",
    );
    let mut checked = 0;
    for n in numbers.as_array().unwrap() {
        let (Some(count), Some(id), Some(links)) = (
            n[0].as_str().and_then(|t| t.parse::<u64>().ok()),
            n[1].as_str(),
            n[2].as_u64(),
        ) else {
            continue;
        };
        let per_item = if id.starts_with("paired-") { 2 } else { 1 };
        assert_eq!(links, count * per_item, "{n}");
        checked += 1;
    }
    assert!(checked >= 30, "{numbers}");
    // The paired table: every number links to the pairs behind it.
    assert_eq!(
        page.eval("Array.from(document.querySelectorAll('#paired tr:nth-child(2) td'), c => c.querySelector('a') !== null)"),
        json!([false, false, true, true, true, true, true])
    );
    // The charts say where their numbers come from.
    assert_eq!(
        page.eval("document.querySelector('#resolved .from').textContent"),
        "Behind the bars: fix-only: 2 of 3; brt-only: 0 of 3; @empty: 0 of 3; @gold: 3 of 3."
    );
    assert_eq!(
        page.eval("document.querySelector('#rounds .from').textContent"),
        "From the results of fix-only, brt-only."
    );
    assert_eq!(
        page.eval("document.querySelector('#rounds figcaption').textContent"),
        "fix-only brt-only",
        "the rounds chart holds the arms with an agent, not the controls"
    );
    // Every anchor on the page is there.
    let anchors = page.eval(
        "Array.from(document.querySelectorAll('a[href^=\"#\"]'), \
         a => document.getElementById(a.getAttribute('href').slice(1)) !== null)",
    );
    assert!(
        anchors.as_array().unwrap().iter().all(|a| a == true),
        "{anchors}"
    );
    // The grid: one chip per run, its class the run's outcome.
    let chips = page
        .eval("Array.from(document.querySelectorAll('#runs a.run'), a => [a.className, a.href])");
    let chips = chips.as_array().unwrap();
    let results = jsonl(&out.join("results.jsonl"));
    assert_eq!(chips.len(), results.len(), "one chip per run");
    for r in &results {
        let dir = pluggable_critic::experiment::run_dir(
            out,
            &pluggable_critic::experiment::db::RunKey {
                instance_id: r["instance_id"].as_str().unwrap().into(),
                arm: r["arm"].as_str().unwrap().into(),
                sample: r["sample"].as_u64().unwrap() as u32,
            },
        );
        let href = format!("file://{}", dir.join("run.html").display());
        let chip = chips
            .iter()
            .find(|c| c[1] == href.as_str())
            .unwrap_or_else(|| panic!("no chip opens {href}"));
        let class = match (r["status"].as_str().unwrap(), r["resolved"].as_bool()) {
            ("ok", Some(true)) => "run resolved",
            ("ok", _) => "run unresolved",
            ("agent_fail", _) => "run agent-fail",
            _ => "run infra-error",
        };
        assert_eq!(chip[0], class, "{href}");
        run_page_shows_its_files(&chromium, &dir);
    }
}

/// A run's page against the run's own files.
fn run_page_shows_its_files(chromium: &browser::Chromium, dir: &Path) {
    let page = chromium.open(&dir.join("run.html"));
    assert_eq!(page.errors(), Vec::<String>::new(), "{}", dir.display());
    let (width, window) = page.overflow();
    assert!(width <= window, "{}: {width} px wide", dir.display());
    for href in page.links() {
        let (file, fragment) = linked_file(&href);
        assert!(
            file.is_file(),
            "{}: a link to {href}, which is not there",
            dir.display()
        );
        if let Some(f) = fragment {
            let target = std::fs::read_to_string(&file).unwrap();
            assert!(target.contains(&format!("id=\"{f}\"")), "{href}: no #{f}");
        }
    }
    let text = |selector: &str| {
        page.eval(&format!(
            "document.querySelector('{selector}')?.textContent ?? null"
        ))
    };
    // The arm it ran, by its skill; the status and the grade apart.
    let arm = dir.parent().unwrap().file_name().unwrap().to_string_lossy();
    // (A control's directory is its name escaped: `_gold~<hash>`.)
    if !arm.contains('~') {
        let facts = page.eval(
            "Array.from(document.querySelectorAll('.facts tr'), r => r.textContent).join('\\n')",
        );
        assert!(
            facts
                .as_str()
                .unwrap()
                .contains(&format!("arm{arm}: skill {arm} 0.1.0")),
            "{facts}"
        );
    }
    // Each round: the verdict, the follow-up the agent got, the patch judged.
    if let Ok(record) = std::fs::read(dir.join("run.json")) {
        let record: Value = serde_json::from_slice(&record).unwrap();
        for round in record["rounds"].as_array().unwrap() {
            let k = round["round"].as_u64().unwrap();
            let verdict = text(&format!("#round-{k} h2 .chip"));
            assert_eq!(verdict, round["verdict"], "{}: round {k}", dir.display());
            assert_eq!(
                text(&format!("#round-{k} pre.text")),
                round["followup"],
                "{}: round {k}'s follow-up",
                dir.display()
            );
            let patch = std::fs::read_to_string(dir.join(format!("round-{k}/patch.diff")));
            match patch {
                Ok(patch) if patch.trim().is_empty() => {
                    let said = text(&format!("#round-{k} .empty-patch"));
                    assert!(said.as_str().unwrap().starts_with("Empty"), "{said}");
                }
                Ok(patch) => {
                    let shown = text(&format!("#round-{k} pre.diff"));
                    assert_eq!(shown.as_str().unwrap().trim_end(), patch.trim_end());
                }
                Err(_) => {}
            }
        }
    }
    // The grading, id by id, as golden.json has it.
    let golden: Value =
        serde_json::from_slice(&std::fs::read(dir.join("grade/golden.json")).unwrap()).unwrap();
    let rows = page.eval(
        "Array.from(document.querySelectorAll('#ids tr'), r => Array.from(r.cells, c => c.textContent)).slice(1)",
    );
    let ids = golden["grade"]["ids"].as_array().unwrap();
    assert_eq!(
        rows.as_array().unwrap().len(),
        ids.len(),
        "{}",
        dir.display()
    );
    for (row, id) in rows.as_array().unwrap().iter().zip(ids) {
        assert_eq!(row[0], id["list"]);
        assert!(row[1]
            .as_str()
            .unwrap()
            .starts_with(id["id"].as_str().unwrap()));
        assert_eq!(row[2], id["status"]);
        assert_eq!(row[4], if id["success"] == true { "✓" } else { "✗" });
    }
}

#[test]
fn token_budgets_end_a_run_and_the_cost_cap_stops_new_ones() {
    let lab = Lab::new();
    let step = json!({"tokens": 80});
    let plan = json!({
        // Never writes anything, so fix-only rejects every finish.
        "textutil": {"fix-only": {"1": step, "2": step, "3": step},
                     "brt-only": {"1": step}},
        "stats": {}, "bounds": {},
    });
    let file = lab.write(
        &plan,
        "filter: {ids: [acme__textutil-1]}\nbudget: {tokens: 100}\n",
    );
    let out = lab.run(&file, "out", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = results(&lab.path("out"));
    let fix = &r[&key("textutil", "fix-only")];
    assert_eq!(fix["status"], "agent_fail", "{fix}");
    assert_eq!(fix["error"]["class"], "token_budget");
    assert_eq!(
        (fix["rounds"].clone(), fix["tokens"].clone()),
        (json!(2), json!(160))
    );

    // Through the run's model proxy the runner counts the model's answers
    // itself, and refuses the call that would go past the budget: the
    // third round's call, with 160 of 100 tokens used.
    let UsageModel { url, heads, .. } = usage_model(|_| "ok".into());
    let model = format!("model: {{base_url: \"{url}\", model: m, api_key_env: USAGE_MODEL_KEY}}\n");
    let file = lab.write(
        &plan,
        &format!("filter: {{ids: [acme__textutil-1]}}\n{model}budget: {{tokens: 100}}\n"),
    );
    let out = lab.run_with_env(&file, "proxied", &[("USAGE_MODEL_KEY", "the-real-key")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = results(&lab.path("proxied"));
    let fix = &r[&key("textutil", "fix-only")];
    assert_eq!(
        (fix["status"].as_str(), fix["error"]["class"].as_str()),
        (Some("agent_fail"), Some("budget")),
        "{fix}"
    );
    assert!(
        fix["error"]["message"]
            .as_str()
            .unwrap()
            .contains("160 tokens used, budget.tokens is 100"),
        "{fix}"
    );
    assert_eq!(
        (fix["rounds"].clone(), fix["tokens"].clone()),
        (json!(3), json!(160))
    );
    assert_eq!(fix["usage_source"], "proxy", "{fix}");
    // The model saw the real key, on each of the calls the proxy let through.
    let fix_calls = jsonl(&lab.path("proxied/runs/acme__textutil-1/fix-only/0/model.jsonl"));
    assert_eq!(fix_calls.len(), 3);
    assert_eq!(
        fix_calls[2]["refused"]
            .as_str()
            .map(|s| s.contains("budget")),
        Some(true)
    );
    assert!(heads
        .lock()
        .unwrap()
        .iter()
        .all(|h| h.to_ascii_lowercase().contains("x-api-key: the-real-key")));

    // Priced at a dollar a token, the first run's first call costs $80:
    // past the cap of $50, its next call is refused and the second run is
    // not started; a rerun with a higher cap makes it.
    let priced = format!(
        "model: {{base_url: \"{url}\", model: m, price: {{input_per_mtok: 1000000, output_per_mtok: 0}}}}\n"
    );
    let capped =
        format!("filter: {{ids: [acme__textutil-1]}}\n{priced}budget: {{total_cost: 50}}\n");
    let file = lab.write(&plan, &capped);
    let out = lab.run(&file, "capped", &["--workers", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("1 runs were not started"),
        "{}",
        stderr(&out)
    );
    let r = results(&lab.path("capped"));
    assert_eq!(r.len(), 1, "{r:#?}");
    let first = r.values().next().unwrap();
    assert_eq!(first["cost"], json!(80.0), "{first}");
    assert_eq!(first["error"]["class"], "budget", "{first}");
    let file = lab.write(&plan, &capped.replace("total_cost: 50", "total_cost: 1000"));
    let out = lab.run(&file, "capped", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(results(&lab.path("capped")).len(), 2);
}

/// The model's answer for a request of the command agent: the files to
/// write for what it asks (textutil's fix, or its reproduction test).
fn textutil_files(asked: &Value) -> String {
    let text = PACKAGES.iter().find(|p| p.name == "textutil").unwrap();
    let mut files = serde_json::Map::new();
    match asked["ask"].as_str() {
        Some("fix") => files.insert(text.module.into(), text.fixed().into()),
        Some("test") => files.insert("tests/test_issue.py".into(), text.good_brt.into()),
        _ => None,
    };
    Value::Object(files).to_string()
}

#[test]
fn a_command_agents_experiment_replays_from_its_recording_with_the_model_stopped() {
    // The agent writes what its model answers: a replay that did not answer
    // from the recording could not make the same patches.
    let lab = Lab::new();
    let model = usage_model(textutil_files);
    let plan = json!({
        "textutil": {
            "fix-only": {"1": {"tokens": 10, "ask": "nothing"}, "2": {"tokens": 20, "ask": "fix"}},
            "brt-only": {"1": {"tokens": 5, "ask": "test"}},
        },
        "stats": {}, "bounds": {},
    });
    let settings = format!(
        "filter: {{ids: [acme__textutil-1]}}\n\
model: {{base_url: \"{}\", model: m, api_key_env: USAGE_MODEL_KEY}}\n",
        model.url
    );
    let file = lab.write(&plan, &settings);
    let out = lab.run_with_env(&file, "out", &[("USAGE_MODEL_KEY", "the-real-key")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = results(&lab.path("out"));
    let (fix, brt) = (
        &r[&key("textutil", "fix-only")],
        &r[&key("textutil", "brt-only")],
    );
    assert_eq!(
        (
            &fix["status"],
            &fix["resolved"],
            &fix["rounds"],
            &fix["tokens"],
            &fix["model_calls"]
        ),
        (&json!("ok"), &json!(true), &json!(2), &json!(30), &json!(2)),
        "{fix}"
    );
    assert_eq!(brt["f2p"]["fails_on_base"], true, "{brt}");
    let calls = model.heads.lock().unwrap().len();
    assert_eq!(calls, 3);
    // The answers were streamed, and the recording keeps the events.
    let recorded = jsonl(&lab.path("out/runs/acme__textutil-1/fix-only/0/model.jsonl"));
    assert!(recorded.iter().all(|c| c["stream"] == true
        && c["raw"]
            .as_str()
            .unwrap()
            .contains("event: content_block_delta")));
    let holders = files_holding(&lab.path("out"), b"the-real-key");
    assert!(holders.is_empty(), "the key is in {holders:?}");

    // With the model answering nothing, the replay makes the same runs
    // from the recording alone and never calls it.
    model
        .stopped
        .store(true, std::sync::atomic::Ordering::SeqCst);
    replays_equal(&lab, &file, "out", "again");
    assert_eq!(model.heads.lock().unwrap().len(), calls);
    let replayed = jsonl(&lab.path("again/runs/acme__textutil-1/fix-only/0/model.jsonl"));
    assert!(
        replayed.len() == 2 && replayed.iter().all(|c| c["source"] == "replayed"),
        "{replayed:#?}"
    );

    // A changed task departs at fix-only's first call, which carries the
    // prompt; `--replay-then-live` takes that run on against the model.
    let changed = std::fs::read_to_string(&file).unwrap().replace(
        "fix-only: {skill: ",
        &format!(
            "fix-only: {{task: {}, skill: ",
            lab.path("task.md.j2").display()
        ),
    );
    std::fs::write(lab.path("task.md.j2"), "Fix this: {{ issue }}\n").unwrap();
    std::fs::write(&file, changed).unwrap();
    let diverged = lab.run(
        &file,
        "changed",
        &["--replay", &lab.path("out").to_string_lossy()],
    );
    assert_eq!(diverged.status.code(), Some(2), "{}", stderr(&diverged));
    let r = results(&lab.path("changed"));
    let fix = &r[&key("textutil", "fix-only")];
    assert_eq!(fix["status"], "replay_diverged", "{fix}");
    let why = fix["error"]["message"].as_str().unwrap();
    assert!(
        why.starts_with("round 1, call 1: ") && why.contains("/prompt"),
        "{why}"
    );
    assert_eq!(r[&key("textutil", "brt-only")]["status"], "ok");
    model
        .stopped
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let live = run(critic()
        .args(["experiment", "run"])
        .arg(&file)
        .arg("--output-dir")
        .arg(lab.path("changed"))
        .arg("--replay")
        .arg(lab.path("out"))
        .arg("--replay-then-live")
        .env("USAGE_MODEL_KEY", "the-real-key"));
    assert_eq!(live.status.code(), Some(0), "{}", stderr(&live));
    let fix = &results(&lab.path("changed"))[&key("textutil", "fix-only")];
    assert_eq!(
        (&fix["status"], &fix["resolved"]),
        (&json!("ok"), &json!(true)),
        "{fix}"
    );
    assert_eq!(model.heads.lock().unwrap().len(), calls + 2);
}

#[test]
fn the_demo_experiment_runs_offline_and_opens_with_the_report_table() {
    let venv_bin = python().parent().unwrap().to_path_buf();
    let path = std::env::join_paths(
        std::iter::once(venv_bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    let kept = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let example = kept.path().join("example");
    let out = common::run(
        critic()
            .args(["demo", "experiment", "--keep"])
            .arg(&example)
            .env("PATH", &path),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("## demo\n\n| arm | runs | resolved (95% CI) |"),
        "{text}"
    );
    assert!(
        text.contains("| fix-only | 2 | 100.0% [34.2, 100.0] (2/2) |"),
        "{text}"
    );
    assert!(
        text.contains("| brt-only | 2 | 0.0% [0.0, 65.8] (0/2) | 100.0% [34.2, 100.0] (2/2) |"),
        "{text}"
    );
    assert!(text.contains("| @gold | 2 | 100.0%"), "{text}");
    let report = text
        .lines()
        .find_map(|l| l.strip_prefix("Report: "))
        .expect("the report's path");
    assert!(Path::new(report).is_file());
    assert!(
        report.starts_with(&example.display().to_string()),
        "{report}"
    );
    // The kept example is a whole experiment: edited and run again, it runs.
    let file = example.join("experiment/experiment.yaml");
    assert!(
        text.contains(&format!("critic experiment run {}", file.display())),
        "{text}"
    );
    let yaml = std::fs::read_to_string(&file).unwrap();
    assert!(yaml.contains("budget: {turns: 4}"), "{yaml}");
    std::fs::write(
        &file,
        yaml.replace("budget: {turns: 4}", "budget: {turns: 4}\nsamples: 2"),
    )
    .unwrap();
    let again = common::run(
        critic()
            .args(["experiment", "run"])
            .arg(&file)
            .arg("--output-dir")
            .arg(example.join("out2"))
            .env("PATH", &path),
    );
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(stderr(&again).contains("report.html"), "{}", stderr(&again));
    let results = std::fs::read_to_string(example.join("out2/results.jsonl")).unwrap();
    assert_eq!(
        results.lines().count(),
        8,
        "two samples of two arms on two packages"
    );
    // With two samples the report draws pass@k: a point per arm and k.
    let chromium = browser::Chromium::start(1400, 1000);
    let page = chromium.open(&example.join("out2/report.html"));
    assert_eq!(page.errors(), Vec::<String>::new());
    assert_eq!(
        page.eval("document.querySelector('#pass-at-k figcaption').textContent"),
        "fix-only brt-only"
    );
    assert_eq!(
        page.eval("document.querySelectorAll('#pass-at-k svg circle').length"),
        4
    );
    // And it is kept only where asked: an example directory in use is refused.
    let refused = common::run(
        critic()
            .args(["demo", "experiment", "--keep"])
            .arg(&example)
            .env("PATH", &path),
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("not empty"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn an_agent_that_switches_its_hook_off_is_an_agent_failure() {
    // Claude Code itself refuses its model a write to its settings, so the
    // hostile agent here is a program in its place: it fixes the bug, empties
    // the settings that hold its Stop hook, and exits without a finish the
    // critic judged.
    let lab = Lab::new();
    let hostile = lab.path("hostile-agent");
    std::fs::write(
        &hostile,
        "#!/bin/sh\nsed -i 's/join(words)/join(w.lower() for w in words)/' textutil/__init__.py\n\
         printf '{}' > \"$HOME/.claude/settings.json\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&hostile, std::fs::Permissions::from_mode(0o755)).unwrap();
    let agent = format!(
        "agent:\n  adapter: claude-code\n  program: {}\n  timeout: 60s\n\
model: {{base_url: \"http://127.0.0.1:9\", model: m}}\n",
        hostile.display()
    );
    let file = lab.write_with(&agent, "filter: {ids: [acme__textutil-1]}\n");
    let out = lab.run(&file, "out", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = results(&lab.path("out"));
    let fix = &r[&key("textutil", "fix-only")];
    assert_eq!(fix["status"], "agent_fail", "{fix}");
    assert_eq!(fix["error"]["class"], "hook_changed", "{fix}");
    assert_eq!(fix["finishes"], 0, "no finish was judged");
    assert_eq!(fix["resolved"], true, "what it left is graded all the same");
}

/// A one-node Slurm cluster of the test's own (Debian's `slurm-wlm` and
/// `munge`; `.ci/run` installs them): munged, slurmctld and slurmd on free
/// ports, as the current user, in a directory of its own; stopped on drop.
struct Slurm {
    dir: tempfile::TempDir,
    children: Vec<std::process::Child>,
}

impl Slurm {
    fn start() -> Slurm {
        // Short: the munge socket's path must fit a sockaddr_un.
        let dir = tempfile::Builder::new()
            .prefix("sl")
            .tempdir_in("/tmp")
            .unwrap();
        let d = dir.path();
        let key = d.join("munge.key");
        let random = std::fs::read("/proc/sys/kernel/random/uuid").unwrap();
        std::fs::write(&key, random.repeat(32)).unwrap();
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o400)).unwrap();
        let munged = Command::new("munged")
            .arg("-f")
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--socket={}", d.join("munge.sock").display()))
            .arg(format!("--log-file={}", d.join("munged.log").display()))
            .arg(format!("--pid-file={}", d.join("munged.pid").display()))
            .arg(format!("--seed-file={}", d.join("munged.seed").display()))
            .output()
            .expect("munged (apt-get install munge slurm-wlm; .ci/run installs them)");
        assert!(munged.status.success(), "munged: {}", stderr(&munged));
        let free_port = || {
            std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port()
        };
        let user =
            String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout).unwrap();
        let host = String::from_utf8(Command::new("hostname").output().unwrap().stdout).unwrap();
        let (user, host) = (user.trim(), host.trim());
        let p = |f: &str| d.join(f).display().to_string();
        let conf = format!(
            "ClusterName=critictest\nSlurmctldHost={host}\nSlurmctldPort={}\nSlurmdPort={}\n\
AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={}\nSlurmUser={user}\nSlurmdUser={user}\n\
StateSaveLocation={}\nSlurmdSpoolDir={}\nSlurmctldPidFile={}\nSlurmdPidFile={}\n\
SlurmctldLogFile={}\nSlurmdLogFile={}\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\nMpiDefault=none\nReturnToService=2\n\
JobCompType=jobcomp/none\nAccountingStorageType=accounting_storage/none\nSchedulerType=sched/builtin\n\
NodeName={host} CPUs=2 State=UNKNOWN\nPartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
            free_port(),
            free_port(),
            p("munge.sock"),
            p("state"),
            p("spool"),
            p("slurmctld.pid"),
            p("slurmd.pid"),
            p("slurmctld.log"),
            p("slurmd.log"),
        );
        for sub in ["state", "spool"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        std::fs::write(d.join("slurm.conf"), conf).unwrap();
        let mut slurm = Slurm {
            dir,
            children: Vec::new(),
        };
        for daemon in [vec!["slurmctld", "-D"], vec!["slurmd", "-D", "-N", host]] {
            let child = slurm
                .cmd(daemon[0])
                .args(&daemon[1..])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            slurm.children.push(child);
        }
        let t = std::time::Instant::now();
        loop {
            let out = slurm
                .cmd("sinfo")
                .args(["-h", "-o", "%t"])
                .output()
                .unwrap();
            if String::from_utf8_lossy(&out.stdout).trim() == "idle" {
                break slurm;
            }
            assert!(
                t.elapsed().as_secs() < 60,
                "the node did not come up: {}",
                slurm.logs()
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }

    /// `program` pointed at this cluster.
    fn cmd(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", self.dir.path().join("slurm.conf"));
        c
    }

    fn logs(&self) -> String {
        ["slurmctld.log", "slurmd.log"]
            .iter()
            .map(|f| std::fs::read_to_string(self.dir.path().join(f)).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = Command::new("munged")
            .arg("-s")
            .arg(format!(
                "--socket={}",
                self.dir.path().join("munge.sock").display()
            ))
            .output();
    }
}

#[test]
fn a_slurm_array_runs_the_shards_status_follows_them_and_they_merge() {
    let lab = Lab::new();
    let file = lab.write(&plan(), "");
    let slurm = Slurm::start();
    let out = lab.path("out");
    let submit = common::run(
        critic()
            .args(["experiment", "submit", "--slurm", "--array", "2"])
            .arg(&file)
            .arg("--output-dir")
            .arg(&out)
            .env("SLURM_CONF", slurm.dir.path().join("slurm.conf")),
    );
    assert_eq!(submit.status.code(), Some(0), "{}", stderr(&submit));
    assert!(
        stderr(&submit).contains("submitted array job"),
        "{}",
        stderr(&submit)
    );
    let script = std::fs::read_to_string(out.join("slurm/submit.sh")).unwrap();
    assert!(script.contains("#SBATCH --array=0-1"), "{script}");
    let status = || {
        let s = common::run(
            critic()
                .args(["experiment", "status"])
                .arg(&out)
                .env("SLURM_CONF", slurm.dir.path().join("slurm.conf")),
        );
        assert!(s.status.success(), "{}", stderr(&s));
        String::from_utf8(s.stdout).unwrap()
    };
    let t = std::time::Instant::now();
    let last = loop {
        let now = status();
        if now.contains("all: 6 of 6 finished, 0 infra_error")
            && now.contains("no task queued or running")
        {
            break now;
        }
        assert!(
            t.elapsed().as_secs() < 240,
            "{now}\n{}\n{}",
            slurm.logs(),
            ["shard-0.log", "shard-1.log"]
                .iter()
                .map(|f| std::fs::read_to_string(out.join("slurm").join(f)).unwrap_or_default())
                .collect::<String>()
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    };
    assert!(last.contains("shard-0: "), "{last}");
    assert!(last.contains("shard-1: "), "{last}");
    let merged = common::run(
        critic()
            .args(["experiment", "merge"])
            .arg(out.join("shard-0"))
            .arg(out.join("shard-1"))
            .arg("--output-dir")
            .arg(lab.path("merged")),
    );
    assert_eq!(merged.status.code(), Some(0), "{}", stderr(&merged));
    let r = results(&lab.path("merged"));
    assert_eq!(r.len(), 6);
    assert_eq!(r[&key("textutil", "fix-only")]["resolved"], true);
    assert_eq!(r[&key("stats", "brt-only")]["budget_exhausted"], true);
}

#[test]
fn mini_swe_agent_runs_the_arms_with_its_critic_agent_class() {
    let bash =
        |command: &str| json!({"tool_calls": [{"name": "bash", "input": {"command": command}}]});
    let submit = || bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff");
    // The script of agent_script, with mini-swe-agent's own way to finish.
    let standin = Standin::start(
        "mini_swe_agent",
        &json!([
            submit(),
            bash("sed -i 's/join(words)/join(w.lower() for w in words)/' textutil/__init__.py"),
            submit(),
            bash("printf 'from textutil import slugify\\n\\n\\ndef test_issue():\\n    assert slugify(\"Hello World\") == \"hello-world\"\\n' > tests/test_issue.py"),
            submit(),
        ]),
    );
    let mini = python_with_package().parent().unwrap().join("mini");
    real_agent_experiment("mini-swe-agent", &mini, &standin);
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

/// A stand-in for `podman run`, clearly not a container engine: podman is
/// installed on the project machine but cannot start containers there
/// (crun: "cgroups in hybrid mode not supported"; runc: "error setting
/// rlimits ... operation not permitted"), and no image registry is
/// reachable. It runs the script `critic` gives the engine the way the
/// container would: in a fresh copy of the "image" (the instance's clone at
/// its base commit, `IMAGES/<image>`), with the input mount's path and the
/// working directory mapped, and records each command line it got.
const FAKE_ENGINE: &str = r#"#!/usr/bin/env python3
import os, shutil, subprocess, sys, tempfile
args = sys.argv[1:]
with open(os.environ["ENGINE_LOG"], "a") as log:
    log.write(repr(args) + "\n")
if args[0] == "kill":
    sys.exit(0)
assert args[:2] == ["run", "--rm"], args
mount = args[args.index("-v") + 1]
host, inside = mount.split(":")[:2]
assert inside == "/critic-input" and mount.endswith(":ro"), mount
assert "--network=none" in args
image, shell, flag, script = args[-4:]
assert (shell, flag) == ("bash", "-c"), args
env = dict(os.environ)
i = 0
while i < len(args):
    if args[i] == "-e":
        k, v = args[i + 1].split("=", 1)
        env[k] = v
        i += 1
    i += 1
root = tempfile.mkdtemp()
testbed = os.path.join(root, "testbed")
shutil.copytree(os.path.join(os.environ["IMAGES"], image), testbed)
script = script.replace("/critic-input", host).replace("cd /testbed", "cd " + testbed)
script = script.replace("source /opt/miniconda3/bin/activate\nconda activate testbed\n", "")
try:
    sys.exit(subprocess.run(["bash", "-c", script], env=env).returncode)
finally:
    shutil.rmtree(root)
"#;

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

#[test]
fn a_hostile_agent_cannot_pass_for_a_result_or_make_the_runner_write_through_links() {
    let lab = Lab::new();
    let text = PACKAGES.iter().find(|p| p.name == "textutil").unwrap();
    let ids = |p: &Package| -> Vec<String> {
        std::iter::once(p.f2p)
            .chain(p.p2p.iter().copied())
            .map(|t| format!("PASSED {}::{t}", p.test_module()))
            .collect()
    };
    // A module named pytest that prints every golden id as passed.
    let forged = format!(
        "import sys\nprint('test session starts')\nprint('short test summary info')\n{}\nprint('3 passed')\nsys.exit(0)\n",
        ids(text)
            .iter()
            .map(|l| format!("print({l:?})"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let victim = lab.path("victim.txt");
    std::fs::write(&victim, "precious\n").unwrap();
    let plan = json!({
        "textutil": {"fix-only": {"1": {"write": {"pytest.py": forged}}}},
        // Its repository gone, nothing can be diffed.
        "stats": {"fix-only": {"1": {"write": {"stats/__init__.py": "x = 1\n"}, "sh": "rm -rf .git"}},
                  "brt-only": {"1": {"sh": format!(
                      "ln -s {} \"$(dirname $(dirname \"$CRITIC_EVENTS_FILE\"))/final.patch\"", victim.display())}}},
        // The critic's count, reset in its state after the first rejection.
        "bounds": {"fix-only": {"2": {"sh": "for f in $(find \"$(dirname $(dirname \"$CRITIC_EVENTS_FILE\"))/state\" -name harness.json); do python3 -c \"import json,sys; p=sys.argv[1]; d=json.load(open(p)); d['iteration']=0; json.dump(d, open(p,'w'))\" $f; done"}}},
    });
    lab.write(&plan, "budget: {turns: 3}\n");
    // A relative output directory works as an absolute one. Unconfined, the
    // agent can reach the run's files; the runner's checks catch it.
    let out = common::run(
        critic()
            .args(["experiment", "run", "exp.yaml", "--output-dir", "out"])
            .arg("--unconfined-agents")
            .current_dir(lab.dir.path()),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = results(&lab.path("out"));
    let shadow = &r[&key("textutil", "fix-only")];
    assert_eq!(
        shadow["resolved"], false,
        "a forged pytest resolves nothing: {shadow}"
    );
    // It was put back (removed) before grading, and the record says so.
    let golden: Value = serde_json::from_slice(
        &std::fs::read(lab.path("out/runs/acme__textutil-1/fix-only/0/grade/golden.json")).unwrap(),
    )
    .unwrap();
    let restored = &golden["grade"]["restored"];
    assert_eq!(restored[0]["path"], "pytest.py", "{golden}");
    assert!(
        restored[0]["why"]
            .as_str()
            .unwrap()
            .contains("stand in for the runner"),
        "{restored}"
    );
    let broken = &r[&key("stats", "fix-only")];
    assert_eq!(broken["status"], "agent_fail", "{broken}");
    assert_eq!(broken["error"]["class"], "workspace_broken");
    assert_eq!(broken["resolved"], false);
    let linked = &r[&key("stats", "brt-only")];
    assert_eq!(linked["status"], "agent_fail", "{linked}");
    assert_eq!(linked["error"]["class"], "planted_links");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    let reset = &r[&key("bounds", "fix-only")];
    assert_eq!(reset["status"], "agent_fail", "{reset}");
    assert_eq!(reset["error"]["class"], "state_changed");
    // A rerun keeps them: they are results, not errors.
    let again = common::run(
        critic()
            .args(["experiment", "run", "exp.yaml", "--output-dir", "out"])
            .arg("--unconfined-agents")
            .current_dir(lab.dir.path()),
    );
    assert!(
        stderr(&again).contains("0 of 6 runs to make"),
        "{}",
        stderr(&again)
    );
}

// The critic's state and the run's files are the runner's: a FIFO put in
// place of the critic's count neither hangs the experiment nor passes for
// a result, and a hard link to a file of the user's is never written
// through (by an agent run unconfined, which can reach them).
#[test]
fn planted_fifos_and_hard_links_are_the_agents_failures_and_write_nothing() {
    let lab = Lab::new();
    let victim = lab.path("victim.txt");
    std::fs::write(&victim, "precious\n").unwrap();
    let plan = json!({
        "bounds": {"fix-only": {"2": {"sh": "for f in $(find \"$(dirname $(dirname \"$CRITIC_EVENTS_FILE\"))/state\" -name harness.json); do rm $f; mkfifo $f; done"}}},
        "stats": {"brt-only": {"1": {"sh": format!(
            "ln {} \"$(dirname $(dirname \"$CRITIC_EVENTS_FILE\"))/final.patch\"", victim.display())}}},
    });
    lab.write(&plan, "budget: {turns: 3}\n");
    let out = common::run(
        critic()
            .args(["experiment", "run", "exp.yaml", "--output-dir", "out"])
            .arg("--unconfined-agents")
            .current_dir(lab.dir.path()),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = results(&lab.path("out"));
    let fifo = &r[&key("bounds", "fix-only")];
    assert_eq!(fifo["status"], "agent_fail", "{fifo}");
    assert_eq!(fifo["error"]["class"], "state_changed", "{fifo}");
    assert!(
        fifo["error"]["message"]
            .as_str()
            .unwrap()
            .contains("a FIFO"),
        "{fifo}"
    );
    let linked = &r[&key("stats", "brt-only")];
    assert_eq!(linked["status"], "agent_fail", "{linked}");
    assert_eq!(linked["error"]["class"], "planted_links", "{linked}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
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

/// An agent installed as npm installs a program, a link in a project's
/// `node_modules/.bin` into its package, in a project under the user's home:
/// the confined turn covers the home, and binds back the package the link
/// points into, read-only, so the agent starts and its package's own
/// modules load.
#[test]
fn an_agent_linked_into_its_package_under_the_home_starts_confined() {
    let lab = Lab::new();
    let home = lab.path("home");
    let package = home.join("project/node_modules/agentpkg");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::write(package.join("real_agent.py"), AGENT).unwrap();
    let entry = package.join("agent.py");
    std::fs::write(
        &entry,
        "#!/usr/bin/env python3\nimport os, runpy\nrunpy.run_path(os.path.join(os.path.dirname(os.path.realpath(__file__)), 'real_agent.py'), run_name='__main__')\n",
    )
    .unwrap();
    std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = home.join("project/node_modules/.bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink("../agentpkg/agent.py", bin.join("agent")).unwrap();
    std::fs::write(lab.path("plan.json"), plan().to_string()).unwrap();
    let agent = format!(
        "agent:\n  command: [{}, \"{{prompt_file}}\"]\n  timeout: 60s\n  env: {{AGENT_PLAN: {}}}\n",
        bin.join("agent").display(),
        lab.path("plan.json").display()
    );
    let file = lab.write_with(&agent, "filter: {ids: [acme__textutil-1]}\n");
    let out = lab.run_with_env(&file, "out", &[("HOME", home.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = results(&lab.path("out"));
    let run = &r[&key("textutil", "fix-only")];
    assert_eq!(
        (run["status"].as_str(), run["resolved"].as_bool()),
        (Some("ok"), Some(true)),
        "{run}"
    );
}

/// A model name that copies another's escaped form (`org/model` is kept as
/// `org_model~<hash>`) gets a run directory of its own: neither
/// prediction's evidence overwrites the other's.
#[test]
fn model_names_that_look_alike_get_run_directories_of_their_own() {
    let lab = Lab::new();
    let records = jsonl(&lab.path("instances.jsonl"));
    let record = &records[0];
    let id = record["instance_id"].as_str().unwrap();
    let grade = |models: &[(&str, &str)]| {
        let lines: String = models
            .iter()
            .map(|(m, p)| {
                format!(
                    "{}\n",
                    json!({"instance_id": id, "model_name_or_path": m, "model_patch": p})
                )
            })
            .collect();
        std::fs::write(lab.path("predictions.jsonl"), lines).unwrap();
        let out = run(critic()
            .args(["experiment", "grade"])
            .arg(lab.path("out"))
            .arg("--instances")
            .arg(lab.path("instances.jsonl"))
            .arg("--predictions")
            .arg(lab.path("predictions.jsonl"))
            .arg("--repos")
            .arg(lab.path("repos"))
            .arg("--python")
            .arg(python()));
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    };
    let gold = record["patch"].as_str().unwrap();
    grade(&[("org/model", gold)]);
    let dirs = |at: &Path| -> Vec<String> {
        std::fs::read_dir(at)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    let runs = lab.path("out/runs").join(id);
    let taken = dirs(&runs);
    assert_eq!(taken.len(), 1, "{taken:?}");
    // A second model named as the first one's directory.
    grade(&[("org/model", gold), (taken[0].as_str(), "")]);
    let both = dirs(&runs);
    assert_eq!(both.len(), 2, "{both:?}");
    assert_eq!(
        std::fs::read_to_string(runs.join(&taken[0]).join("0/final.patch")).unwrap(),
        gold
    );
    let r: BTreeMap<String, Value> = jsonl(&lab.path("out/results.jsonl"))
        .into_iter()
        .map(|r| (r["arm"].as_str().unwrap().to_string(), r))
        .collect();
    assert_eq!(r["org/model"]["resolved"], true, "{r:#?}");
    assert_eq!(r[taken[0].as_str()]["resolved"], false, "{r:#?}");
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

/// An agent that replaces its workspace's `.git` with a gitfile naming the
/// user's clone (which its confinement does not let it read) learns
/// nothing of the clone through the runner: the runner's checks and its
/// final diff read no git directory but the one it made, and the run is
/// the agent's failure.
#[test]
fn a_gitfile_naming_the_users_clone_is_not_followed_by_the_runner() {
    let lab = Lab::new();
    let clone = lab.path("repos/acme__textutil");
    // The clone's later history, which no run may see.
    std::fs::write(clone.join("later_secret.py"), "SECRET = 1\n").unwrap();
    for args in [
        &["add", "-A"][..],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@localhost",
            "commit",
            "-q",
            "-m",
            "later",
        ],
    ] {
        assert!(Command::new("git")
            .args(args)
            .current_dir(&clone)
            .status()
            .unwrap()
            .success());
    }
    let text = &PACKAGES[0];
    let plant = format!(
        "rm -rf .git && printf 'gitdir: {}/.git\\n' > .git",
        clone.display()
    );
    let plan = json!({
        "textutil": {"fix-only": {
            "1": {"write": {text.module: text.fixed()}, "sh": plant},
        }},
    });
    let file = lab.write_fix_only(&plan, "filter: {ids: [acme__textutil-1]}\n");
    let out = lab.run(&file, "out", &[]);
    let err = stderr(&out);
    let r = results(&lab.path("out"));
    let run = &r[&key("textutil", "fix-only")];
    assert_eq!(run["status"], "agent_fail", "{run}\n{err}");
    assert_eq!(run["error"]["class"], "workspace_broken", "{run}");
    let mut seen = Vec::new();
    let mut stack = vec![lab.path("out/runs")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                if path.file_name() != Some("workspace".as_ref()) {
                    stack.push(path);
                }
            } else if std::fs::read(&path)
                .is_ok_and(|b| String::from_utf8_lossy(&b).contains("later_secret"))
            {
                seen.push(path);
            }
        }
    }
    assert!(
        seen.is_empty(),
        "the clone's later history reached {seen:?}"
    );
    let verdict = std::fs::read_to_string(
        lab.path("out/runs/acme__textutil-1/fix-only/0/round-1/verdict.json"),
    )
    .unwrap();
    assert!(verdict.contains("the runner made"), "{verdict}");
}

/// A turn cannot take the host's memory through its private directories
/// (each a tmpfs of `agent.limits.tmp`), and a run whose workspace and
/// agent directory grow past `agent.limits.disk` is the agent's failure,
/// with the limit named.
#[test]
fn a_turn_is_held_to_its_tmp_memory_and_disk_limits() {
    let lab = Lab::new();
    let text = &PACKAGES[0];
    let probe = "dd if=/dev/zero of=/dev/shm/big bs=1M count=64 2>/dev/null; \
du -k /dev/shm/big | cut -f1 > \"$HOME/../shm.txt\"; \
head -c 20971520 /dev/zero > big.bin";
    let plan = json!({
        "textutil": {"fix-only": {"1": {"write": {text.module: text.fixed()}, "sh": probe}}},
    });
    let file = lab.write_fix_only(&plan, "filter: {ids: [acme__textutil-1]}\n");
    let yaml = std::fs::read_to_string(&file).unwrap().replace(
        "  timeout: 60s\n",
        "  timeout: 60s\n  limits: {tmp: 16MiB, disk: 8MiB}\n",
    );
    std::fs::write(&file, yaml).unwrap();
    let out = lab.run(&file, "out", &[]);
    let r = results(&lab.path("out"));
    let run = &r[&key("textutil", "fix-only")];
    assert_eq!(run["status"], "agent_fail", "{run}\n{}", stderr(&out));
    assert_eq!(run["error"]["class"], "disk_limit", "{run}");
    assert!(
        run["error"]["message"]
            .as_str()
            .unwrap()
            .contains("agent.limits.disk (8.0 MiB)"),
        "{run}"
    );
    let shm: u64 =
        std::fs::read_to_string(lab.path("out/runs/acme__textutil-1/fix-only/0/agent/shm.txt"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
    assert!(shm <= 16 * 1024, "/dev/shm held {shm} KiB");
    // A turn that takes more memory than agent.limits.memory is killed by
    // the kernel: the agent's failure, with the limit named.
    let hog = "python3 -c 'b = bytearray(512 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1'";
    let plan = json!({
        "textutil": {"fix-only": {"1": {"write": {text.module: text.fixed()}, "sh": hog}}},
    });
    std::fs::write(lab.path("plan.json"), plan.to_string()).unwrap();
    let yaml = std::fs::read_to_string(&file)
        .unwrap()
        .replace("disk: 8MiB", "disk: 1GiB, memory: 64MiB");
    std::fs::write(&file, yaml).unwrap();
    let out = lab.run(&file, "memory", &[]);
    let r = results(&lab.path("memory"));
    let run = &r[&key("textutil", "fix-only")];
    assert_eq!(run["status"], "agent_fail", "{run}\n{}", stderr(&out));
    assert_eq!(run["error"]["class"], "memory_limit", "{run}");
    assert!(
        run["error"]["message"]
            .as_str()
            .unwrap()
            .contains("agent.limits.memory (64.0 MiB)"),
        "{run}"
    );
    // A size that is not one is the file's error, naming the field.
    let bad = std::fs::read_to_string(&file)
        .unwrap()
        .replace("tmp: 16MiB", "tmp: lots");
    std::fs::write(&file, bad).unwrap();
    let out = lab.run(&file, "other", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("agent.limits.tmp: \"lots\" is not a size"),
        "{}",
        stderr(&out)
    );
}

/// The workspace holds the base and its history, nothing later: a clone
/// whose history runs past the base (the fix, a release tag) shows the
/// agent none of it, however it asks git.
#[test]
fn the_workspace_holds_no_commit_after_the_base() {
    let lab = Lab::new();
    let clone = lab.path("repos/acme__textutil");
    let text = &PACKAGES[0];
    std::fs::write(clone.join(text.module), text.fixed()).unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@localhost"])
            .args(args)
            .current_dir(&clone)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    git(&["commit", "-qam", "the fix, later"]);
    git(&["tag", "v-later"]);
    let later = git(&["rev-parse", "HEAD"]).trim().to_string();
    let probe = "git log --all --format='%H %s' > \"$HOME/../log.txt\"; \
git tag > \"$HOME/../tags.txt\"; \
git cat-file --batch-all-objects --batch-check > \"$HOME/../objects.txt\"; \
git status --porcelain=v2 --branch > \"$HOME/../status.txt\"";
    let plan = json!({
        "textutil": {"fix-only": {"1": {"write": {text.module: text.fixed()}, "sh": probe}}},
    });
    let file = lab.write_fix_only(&plan, "filter: {ids: [acme__textutil-1]}\n");
    let out = lab.run(&file, "out", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = results(&lab.path("out"));
    assert_eq!(r[&key("textutil", "fix-only")]["resolved"], true);
    let agent = lab.path("out/runs/acme__textutil-1/fix-only/0/agent");
    let read = |f: &str| std::fs::read_to_string(agent.join(f)).unwrap();
    let log = read("log.txt");
    assert!(log.contains(" base"), "the base's history is there: {log}");
    assert!(!log.contains("later") && !log.contains(&later), "{log}");
    assert_eq!(read("tags.txt"), "");
    assert!(!read("objects.txt").contains(&later));
    assert!(read("status.txt").contains("# branch.head (detached)"));
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
fn openhands_runs_the_arms_with_the_critic_as_its_stop_hook() {
    let terminal = |command: &str| json!({"tool_calls": [{"name": "terminal", "input": {"command": command}}]});
    let finish =
        |message: &str| json!({"tool_calls": [{"name": "finish", "input": {"message": message}}]});
    // The script of agent_script, with OpenHands' own tools and finish.
    let standin = Standin::start(
        "mini_swe_agent",
        &json!([
            finish("Nothing to change."),
            terminal("sed -i 's/join(words)/join(w.lower() for w in words)/' textutil/__init__.py"),
            finish("Fixed slugify."),
            terminal("printf 'from textutil import slugify\\n\\n\\ndef test_issue():\\n    assert slugify(\"Hello World\") == \"hello-world\"\\n' > tests/test_issue.py"),
            finish("Test written."),
        ]),
    );
    let (lab, _) = real_agent_experiment("openhands", &python_with_package(), &standin);
    let hooks = lab.path("out/runs/acme__textutil-1/fix-only/0/agent/home/.openhands/hooks.json");
    assert!(std::fs::read_to_string(hooks).unwrap().contains("--events"));
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

/// The attack that made a losing run vanish from the rates: the agent
/// makes its own critic's detector fail (4 MB of empty lines in the
/// workspace blow the bundled fix-only detector's memory). The failure is
/// the critic's error on that round, the finish is judged as the skill's
/// `on_error` says (rejected), and the run stays a result.
#[test]
fn an_agent_that_makes_its_critic_fail_stays_in_the_rates() {
    let lab = Lab::new();
    let text = PACKAGES.iter().find(|p| p.name == "textutil").unwrap();
    let plan = json!({
        "textutil": {"fix-only": {
            "1": {"write": {text.module: text.fixed()},
                  "sh": "python3 -c \"open('blank.txt', 'w').write(chr(10) * (4 << 20))\""},
            "2": {"sh": "rm blank.txt"},
        }},
    });
    let file = lab.write_fix_only(&plan, "filter: {ids: [acme__textutil-1]}\n");
    let out = lab.run(&file, "out", &["--retries", "0"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "a result, not an error: {err}");
    let r = results(&lab.path("out"));
    let run = &r[&key("textutil", "fix-only")];
    assert_eq!(
        (
            run["status"].as_str(),
            run["resolved"].as_bool(),
            run["rounds"].as_u64()
        ),
        (Some("ok"), Some(true), Some(2)),
        "{run}"
    );
    let kept: Value = serde_json::from_slice(
        &std::fs::read(lab.path("out/runs/acme__textutil-1/fix-only/0/run.json")).unwrap(),
    )
    .unwrap();
    let rounds = kept["rounds"].as_array().unwrap();
    assert_eq!(rounds[0]["verdict"], "rejected", "{kept}");
    assert!(
        rounds[0]["critic_error"]
            .as_str()
            .is_some_and(|e| e.contains("memory")),
        "{kept}"
    );
    assert!(rounds[1]["critic_error"].is_null(), "{kept}");
}

#[test]
fn a_hooked_agent_that_makes_its_judges_detector_fail_stays_in_the_rates() {
    // Through Claude Code's judge one finish is enough: 4 MB of empty lines
    // make fix-only's detector run out of memory, and the file is gone
    // before the agent quits.
    let bash = |command: &str| json!({"tool_calls": [{"name": "Bash", "input": {"command": command, "description": "Edit"}}]});
    let standin = Standin::start(
        "claude_code",
        &json!([
            bash("sed -i 's/join(words)/join(w.lower() for w in words)/' textutil/__init__.py && python3 -c \"open('blank.txt', 'w').write(chr(10) * (4 << 20))\""),
            {"text": "Fixed."},
            bash("rm blank.txt"),
            {"text": "Tidied."},
        ]),
    );
    let lab = Lab::new();
    let file = lab.write_stand_in("claude-code", &npm_bin("claude"), &standin);
    let yaml = std::fs::read_to_string(&file).unwrap();
    let brt = yaml.lines().find(|l| l.contains("brt-only:")).unwrap();
    std::fs::write(&file, yaml.replace(&format!("{brt}\n"), "")).unwrap();
    let out = lab.run_once(&file);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "a result, not an error: {err}");
    let run = &results(&lab.path("out"))[&key("textutil", "fix-only")];
    assert_eq!(
        (run["status"].as_str(), run["resolved"].as_bool()),
        (Some("ok"), Some(true)),
        "{run}"
    );
    let kept: Value = serde_json::from_slice(
        &std::fs::read(lab.path("out/runs/acme__textutil-1/fix-only/0/run.json")).unwrap(),
    )
    .unwrap();
    let rounds = kept["rounds"].as_array().unwrap();
    assert!(
        rounds[0]["critic_error"]
            .as_str()
            .is_some_and(|e| e.contains("memory")),
        "{kept}"
    );
    assert_eq!(rounds.last().unwrap()["verdict"], "accepted", "{kept}");
}

#[test]
fn what_the_patch_or_the_agent_does_is_a_result_never_an_infra_error() {
    let lab = Lab::new();
    let by = |name: &str| PACKAGES.iter().find(|p| p.name == name).unwrap();
    let (text, stats, bounds) = (by("textutil"), by("stats"), by("bounds"));
    let clone = lab.path("repos/acme__bounds");
    let before = snapshot(&clone.join(".git/objects"));
    let plan = json!({
        // The fix, a golden test file deleted, a binary file added, and a
        // line that reads like a missing pytest printed at import.
        "textutil": {"fix-only": {"1": {
            "write": {text.module: format!("print('No module named pytest')\n{}", text.fixed())},
            "sh": "rm tests/test_textutil.py && printf '\\x89PNG\\x00\\x01' > logo.png",
        }}},
        // An empty first finish (sent back), and a file where the runner
        // makes its next round.
        "stats": {"fix-only": {"1": {"sh": "touch \"$(dirname $(dirname \"$CRITIC_EVENTS_FILE\"))/round-2\""}}},
        // The fix, then every object of its own clone rewritten in place
        // and where its remote points written down.
        "bounds": {"fix-only": {"1": {
            "write": {bounds.module: bounds.fixed()},
            "sh": "git remote -v > remotes.txt; chmod -R u+w .git/objects; \
                   for f in $(find .git/objects -type f); do printf x >> \"$f\"; done",
        }}},
    });
    let _ = stats;
    let file = lab.write_fix_only(&plan, "");
    // Unconfined, so the agent can plant a round directory in the run's.
    let out = lab.run(&file, "out", &["--control", "gold", "--unconfined-agents"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "no infrastructure error: {err}");
    let r = results(&lab.path("out"));
    let fixed = &r[&key("textutil", "fix-only")];
    assert_eq!(
        (fixed["status"].as_str(), fixed["resolved"].as_bool()),
        (Some("ok"), Some(true)),
        "{fixed}"
    );
    let planted = &r[&key("stats", "fix-only")];
    assert_eq!(planted["status"], "agent_fail", "{planted}");
    assert_eq!(planted["error"]["class"], "planted_files", "{planted}");
    // The workspace's objects were its own: the user's clone is as it was,
    // and grading (the gold control too) read the grader's copy.
    assert_eq!(snapshot(&clone.join(".git/objects")), before);
    let poisoner = &r[&key("bounds", "fix-only")];
    assert_ne!(poisoner["status"], "infra_error", "{poisoner}");
    assert_eq!(r[&key("bounds", "@gold")]["resolved"], true);
    let fsck = Command::new("git")
        .args(["fsck", "--full"])
        .current_dir(&clone)
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "{}",
        String::from_utf8_lossy(&fsck.stderr)
    );
    // The workspace did not point at the user's clone.
    if let Ok(patch) =
        std::fs::read_to_string(lab.path("out/runs/acme__bounds-1/fix-only/0/final.patch"))
    {
        assert!(!patch.contains(&clone.display().to_string()), "{patch}");
    }
}

#[test]
fn an_agent_that_kills_its_own_cli_after_its_model_answered_is_an_agent_failure() {
    // Claude Code's first answer, in each arm's run, runs a command that
    // kills Claude Code.
    let bash = |command: &str| json!({"tool_calls": [{"name": "Bash", "input": {"command": command, "description": "Stop"}}]});
    let kill = bash("kill -9 $PPID");
    let standin = Standin::start("claude_code", &json!([kill, kill]));
    let lab = Lab::new();
    let file = lab.write_stand_in("claude-code", &npm_bin("claude"), &standin);
    let out = lab.run_once(&file);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "a result, not an error: {err}");
    let r = results(&lab.path("out"));
    for arm in ["fix-only", "brt-only"] {
        let run = &r[&key("textutil", arm)];
        assert_eq!(run["status"], "agent_fail", "{run}");
        assert_eq!(run["error"]["class"], "agent_exit", "{run}");
        assert_eq!(run["resolved"], false, "{run}");
    }
}

#[test]
fn an_agent_that_erases_its_transcript_and_exits_after_its_model_answered_is_an_agent_failure() {
    // The model's first answer has mini-swe-agent put a directory where its
    // trajectory goes: saving it after the step fails and it exits 1 by
    // itself, no finish judged, no trajectory left. Whether it started is
    // read from what the runner's proxy passed, not from a transcript the
    // agent can erase.
    let bash =
        |command: &str| json!({"tool_calls": [{"name": "bash", "input": {"command": command}}]});
    let wipe = bash("rm -rf \"$HOME/../transcript.json\" && mkdir \"$HOME/../transcript.json\"");
    let standin = Standin::start("mini_swe_agent", &json!([wipe, wipe]));
    let lab = Lab::new();
    let mini = python_with_package().parent().unwrap().join("mini");
    let file = lab.write_stand_in("mini-swe-agent", &mini, &standin);
    let out = lab.run_once(&file);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "a result, not an error: {err}");
    let r = results(&lab.path("out"));
    for arm in ["fix-only", "brt-only"] {
        let run = &r[&key("textutil", arm)];
        assert_eq!(run["status"], "agent_fail", "{run}");
        assert_eq!(run["error"]["class"], "agent_exit", "{run}");
        assert!(
            run["error"]["message"]
                .as_str()
                .unwrap()
                .contains("exited with Some(1)"),
            "{run}"
        );
        let dir = lab.path(&format!("out/runs/acme__textutil-1/{arm}/0"));
        assert!(
            !dir.join("transcript.json").exists(),
            "the agent left no transcript"
        );
        // The evidence is the runner's: the answer it passed.
        let statuses: Vec<_> = jsonl(&dir.join("model.jsonl"))
            .iter()
            .filter(|c| c["path"].as_str().unwrap().ends_with("/chat/completions"))
            .map(|c| c["status"].as_u64().unwrap())
            .collect();
        assert_eq!(statuses, [200]);
    }
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

/// A TCP service on the host's loopback that counts the connections it
/// gets and answers each with `answer`.
/// A stand-in model (a test double for a paid API): answers each request
/// with usage of the `tokens` its JSON body asks for and the text `answer`
/// gives for the body, streamed (Anthropic's server-sent events) when the
/// body asks for a stream; keeps each request's head. Once `stopped` is set
/// it closes every connection unanswered.
struct UsageModel {
    url: String,
    heads: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    bodies: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
    stopped: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

fn usage_model(answer: fn(&Value) -> String) -> UsageModel {
    use std::io::{BufRead, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let heads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let stopped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (kept, kept_bodies, stop) = (heads.clone(), bodies.clone(), stopped.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (kept, kept_bodies, stop) = (kept.clone(), kept_bodies.clone(), stop.clone());
            std::thread::spawn(move || {
                if stop.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
                loop {
                    let mut head = String::new();
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        head.push_str(&line);
                    }
                    let len: usize = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap())
                        })
                        .unwrap_or(0);
                    let mut body = vec![0; len];
                    reader.read_exact(&mut body).unwrap();
                    kept.lock().unwrap().push(head);
                    let asked: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    kept_bodies.lock().unwrap().push(asked.clone());
                    let (text, tokens) = (answer(&asked), asked["tokens"].as_u64().unwrap_or(1));
                    let usage = json!({"input_tokens": tokens, "output_tokens": 0});
                    let (kind, answer) = if asked["stream"] == true {
                        let events = [
                            json!({"type": "message_start", "message": {"id": "msg", "type": "message",
                                "role": "assistant", "content": [], "usage": usage}}),
                            json!({"type": "content_block_start", "index": 0,
                                "content_block": {"type": "text", "text": ""}}),
                            json!({"type": "content_block_delta", "index": 0,
                                "delta": {"type": "text_delta", "text": text}}),
                            json!({"type": "content_block_stop", "index": 0}),
                            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                "usage": {"output_tokens": 0}}),
                            json!({"type": "message_stop"}),
                        ];
                        let sse = events
                            .iter()
                            .map(|e| {
                                format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap())
                            })
                            .collect();
                        ("text/event-stream", sse)
                    } else {
                        let message = json!({"id": "msg", "type": "message", "role": "assistant",
                            "content": [{"type": "text", "text": text}], "usage": usage});
                        ("application/json", message.to_string())
                    };
                    let mut out = stream.try_clone().unwrap();
                    let _ = write!(
                        out,
                        "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\r\n{answer}",
                        answer.len()
                    );
                }
            });
        }
    });
    UsageModel {
        url,
        heads,
        bodies,
        stopped,
    }
}

fn loopback_service(answer: &'static str) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut stream = stream;
            let mut buf = [0u8; 1024];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                format!(
                    "HTTP/1.0 200 OK\r\ncontent-length: {}\r\n\r\n{answer}",
                    answer.len()
                )
                .as_bytes(),
            );
        }
    });
    (port, count)
}

// The agent's turn runs confined: it reads none of the experiment's own
// files (the other runs, the user's clones, the instances with their
// golden patches), writes nowhere but its workspace and its own
// directory, reaches its model and no other service of the host, and
// nothing it starts (in a session of its own, its environment cleared)
// outlives its turn. The same agent still fixes its package.
#[test]
fn a_confined_agent_reaches_its_workspace_and_its_model_and_nothing_else() {
    let lab = Lab::new();
    let text = PACKAGES.iter().find(|p| p.name == "textutil").unwrap();
    let (model_port, model_hits) = loopback_service("model ok");
    let (service_port, service_hits) = loopback_service("service");
    let (index_port, index_hits) = loopback_service("index ok");
    let outside = lab.path("outside.txt");
    // A file the runner can read: its transcript, made a link to it, is not
    // followed by the runner's check.
    let secret = lab.path("secret.jsonl");
    // critic's cache keeps the pre-flights' logs, which quote golden tests.
    let canary = cache_dir().join(format!("preflight/canary-{}", std::process::id()));
    std::fs::create_dir_all(canary.parent().unwrap()).unwrap();
    std::fs::write(&canary, "a golden test's log").unwrap();
    std::fs::write(
        &secret,
        "{\"index\": 0, \"kind\": \"message\", \"source\": \"user\", \"text\": \"SECRET-TRANSCRIPT\"}\n",
    )
    .unwrap();
    let probe = format!(
        r#"p="$HOME/../probe.txt"
a=$(cd "$HOME/.." && pwd)
echo "out $(find {out} -type f -not -path "$a/*" -not -path "$CRITIC_WORKSPACE/*" 2>/dev/null | wc -l)" >> "$p"
echo "instances $(cat {instances} 2>/dev/null | wc -c)" >> "$p"
echo "repos $(ls -A {repos} 2>/dev/null | wc -l)" >> "$p"
echo "cache $(cat {canary} 2>/dev/null | wc -c)" >> "$p"
touch {outside} 2>/dev/null && echo "outside written" >> "$p"
python3 -c "import os,urllib.request; print('model', urllib.request.urlopen(urllib.request.Request(os.environ['CRITIC_MODEL_BASE_URL'], headers={{'x-api-key': os.environ['CRITIC_MODEL_API_KEY']}})).read().decode())" >> "$p" 2>&1
echo "key $(env | grep -c the-real-model-key)" >> "$p"
python3 -c "import socket; socket.create_connection(('127.0.0.1', {service_port}), timeout=3); print('service reached')" >> "$p" 2>/dev/null || echo "service unreachable" >> "$p"
python3 -c "import urllib.request; print('index', urllib.request.urlopen('http://localhost:{index_port}').read().decode())" >> "$p" 2>&1
setsid python3 -c "import os,sys,time; os.environ.clear(); time.sleep(3); open(sys.argv[1], 'w').write('escaped')" "$HOME/../late.txt" > /dev/null 2>&1 < /dev/null &
ln -sf {secret} "$CRITIC_EVENTS_FILE"
"#,
        secret = secret.display(),
        out = lab.path("out").display(),
        instances = lab.path("instances.jsonl").display(),
        repos = lab.path("repos").display(),
        canary = canary.display(),
        outside = outside.display(),
    );
    let plan = json!({
        "textutil": {"fix-only": {"1": {"write": {text.module: text.fixed()}, "sh": probe}}},
    });
    // One arm; a package index the agent may reach besides its model.
    let file = lab.write_fix_only(
        &plan,
        &format!(
            "filter: {{ids: [acme__textutil-1]}}\nmodel: {{base_url: \"http://localhost:{model_port}\", model: m, api_key_env: REAL_MODEL_KEY}}\n"
        ),
    );
    let yaml = std::fs::read_to_string(&file).unwrap().replace(
        "  timeout: 60s\n",
        &format!("  timeout: 60s\n  network: [\"localhost:{index_port}\"]\n"),
    );
    std::fs::write(&file, yaml).unwrap();
    let out = critic()
        .args(["experiment", "run"])
        .arg(&file)
        .arg("--output-dir")
        .arg(lab.path("out"))
        .args(["--control", "gold"])
        .env("REAL_MODEL_KEY", "the-real-model-key")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = results(&lab.path("out"));
    let run = &r[&key("textutil", "fix-only")];
    assert_eq!(
        (run["status"].as_str(), run["resolved"].as_bool()),
        (Some("ok"), Some(true)),
        "{run}"
    );
    let agent_dir = lab.path("out/runs/acme__textutil-1/fix-only/0/agent");
    let found = std::fs::read_to_string(agent_dir.join("probe.txt")).unwrap();
    let lines: Vec<&str> = found.lines().collect();
    assert_eq!(
        lines,
        [
            "out 0",
            "instances 0",
            "repos 0",
            "cache 0",
            "model model ok",
            "key 0",
            "service unreachable",
            "index index ok"
        ],
        "{found}"
    );
    let _ = std::fs::remove_file(&canary);
    assert!(!outside.exists());
    // The index, named by host, reached through the turn's own /etc/hosts;
    // the model through the run's proxy, which recorded the call.
    assert!(std::fs::read_to_string(agent_dir.join("../hosts"))
        .unwrap()
        .contains("127.0.0.2\tlocalhost\n"));
    let calls = jsonl(&agent_dir.join("../model.jsonl"));
    assert_eq!(
        (calls.len(), calls[0]["status"].as_u64()),
        (1, Some(200)),
        "{calls:#?}"
    );
    assert_eq!(calls[0]["response"], "model ok");
    assert_eq!(model_hits.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(service_hits.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert_eq!(index_hits.load(std::sync::atomic::Ordering::SeqCst), 1);
    let run_dir = lab.path("out/runs/acme__textutil-1/fix-only/0");
    assert!(!run_dir.join("transcript").exists());
    let verdict = std::fs::read_to_string(run_dir.join("round-1/verdict.json")).unwrap();
    assert!(!verdict.contains("SECRET"), "{verdict}");
    // The process it left behind would have written 3 s after its start.
    std::thread::sleep(std::time::Duration::from_secs(4));
    assert!(
        !agent_dir.join("late.txt").exists(),
        "a process of the turn outlived it"
    );
}

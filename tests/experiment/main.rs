//! `critic experiment` end to end: three small real Python packages with
//! seeded bugs, each a git repository made here and described as a
//! SWE-bench instance; the shipped `fix-only` and `brt-only` arms; an agent
//! behind the `command` adapter (a scripted program, `AGENT`, that writes
//! what its plan says for each arm and round: a stand-in for a model, not
//! an imitation of any agent's transcript); every finish judged by the real
//! `critic check`, every grade a real pytest run in a confined scratch copy.

#[path = "../common/browser.rs"]
mod browser;
#[path = "../common/mod.rs"]
mod common;

mod grading;
mod hostile_agents;
mod model_traffic;
mod real_agents;
mod refused_input;
mod report;
mod runs;

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

//! The real agent programs, installed once per checkout from the npm
//! registry (`tests/agents/package-lock.json` into `target/agents`), and
//! stand-ins for their model APIs (`tests/agents/<agent>/standin.py`): local
//! HTTP servers that answer each model call with the next turn of a script
//! and log every request, so a test can assert on what the model was sent.
//! The stand-ins are the only test doubles here: a paid model API cannot
//! run in a test.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `target/agents`, where the agents' npm packages are installed.
fn install_dir() -> PathBuf {
    super::root().join("target/agents")
}

/// The installed agent program `bin` (e.g. `claude`), installing the locked
/// packages first if this checkout has not yet (one process at a time).
pub fn npm_bin(bin: &str) -> PathBuf {
    let dir = install_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let lock = std::fs::File::create(dir.join(".install.lock")).unwrap();
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let lockfile = super::root().join("tests/agents/package-lock.json");
    let stamp = dir.join(".installed-lock");
    let wanted = std::fs::read(&lockfile).unwrap();
    if std::fs::read(&stamp).ok().as_deref() != Some(&wanted[..]) {
        for f in ["package.json", "package-lock.json"] {
            std::fs::copy(super::root().join("tests/agents").join(f), dir.join(f)).unwrap();
        }
        let out = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .output()
            .expect("npm is needed to install the agents the tests drive");
        assert!(
            out.status.success(),
            "npm ci in {} failed:\n{}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(&stamp, &wanted).unwrap();
    }
    let path = dir.join("node_modules/.bin").join(bin);
    assert!(path.exists(), "{} is not installed", path.display());
    path
}

/// A running stand-in for an agent's model API.
pub struct Standin {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Standin {
    /// Start `tests/agents/<agent>/standin.py` with `script` (a list of
    /// turns, see the stand-in's docstring).
    pub fn start(agent: &str, script: &Value) -> Standin {
        let dir = tempfile::tempdir().unwrap();
        let script_file = dir.path().join("script.json");
        std::fs::write(&script_file, script.to_string()).unwrap();
        let log = dir.path().join("requests.jsonl");
        let port_file = dir.path().join("port");
        let child = Command::new("python3")
            .arg(
                super::root()
                    .join("tests/agents")
                    .join(agent)
                    .join("standin.py"),
            )
            .arg("--script")
            .arg(&script_file)
            .arg("--log")
            .arg(&log)
            .arg("--port-file")
            .arg(&port_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let port = loop {
            if let Some(port) = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|p| p.trim().parse().ok())
            {
                break port;
            }
            assert!(
                Instant::now() < deadline,
                "the {agent} stand-in did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        Standin {
            child,
            port,
            log,
            _dir: dir,
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request received so far: `{"method", "path", "body", ...}`.
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The requests that took a turn of the script, in order.
    pub fn turns(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r.get("turn").is_some_and(|t| !t.is_null()))
            .collect()
    }
}

impl Drop for Standin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where a test's agent keeps its own files: an empty home directory.
pub fn home(dir: &Path) -> PathBuf {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    home
}

/// The hook's state for a session, as the critic keeps it under `state`.
pub fn harness_state(state: &Path, skill: &str) -> Vec<Value> {
    let mut found = Vec::new();
    for session in std::fs::read_dir(state.join(skill)).into_iter().flatten() {
        let file = session.unwrap().path().join("harness.json");
        if let Ok(text) = std::fs::read_to_string(file) {
            found.push(serde_json::from_str(&text).unwrap());
        }
    }
    found
}

/// `critic hook install <agent>` at project scope in `project` for
/// `skill`, the critic's state under `state`, more hook flags after.
pub fn install_hook(agent: &str, project: &Path, skill: &Path, state: &Path, more: &[&str]) {
    let out = super::run(
        super::critic()
            .args(["hook", "install", agent, "--project"])
            .arg(project)
            .arg("--skill")
            .arg(skill)
            .args(["--", "--state-dir"])
            .arg(state)
            .args(more),
    );
    assert!(out.status.success(), "{}", super::stderr(&out));
}

/// Every file under `dir` whose name ends with `suffix`.
pub fn files_under(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_under(&path, suffix));
        } else if path.to_string_lossy().ends_with(suffix) {
            found.push(path);
        }
    }
    found
}

/// `critic events --output json` of `file`.
pub fn events_of(file: &Path) -> Vec<Value> {
    let out = super::run(
        super::critic()
            .args(["events", "--output", "json"])
            .arg(file),
    );
    assert!(out.status.success(), "{}", super::stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The Python of the virtual environment holding the Python agents
/// (`tests/agents/python/requirements.lock`, installed once per checkout into
/// `target/agents/python-venv` with the Python 3.12 pyenv provides).
pub fn python_env() -> PathBuf {
    super::venv(
        &install_dir().join("python-venv"),
        Some("3.12.1"),
        Some(&super::root().join("tests/agents/python/requirements.lock")),
    )
}

/// [`python_env`] with `examples/openhands` (the `pluggable_critic`
/// package) installed in it, as a user would install it. It is built from a
/// copy: setuptools writes `build/` and `*.egg-info` beside the sources.
pub fn python_with_package() -> PathBuf {
    let python = python_env();
    let lock = std::fs::File::create(install_dir().join(".package.lock")).unwrap();
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let copy = tempfile::tempdir().unwrap();
    super::copy_tree(&super::root().join("examples/openhands"), copy.path());
    let out = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--no-deps",
        ])
        .arg(copy.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    python
}

/// The follow-up `ran-tests` gives a finish that edited and ran no tests.
pub const RAN_TESTS_FOLLOWUP: &str = "You did not run the tests";

/// What every agent's round of "edit, stop, rejected, run the tests, stop,
/// accepted" must show: four model calls, `followup` in the input of the
/// third and not of the second, `calc.py` of `repo` fixed (if given), and
/// one session counted twice, rejected once. `inputs` are the model calls'
/// inputs as text, `log` the agent's output for messages.
pub fn assert_rejected_then_accepted(
    inputs: &[String],
    calc: Option<&Path>,
    state: &Path,
    log: &str,
) {
    assert_eq!(inputs.len(), 4, "{log}");
    assert!(!inputs[1].contains(RAN_TESTS_FOLLOWUP), "{}", inputs[1]);
    assert!(inputs[2].contains(RAN_TESTS_FOLLOWUP), "{}", inputs[2]);
    if let Some(calc) = calc {
        assert_eq!(
            std::fs::read_to_string(calc).unwrap(),
            "def add(a, b):\n    return a + b\n"
        );
    }
    let states = harness_state(state, "ran-tests");
    assert_eq!(states.len(), 1);
    assert_eq!(
        (
            states[0]["iteration"].as_u64(),
            states[0]["rejections"].as_u64()
        ),
        (Some(2), Some(1))
    );
}

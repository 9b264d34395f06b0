//! The host's promises against a hostile skill, a hostile agent and hostile
//! model output (docs/SECURITY.md lists each promise with its test here).
//! Every test attacks the real binary: a hostile detector (the misbehave
//! fixture), a workspace an agent shaped (symlinks, edited state), or a
//! command a detector runs.

#[path = "../common/mod.rs"]
mod common;

mod agent_output;
mod detector_limits;
mod git;
mod run_confinement;
mod scratch_copies;
mod service_sockets;
mod workspace_and_state;

use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A one-signal skill running the misbehave fixture with `config`.
fn skill_with(config: Value, extra: &str) -> tempfile::TempDir {
    temp_skill(&format!(
        "name: t\nversion: 0.1.0\nmax_iterations: 5\ncapabilities: [log, read-file, run, run-matrix]\n{extra}signals:\n  - {{name: s, type: hard_gate, detector: {{misbehave}}, timeout: 20s, config: {config}}}\n"
    ))
}

/// Run a check; returns (exit code, verdict or Null, stderr, raw stdout length).
fn verdict_of(cmd: &mut std::process::Command) -> (i32, Value, String, usize) {
    let out = run(cmd);
    let code = out.status.code().unwrap_or(-1);
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (code, v, stderr(&out), out.stdout.len())
}

/// The results of the run requests a misbehave `run` detector made.
fn run_results(repo: &Repo, requests: Value, extra: &[&str]) -> Vec<Value> {
    let skill = skill_with(json!({"mode": "run", "requests": requests}), "");
    let state = tempfile::tempdir().unwrap();
    let (code, v, err, _) =
        verdict_of(check(skill.path(), repo.path(), &demo_events(3), state.path()).args(extra));
    assert_eq!(code, 0, "{err}\n{v:#}");
    v["signals"][0]["metadata"]["results"]
        .as_array()
        .unwrap()
        .clone()
}

/// The tests that make directories in `/run` (and remove them after), one
/// at a time.
fn run_dirs() -> std::sync::MutexGuard<'static, ()> {
    static RUN_DIRS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    RUN_DIRS.lock().unwrap_or_else(|e| e.into_inner())
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

//! SWE-bench's own grading (5.0.2, from PyPI) and the sources of real
//! packages, for the tests that compare grading with it.

use super::{python_venv, root};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A lock or script of `tests/grading/`.
pub fn fixture(name: &str) -> PathBuf {
    root().join("tests/grading").join(name)
}

/// SWE-bench 5.0.2's Python.
pub fn python() -> PathBuf {
    python_venv("swebench", Some(&fixture("swebench.lock")))
}

/// SWE-bench's `get_logs_eval` and `get_eval_report` on each case, `{"log":
/// path, "parser": name, "repo": owner/name, "f2p": [..], "p2p": [..]}`
/// (see `tests/grading/swebench_grade.py`).
pub fn grades(cases: &[Value]) -> Vec<Value> {
    let mut child = Command::new(python())
        .arg(fixture("swebench_grade.py"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(json!(cases).to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The eval log SWE-bench's harness writes around a test command's output.
pub fn eval_log(path: &Path, stdout: &str, stderr: &str, exit: i32) {
    let text = format!(
        "+ test command\n>>>>> Start Test Output\n{stdout}\n{stderr}\n>>>>> End Test Output\n>>>>> Test Exit Code: {exit}\n"
    );
    std::fs::write(path, text).unwrap();
}

/// The sdist `lock` pins (one, hash-checked), unpacked under target/ as
/// `dir_name`: its root.
pub fn sdist(lock: &str, dir_name: &str) -> PathBuf {
    let place = root().join("target/grading-sources");
    let unpacked = place.join(dir_name);
    if unpacked.is_dir() {
        return unpacked;
    }
    std::fs::create_dir_all(&place).unwrap();
    let download = tempfile::tempdir_in(&place).unwrap();
    let pip = python().parent().unwrap().join("pip");
    let out = Command::new(&pip)
        .args([
            "download",
            "-q",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--require-hashes",
            "--disable-pip-version-check",
        ])
        .arg("-r")
        .arg(fixture(lock))
        .arg("-d")
        .arg(download.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tarball = std::fs::read_dir(download.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".tar.gz"))
        .unwrap();
    let out = Command::new("tar")
        .arg("xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(download.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    std::fs::rename(download.path().join(dir_name), &unpacked).unwrap();
    unpacked
}

/// An output's `results.jsonl`, one record per arm (each prediction's
/// model, for graded predictions).
pub fn results_by_arm(path: &Path) -> std::collections::BTreeMap<String, Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|r| (r["arm"].as_str().unwrap().to_string(), r))
        .collect()
}

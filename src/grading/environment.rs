//! Per-instance Python environments: an instance that pins its
//! requirements (`requirements`, pip's format) and names no interpreter of
//! its own gets a virtualenv built once per (repository, version,
//! requirements, base interpreter) under `OUT/envs/`, and reused by every
//! run and every later call. The base interpreter is the experiment's
//! `python` (or `python3` on PATH). The environment is built where it stays
//! (scripts such as `bin/pytest` name their interpreter by its path) and
//! marked finished last; a directory without the mark is built again.

use crate::grading::dataset::Instance;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The interpreter of `instance`'s environment under `root`, built from its
/// requirements with `base` if it is not there yet. An error names the
/// instance's record and says what pip said.
pub fn python_for(
    instance: &Instance,
    requirements: &str,
    base: &Path,
    root: &Path,
) -> Result<PathBuf, String> {
    let mut h = Sha256::new();
    for part in [
        instance.repo.as_str(),
        instance.version.as_deref().unwrap_or(""),
        requirements,
        &base.to_string_lossy(),
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    let digest = hex::encode(&h.finalize()[..6]);
    let name = format!(
        "{}-{}-{digest}",
        instance.repo.replace('/', "__"),
        crate::sys::path_name::slug(instance.version.as_deref().unwrap_or("any")),
    );
    let dir = root.join(&name);
    let python = dir.join("bin/python");
    let done = dir.join(".complete");
    if done.is_file() {
        return Ok(python);
    }
    let at = &instance.place;
    let fail = |what: &str, out: &std::process::Output| {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(12).collect();
        format!(
            "{at}: field `requirements`: {what} failed: {}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        )
    };
    if dir.exists() {
        crate::sys::remove_tree::remove_tree(&dir)
            .map_err(|e| format!("{}: an unfinished environment: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(root).map_err(|e| format!("{}: {e}", root.display()))?;
    let venv = Command::new(base)
        .args(["-m", "venv"])
        .arg(&dir)
        .output()
        .map_err(|e| format!("{at}: cannot run {}: {e}", base.display()))?;
    if !venv.status.success() {
        return Err(fail(&format!("{} -m venv", base.display()), &venv));
    }
    let file = dir.join("requirements.txt");
    std::fs::write(&file, requirements).map_err(|e| format!("{}: {e}", file.display()))?;
    // Pinned as given: nothing but the listed packages (hashes, when the
    // file has them, are checked by pip).
    let pip = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "--no-deps",
            "-r",
        ])
        .arg(&file)
        .output()
        .map_err(|e| format!("{at}: cannot run pip: {e}"))?;
    if !pip.status.success() {
        return Err(fail("pip install", &pip));
    }
    std::fs::write(&done, b"").map_err(|e| format!("{}: {e}", done.display()))?;
    Ok(python)
}

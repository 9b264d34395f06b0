//! Python detectors in tests: the pinned componentize-py, and skills built
//! with it once per change of their sources.

use super::{critic, root, venv};
use std::path::{Path, PathBuf};

/// The componentize-py of `tests/python/componentize-requirements.lock`,
/// installed once per checkout into `target/componentize-venv`.
pub fn componentize_py() -> PathBuf {
    let python = venv(
        &root().join("target/componentize-venv"),
        None,
        Some(&root().join("tests/python/componentize-requirements.lock")),
    );
    python.parent().unwrap().join("componentize-py")
}

/// The Python skill at `src` (its `critic.yaml` and `detector/`), copied to
/// `target/python-skills/<name>` and built there with `critic build` unless
/// `critic build --check` finds the component already built from these
/// sources. Its path.
pub fn built_python_skill(src: &Path) -> PathBuf {
    let dest = root()
        .join("target/python-skills")
        .join(src.file_name().unwrap());
    std::fs::create_dir_all(&dest).unwrap();
    let guard = std::fs::File::create(dest.with_extension("lock")).unwrap();
    rustix::fs::flock(&guard, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let _ = std::fs::remove_dir_all(dest.join("detector"));
    super::copy_tree(src, &dest);
    let fresh = critic()
        .args(["build", "--check"])
        .arg(&dest)
        .output()
        .unwrap()
        .status
        .success();
    if !fresh {
        let out = critic()
            .arg("build")
            .arg(&dest)
            .env("CRITIC_COMPONENTIZE_PY", componentize_py())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "critic build {}: {}",
            dest.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    dest
}

//! Grading: whether a patch resolves an instance, as SWE-bench decides it.
//!
//! `critic experiment` and `critic mpe` both grade through this layer. It
//! holds the instance records and prediction files (`dataset.rs`), an
//! instance made ready to run from its clone (`instance.rs`, with the
//! files a diff leaves in `diff_files.rs`), the environments tests run in
//! (`environment.rs`), where test runs happen and their cache (`runner.rs`:
//! confined scratch copies; `container.rs`: a fresh container per run), and
//! how a run's output is read into a status per test id (`pytest.rs`).

pub mod container;
pub mod dataset;
pub mod diff_files;
pub mod environment;
pub mod instance;
pub mod pytest;
pub mod runner;
pub mod status;

use std::path::{Path, PathBuf};

/// The clone of `repo` (`owner/name`) under `repos`: `<owner>__<name>`.
pub fn clone_dir(repos: &Path, repo: &str) -> PathBuf {
    repos.join(repo.replace('/', "__"))
}

//! Grading: whether a patch resolves an instance, as SWE-bench decides it.
//!
//! `critic experiment` and `critic mpe` both grade through this layer. It
//! holds the instance records and prediction files (`dataset.rs`), an
//! instance made ready to run from its clone (`instance.rs`, with the
//! files a diff leaves in `diff_files.rs`), the environments tests run in
//! (`environment.rs`), where test runs happen and their cache (`runner.rs`:
//! confined scratch copies; `container.rs`: a fresh container per run), the
//! test command and its log format (`test_command.rs`, the ported SWE-bench
//! parsers in `log_parsers.rs`), pytest's own report of a run
//! (`pytest_report.rs`), a run's output read into a status per test id and
//! judged (`record.rs`), SWE-bench's rules for those statuses
//! (`status.rs`), whether an interpreter can grade at all
//! (`interpreter.rs`), SWE-bench's environment specifications for records
//! that give only its fields (`swebench_specs.rs`), and a `tox
//! --current-env` command read as the pytest command it runs (`tox.rs`).

/// The version of how grading decides, part of each experiment run's
/// definition (see `experiment::definition`): raise it with any change
/// that can change a grade, so a rerun re-makes the runs graded before.
pub const VERSION: u32 = 1;

pub mod conda_env;
pub mod container;
pub mod dataset;
pub mod diff_files;
pub mod environment;
pub mod grade;
pub mod instance;
pub mod interpreter;
pub mod log_parsers;
pub mod private_copy;
pub mod pytest_report;
pub mod record;
pub mod restore;
pub mod runner;
pub mod status;
pub mod swebench_specs;
pub mod test_command;
pub mod tox;

use std::path::{Path, PathBuf};

/// The clone of `repo` (`owner/name`) under `repos`: `<owner>__<name>`.
pub fn clone_dir(repos: &Path, repo: &str) -> PathBuf {
    repos.join(repo.replace('/', "__"))
}

//! What running an experiment gives back: what it did, what it shows while
//! runs go, and why it could not run.

use super::db::{self, Run};
use super::{file, report};

/// Why an experiment could not run (a run's own failure is a result in the
/// database, not this).
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// The experiment file.
    #[error(transparent)]
    File(#[from] file::FileError),
    /// The instances, their clones or interpreters.
    #[error("{0}")]
    Input(String),
    /// The output directory.
    #[error("{0}")]
    Output(String),
    /// The database.
    #[error(transparent)]
    Db(#[from] db::DbError),
    /// The report.
    #[error(transparent)]
    Report(#[from] report::ReportError),
    /// A skill's detector failed on a benign finish before any run.
    #[error(
        "a skill's detector fails on a benign finish (the instance's base, no change), so no \
         agent ran; fix the skill or its environment:\n{0}"
    )]
    SkillPreflight(String),
}

/// What the caller shows while runs go.
pub trait Progress: Sync {
    /// What a rerun reuses, makes and supersedes, one line per arm and
    /// reason (see [`super::rebuild::plan`]).
    fn plan(&self, _lines: &[String]) {}
    /// `pending` of `total` runs are to be made; `broken` others are not,
    /// their instance being broken; `checking` instances' pre-flights are
    /// still to run, beside the runs.
    fn start(&self, total: usize, pending: usize, broken: usize, checking: usize);
    /// A pre-flight found `broken`: `runs` of the runs to make are not made.
    fn broken(&self, broken: &db::Broken, runs: usize);
    /// A run ended (`retrying`: an infrastructure error that is tried again).
    fn finished(&self, run: &Run, retrying: bool);
}

/// Shows nothing.
pub struct Quiet;

impl Progress for Quiet {
    fn start(&self, _: usize, _: usize, _: usize, _: usize) {}
    fn broken(&self, _: &db::Broken, _: usize) {}
    fn finished(&self, _: &Run, _: bool) {}
}

/// What a call of [`super::run`] did.
#[derive(Debug)]
pub struct Finished {
    /// Runs of this shard.
    pub total: usize,
    /// Runs made now (retries not counted twice).
    pub ran: usize,
    /// Runs not started because the experiment's cost cap was reached.
    pub not_started: usize,
    /// Why `evaluate.mpe` could not class the runs' tests, if it could not.
    pub mpe_error: Option<String>,
    /// Every run of this shard as stored, in key order.
    pub runs: Vec<Run>,
    /// Instances whose golden patch did not resolve them: their runs were
    /// not made.
    pub broken: Vec<db::Broken>,
}

impl Finished {
    /// Runs that are not results: infrastructure errors, replays that diverged.
    pub fn errors(&self) -> Vec<&Run> {
        self.runs.iter().filter(|r| !r.status.is_result()).collect()
    }
}

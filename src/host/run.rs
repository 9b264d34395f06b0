//! Capabilities `run` and `run-matrix`: a detector has the host apply a patch
//! to the base commit in a scratch copy of the workspace and run a command
//! there (see [`crate::sandbox::scratch`]). `run-matrix` runs many such requests in
//! parallel, one scratch copy per job.
//!
//! Commands run outside the WebAssembly sandbox, so a skill gets these only
//! by declaring them, and the user can deny them. They run confined (see
//! [`crate::sandbox::confine`]): they write only to their copy, have no network and
//! cannot see the host; where the machine cannot confine them, runs are
//! refused unless the user opted out with `--unconfined-runs`.

use crate::sandbox::scratch::{self, ScratchPool};
use critic_sdk::RunRequest;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

/// Most requests one `run-matrix` call may make.
pub const MAX_MATRIX_REQUESTS: usize = 1000;

/// Most output (stdout and stderr, each) all the runs of one `run-matrix`
/// call may capture together: each run's own ceiling is cut to its share,
/// so the results the host holds stay bounded whatever the request count.
pub const MATRIX_OUTPUT_BYTES: usize = 16 << 20;

/// The runs of one check: the scratch pool is made on the first request and
/// removed when the check ends.
pub struct Runner {
    workspace: PathBuf,
    base: String,
    jobs: Option<usize>,
    confined: bool,
    pool: OnceLock<Result<ScratchPool, String>>,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("workspace", &self.workspace)
            .field("base", &self.base)
            .field("jobs", &self.jobs)
            .field(
                "pool",
                &self.pool.get().map(|p| p.as_ref().map(|p| p.path())),
            )
            .finish()
    }
}

impl Runner {
    /// Runs against commit `base` of the repository at `workspace`, up to
    /// `jobs` at a time (`None`: one per core, asked only when a run needs
    /// it), confined unless `confined` is false.
    pub fn new(workspace: PathBuf, base: String, jobs: Option<usize>, confined: bool) -> Runner {
        Runner {
            workspace,
            base,
            jobs,
            confined,
            pool: OnceLock::new(),
        }
    }

    fn pool(&self) -> Result<&ScratchPool, String> {
        self.pool
            .get_or_init(|| {
                if let Some(missing) = self
                    .confined
                    .then(|| crate::sandbox::confine::support().missing())
                    .flatten()
                {
                    return Err(format!(
                        "runs are confined, and this machine lacks {missing} (`critic doctor` \
                         shows what it has); pass --unconfined-runs to run commands with your \
                         full privileges instead"
                    ));
                }
                ScratchPool::new(
                    &self.workspace,
                    &self.base,
                    self.jobs.unwrap_or_else(crate::sys::parallel::cores).max(1),
                    self.confined,
                )
                .map_err(|e| format!("cannot make scratch copies of the workspace: {e}"))
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Capability `run`: one JSON `RunRequest` in, one JSON `RunResult` out.
    pub fn run(&self, request: &str, deadline: Instant) -> Result<String, String> {
        let request: RunRequest =
            serde_json::from_str(request).map_err(|e| format!("invalid run request: {e}"))?;
        scratch::check_requests(std::slice::from_ref(&request))?;
        let result = self.pool()?.run(&request, deadline);
        serde_json::to_string(&result).map_err(|e| e.to_string())
    }

    /// Capability `run-matrix`: a JSON array of requests, run in parallel.
    pub fn run_matrix(&self, requests: &str, deadline: Instant) -> Result<String, String> {
        let mut requests: Vec<RunRequest> = serde_json::from_str(requests)
            .map_err(|e| format!("invalid run-matrix request: {e}"))?;
        scratch::check_requests(&requests)?;
        if requests.is_empty() {
            return Ok("[]".into());
        }
        if requests.len() > MAX_MATRIX_REQUESTS {
            return Err(format!(
                "run-matrix: {} requests, at most {MAX_MATRIX_REQUESTS} per call; split them",
                requests.len()
            ));
        }
        let share = MATRIX_OUTPUT_BYTES / requests.len();
        for r in &mut requests {
            let own = r.output_bytes.unwrap_or(scratch::DEFAULT_OUTPUT_BYTES);
            r.output_bytes = Some(own.min(scratch::MAX_OUTPUT_BYTES).min(share));
        }
        let results = self.pool()?.run_all(&requests, deadline);
        serde_json::to_string(&results).map_err(|e| e.to_string())
    }
}

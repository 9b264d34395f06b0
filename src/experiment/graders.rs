//! [`Graders`]: the grading back ends of an experiment's instances, opened
//! when an instance's first run needs one and closed after its last.

use super::db::{self, RunKey};
use super::instances::Ready;
use super::options::Environment;
use super::run_grade;
use crate::grading::runner::{Backend, Backends, LocalScratch};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The grading back ends, one per instance while it has runs left.
pub(crate) struct Graders {
    pub(crate) workers: usize,
    pub(crate) unconfined_runs: bool,
    pub(crate) env: Environment,
    /// Where container runs' inputs are written.
    scratch: PathBuf,
    open: Mutex<BTreeMap<String, Arc<dyn Backend>>>,
    left: Mutex<BTreeMap<String, usize>>,
}
impl Graders {
    pub(crate) fn new(
        pending: &[(RunKey, u32)],
        workers: usize,
        unconfined_runs: bool,
        env: Environment,
        scratch: PathBuf,
    ) -> Graders {
        let mut left = BTreeMap::new();
        for (k, _) in pending {
            *left.entry(k.instance_id.clone()).or_insert(0) += 1;
        }
        Graders {
            workers,
            unconfined_runs,
            env,
            scratch,
            open: Mutex::new(BTreeMap::new()),
            left: Mutex::new(left),
        }
    }

    fn backend(
        &self,
        id: &str,
        repo: &Path,
        base: &str,
        python: &Path,
    ) -> Result<Arc<dyn Backend>, String> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(b) = open.get(id) {
            return Ok(b.clone());
        }
        if let Environment::Container(spec) = &self.env {
            let b: Arc<dyn Backend> = Arc::new(crate::grading::container::Containers::new(
                spec,
                id,
                &self.scratch,
            ));
            open.insert(id.to_string(), b.clone());
            return Ok(b);
        }
        let backends = LocalScratch {
            // The golden tests and the run's own test on base and fix, for
            // each run of the instance graded at once.
            workers: 3 * self.workers.max(1),
            confined: !self.unconfined_runs,
        };
        let b: Arc<dyn Backend> = Arc::from(backends.open(repo, base, python)?);
        open.insert(id.to_string(), b.clone());
        Ok(b)
    }

    /// Grade `patch` of a run of `ready` whose directory is `dir`.
    pub(crate) fn grade(
        &self,
        ready: &Ready,
        own: &run_grade::ArmTests,
        patch: &str,
        dir: &Path,
    ) -> run_grade::Graded {
        let logs = dir.join("grade");
        let _ = std::fs::create_dir_all(&logs);
        let id = &ready.instance.id;
        match self.backend(
            id,
            &ready.prepared.repo,
            &ready.prepared.base,
            &ready.python,
        ) {
            Ok(backend) => run_grade::grade(
                &ready.prepared,
                backend.as_ref(),
                patch,
                own,
                &ready.python,
                &logs,
            ),
            Err(e) => run_grade::Graded {
                infra: Some(e),
                ..Default::default()
            },
        }
    }

    /// Grade `ready`'s golden patch, its log under `dir`: `None` when it
    /// resolves the instance, else why not and the end of its log.
    pub(crate) fn preflight(&self, ready: &Ready, dir: &Path) -> Option<db::Broken> {
        let id = &ready.instance.id;
        let broken = |reason: String, log_tail: String| db::Broken {
            instance_id: id.clone(),
            reason,
            log_tail,
        };
        let backend = match self.backend(
            id,
            &ready.prepared.repo,
            &ready.prepared.base,
            &ready.python,
        ) {
            Ok(b) => b,
            Err(e) => return Some(broken(e, String::new())),
        };
        let (resolution, ran) = crate::grading::grade::resolve(
            &ready.prepared,
            backend.as_ref(),
            &ready.instance.patch,
        );
        if std::fs::create_dir_all(dir).is_ok() {
            let _ = std::fs::write(
                dir.join("golden.json"),
                serde_json::to_vec_pretty(&serde_json::json!({
                    "argv": ran.request.argv, "result": ran.result, "grade": resolution,
                }))
                .unwrap_or_default(),
            );
        }
        if resolution.resolved == Some(true) {
            return None;
        }
        let failed: Vec<&str> = resolution
            .ids
            .iter()
            .filter(|g| !g.success)
            .map(|g| g.id.as_str())
            .collect();
        let reason = resolution
            .infra
            .clone()
            .or(resolution.problem.clone())
            .unwrap_or_else(|| {
                format!(
                    "the golden patch leaves {} of its {} golden tests failing: {}",
                    failed.len(),
                    resolution.ids.len(),
                    failed.join(", ")
                )
            });
        let tail = ran
            .result
            .as_ref()
            .map(crate::grading::grade::log_tail)
            .unwrap_or_default();
        Some(broken(
            format!("the golden patch does not resolve it: {reason}"),
            tail,
        ))
    }

    /// One run of `id` is over; its scratch copies go with its last.
    pub(crate) fn done(&self, id: &str) {
        let mut left = self.left.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = left.get_mut(id) {
            *n -= 1;
            if *n == 0 {
                self.open
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(id);
            }
        }
    }
}

//! Where MPE's test runs happen, and the cache that makes each identical
//! (code, tests, command) run once.
//!
//! [`Backend`] is the seam: today's back end is the host's pool of confined
//! scratch copies of the user's clone ([`LocalScratch`]); a container back end
//! (the experiment runner's) implements the same two calls for an image
//! instead of a clone and an interpreter.

use crate::host::scratch::ScratchPool;
use crate::mpe::pytest::RunRecord;
use critic_sdk::{RunRequest, RunResult};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Runs requests against one repository at one commit.
pub trait Backend: Send + Sync {
    /// Every request, in parallel as the back end allows; results in order.
    fn run_all(&self, requests: &[RunRequest]) -> Vec<RunResult>;
}

/// Makes the back end of one instance.
pub trait Backends: Sync {
    /// A back end for `repo` (a clone) at `base`.
    fn open(&self, repo: &Path, base: &str) -> Result<Box<dyn Backend>, String>;
}

/// The host's confined scratch copies, `workers` at a time.
pub struct LocalScratch {
    /// Parallel runs.
    pub workers: usize,
    /// Whether runs are confined (`--unconfined-runs` turns it off).
    pub confined: bool,
}

impl Backends for LocalScratch {
    fn open(&self, repo: &Path, base: &str) -> Result<Box<dyn Backend>, String> {
        if let Some(missing) = self
            .confined
            .then(|| crate::host::confine::support().missing())
            .flatten()
        {
            return Err(format!(
                "runs are confined, and this machine lacks {missing} (`critic doctor` shows \
                 what it has); pass --unconfined-runs to run tests with your full privileges"
            ));
        }
        let pool = ScratchPool::new(repo, base, self.workers.max(1), self.confined)
            .map_err(|e| format!("cannot make scratch copies of {}: {e}", repo.display()))?;
        Ok(Box::new(pool))
    }
}

impl Backend for ScratchPool {
    fn run_all(&self, requests: &[RunRequest]) -> Vec<RunResult> {
        // Each request carries its own time limit; the batch has none.
        ScratchPool::run_all(
            self,
            requests,
            Instant::now() + Duration::from_secs(86_400 * 365),
        )
    }
}

/// The cache key of a request: everything that decides its outcome.
pub fn key(request: &RunRequest) -> String {
    let mut h = Sha256::new();
    let identity = serde_json::json!({
        "argv": request.argv,
        "env": request.env,
        "files": request.files,
        "patch": request.patch,
        "timeout_ms": request.timeout_ms,
    });
    h.update(identity.to_string().as_bytes());
    hex::encode(&h.finalize()[..16])
}

/// Runs through a back end, each distinct request once: outcomes are kept
/// in memory and, when a directory is given, on disk (one file per key,
/// written whole), so a rerun does not repeat them.
pub struct CachedRuns {
    dir: Option<PathBuf>,
    memory: Mutex<HashMap<String, RunRecord>>,
    /// Runs that actually ran, for progress and the benchmark.
    pub ran: std::sync::atomic::AtomicUsize,
    /// Sum of the wall times of runs that ran, milliseconds.
    pub ran_ms: Mutex<f64>,
}

impl CachedRuns {
    /// A cache under `dir` (or only in memory).
    pub fn new(dir: Option<PathBuf>) -> CachedRuns {
        CachedRuns {
            dir,
            memory: Mutex::new(HashMap::new()),
            ran: std::sync::atomic::AtomicUsize::new(0),
            ran_ms: Mutex::new(0.0),
        }
    }

    fn path(&self, key: &str) -> Option<PathBuf> {
        self.dir
            .as_ref()
            .map(|d| d.join(&key[..2]).join(format!("{key}.json")))
    }

    fn lookup(&self, key: &str) -> Option<RunRecord> {
        if let Some(r) = self
            .memory
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
        {
            return Some(r.clone());
        }
        let path = self.path(key)?;
        let bytes = std::fs::read(&path).ok()?;
        match serde_json::from_slice::<RunRecord>(&bytes) {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::warn!(path = %path.display(), "ignoring an unreadable cached run: {e}");
                None
            }
        }
    }

    fn store(&self, key: &str, record: &RunRecord) {
        // A run that could not start is the machine's problem, not an outcome.
        if record.error.is_none() {
            if let Some(path) = self.path(key) {
                let write = || -> std::io::Result<()> {
                    std::fs::create_dir_all(path.parent().unwrap_or(Path::new(".")))?;
                    crate::sys::atomic_file::write(&path, &serde_json::to_vec(record)?, false)
                };
                if let Err(e) = write() {
                    tracing::warn!(path = %path.display(), "cannot cache the run: {e}");
                }
            }
        }
        self.memory
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_string(), record.clone());
    }

    /// The outcome of every request, running those not yet known (each
    /// distinct one once) on `backend`.
    pub fn run(&self, backend: &dyn Backend, requests: &[RunRequest]) -> Vec<RunRecord> {
        let keys: Vec<String> = requests.iter().map(key).collect();
        let mut known: BTreeMap<&str, RunRecord> = BTreeMap::new();
        let mut todo: Vec<(&str, &RunRequest)> = Vec::new();
        for (k, r) in keys.iter().zip(requests) {
            if known.contains_key(k.as_str()) || todo.iter().any(|(t, _)| *t == k.as_str()) {
                continue;
            }
            match self.lookup(k) {
                Some(rec) => {
                    known.insert(k, rec);
                }
                None => todo.push((k, r)),
            }
        }
        if !todo.is_empty() {
            let batch: Vec<RunRequest> = todo.iter().map(|(_, r)| (*r).clone()).collect();
            let results = backend.run_all(&batch);
            for ((k, _), result) in todo.iter().zip(results) {
                let record = RunRecord::of(&result);
                self.ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                *self.ran_ms.lock().unwrap_or_else(|p| p.into_inner()) += record.duration_ms;
                self.store(k, &record);
                known.insert(k, record);
            }
        }
        keys.iter().map(|k| known[k.as_str()].clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counting(AtomicUsize);

    impl Backend for Counting {
        fn run_all(&self, requests: &[RunRequest]) -> Vec<RunResult> {
            self.0.fetch_add(requests.len(), Ordering::SeqCst);
            requests
                .iter()
                .map(|r| RunResult {
                    exit_code: Some(0),
                    stdout: format!(
                        "== short test summary info ==\nPASSED {}::test\n",
                        r.argv[0]
                    ),
                    ..RunResult::default()
                })
                .collect()
        }
    }

    fn req(name: &str) -> RunRequest {
        RunRequest {
            argv: vec![name.into()],
            ..RunRequest::default()
        }
    }

    #[test]
    fn identical_requests_run_once_and_a_rerun_reads_the_disk() {
        let dir = tempfile::tempdir().unwrap();
        let backend = Counting(AtomicUsize::new(0));
        let cache = CachedRuns::new(Some(dir.path().to_path_buf()));
        let got = cache.run(&backend, &[req("a"), req("b"), req("a")]);
        assert_eq!(backend.0.load(Ordering::SeqCst), 2);
        assert_eq!(got[0], got[2]);
        assert!(got[1].tests.contains_key("b::test"));
        let again = CachedRuns::new(Some(dir.path().to_path_buf()));
        let got2 = again.run(&backend, &[req("b"), req("a")]);
        assert_eq!(backend.0.load(Ordering::SeqCst), 2, "nothing ran again");
        assert_eq!(got2[0], got[1]);
    }
}

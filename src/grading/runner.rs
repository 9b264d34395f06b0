//! Where grading's test runs happen (for `critic mpe`, `critic experiment`
//! and its pre-flights), and the cache that makes each identical (code,
//! tests, command) run once.
//!
//! [`Backend`] is the seam: the host's pool of confined scratch copies of a
//! clone ([`LocalScratch`]), or a fresh container per run
//! (`grading::container`), which implements the same two calls for an
//! image instead of a clone and an interpreter.

use crate::grading::log_parsers::LogFormat;
use crate::grading::record::RunRecord;
use crate::sandbox::scratch::ScratchPool;
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

    /// What, besides a request, decides its outcome here: the repository,
    /// its commit, the environment the tests run in, how runs are isolated.
    /// Part of every cache key, so a changed environment runs again.
    fn identity(&self) -> &str;
}

/// Makes the back end of one instance.
pub trait Backends: Sync {
    /// A back end for `repo` (a clone) at `base`, its tests run by `python`.
    fn open(&self, repo: &Path, base: &str, python: &Path) -> Result<Box<dyn Backend>, String>;

    /// Whether its runs are confined (what they see is then asked of a
    /// confined run before any starts).
    fn confined(&self) -> bool;
}

/// The host's confined scratch copies, `workers` at a time.
pub struct LocalScratch {
    /// Parallel runs.
    pub workers: usize,
    /// Whether runs are confined (`--unconfined-runs` turns it off).
    pub confined: bool,
}

/// The scratch copies of one clone, and what their runs depend on.
struct LocalBackend {
    pool: ScratchPool,
    identity: String,
}

/// Modification times, in nanoseconds, of `python` and of its prefix's
/// package directories: installing or removing a package changes one.
fn environment_stamp(python: &Path) -> serde_json::Value {
    let mtime = |p: &Path| {
        std::fs::metadata(p)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos().to_string())
    };
    let mut stamps = BTreeMap::new();
    stamps.insert(python.display().to_string(), mtime(python));
    let prefix = python.parent().and_then(Path::parent);
    for lib in ["lib", "lib64", "local/lib"] {
        let Some(dir) = prefix.map(|p| p.join(lib)) else {
            continue;
        };
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            for packages in ["site-packages", "dist-packages"] {
                let at = entry.path().join(packages);
                if at.is_dir() {
                    stamps.insert(at.display().to_string(), mtime(&at));
                }
            }
        }
    }
    serde_json::json!(stamps)
}

impl Backends for LocalScratch {
    fn open(&self, repo: &Path, base: &str, python: &Path) -> Result<Box<dyn Backend>, String> {
        if let Some(missing) = self
            .confined
            .then(|| crate::sandbox::confine::support().missing())
            .flatten()
        {
            return Err(format!(
                "runs are confined, and this machine lacks {missing} (`critic doctor` shows \
                 what it has); pass --unconfined-runs to run tests with your full privileges"
            ));
        }
        // The interpreter is started through `env`: seen wherever it lies.
        let pool = ScratchPool::new(repo, base, self.workers.max(1), self.confined)
            .map_err(|e| format!("cannot make scratch copies of {}: {e}", repo.display()))?
            .seeing(vec![python.to_path_buf()]);
        let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let identity = serde_json::json!({
            "repo": real(repo),
            "base": base,
            "confined": self.confined,
            "python": real(python),
            "environment": environment_stamp(&real(python)),
        })
        .to_string();
        Ok(Box::new(LocalBackend { pool, identity }))
    }

    fn confined(&self) -> bool {
        self.confined
    }
}

impl Backend for LocalBackend {
    fn run_all(&self, requests: &[RunRequest]) -> Vec<RunResult> {
        // Each request carries its own time limit; the batch has none.
        self.pool
            .run_all(requests, Instant::now() + Duration::from_secs(86_400 * 365))
    }

    fn identity(&self) -> &str {
        &self.identity
    }
}

/// The cache key of a request: everything that decides its outcome.
pub fn key(backend: &str, request: &RunRequest) -> String {
    let mut h = Sha256::new();
    let identity = serde_json::json!({
        "backend": backend,
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
        // A run that could not start or timed out may say more about the
        // machine's load than the code: kept for this command only.
        if record.error.is_none() && !record.timed_out {
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
    /// distinct one once) on `backend`; their logs are in `format`.
    pub fn run(
        &self,
        backend: &dyn Backend,
        requests: &[RunRequest],
        format: LogFormat,
    ) -> Vec<RunRecord> {
        let keys: Vec<String> = requests
            .iter()
            .map(|r| key(backend.identity(), r))
            .collect();
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
                let record = RunRecord::of(&result, format);
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
                    stdout: format!("{}::test ... ok\n", r.argv[0]),
                    ..RunResult::default()
                })
                .collect()
        }

        fn identity(&self) -> &str {
            "counting"
        }
    }

    fn req(name: &str) -> RunRequest {
        RunRequest {
            argv: vec![name.into()],
            ..RunRequest::default()
        }
    }

    #[test]
    fn installing_a_package_changes_the_environment_stamp() {
        let prefix = tempfile::tempdir().unwrap();
        let python = prefix.path().join("bin/python");
        let site = prefix.path().join("lib/python3.11/site-packages");
        std::fs::create_dir_all(python.parent().unwrap()).unwrap();
        std::fs::create_dir_all(&site).unwrap();
        std::fs::write(&python, "").unwrap();
        let before = environment_stamp(&python);
        assert!(before.to_string().contains("site-packages"), "{before}");
        std::thread::sleep(Duration::from_millis(20));
        std::fs::create_dir(site.join("newpkg")).unwrap();
        assert_ne!(environment_stamp(&python), before);
    }

    #[test]
    fn the_back_end_is_part_of_the_key() {
        let r = req("a");
        assert_eq!(key("one", &r), key("one", &r));
        assert_ne!(key("one", &r), key("two", &r));
    }

    #[test]
    fn identical_requests_run_once_and_a_rerun_reads_the_disk() {
        let dir = tempfile::tempdir().unwrap();
        let backend = Counting(AtomicUsize::new(0));
        let cache = CachedRuns::new(Some(dir.path().to_path_buf()));
        let django = LogFormat::Django;
        let got = cache.run(&backend, &[req("a"), req("b"), req("a")], django);
        assert_eq!(backend.0.load(Ordering::SeqCst), 2);
        assert_eq!(got[0], got[2]);
        assert!(got[1].statuses.contains_key("b::test"));
        let again = CachedRuns::new(Some(dir.path().to_path_buf()));
        let got2 = again.run(&backend, &[req("b"), req("a")], django);
        assert_eq!(backend.0.load(Ordering::SeqCst), 2, "nothing ran again");
        assert_eq!(got2[0], got[1]);
    }
}

//! The pre-flight's outcomes kept across output directories: an instance's
//! golden patch is graded once per record, environment and grading code,
//! and a second output (another experiment, a new predictions file) with
//! the same instance in the same environment reuses the outcome and its
//! log instead of grading it again.
//!
//! The key covers everything the outcome depends on: the record's fields
//! that grading reads, the commit runs start from, the interpreter and the
//! lock its environment was built from, the test time limit, where tests
//! run, and the `critic` binary itself (a new grader grades again). Entries
//! live in the user's cache (`CRITIC_CACHE_DIR/preflight`, else
//! `~/.cache/pluggable-critic/preflight`), private to the user; one that
//! cannot be read is graded again.

use crate::experiment::db::Broken;
use crate::experiment::instances::Ready;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// One instance's pre-flight, as kept.
#[derive(Serialize, Deserialize)]
struct Entry {
    /// Why the golden patch did not resolve it (`None`: it did).
    broken: Option<(String, String)>,
    /// The golden run's `golden.json`.
    golden: serde_json::Value,
}

/// Where outcomes are kept; `None` keeps nothing.
pub struct PreflightCache {
    dir: Option<PathBuf>,
}

impl PreflightCache {
    /// The user's cache, when it can be made private to the user.
    pub fn open() -> PreflightCache {
        let dir = Self::place().filter(|d| crate::sys::private_dir::ensure(d).is_ok());
        PreflightCache { dir }
    }

    /// Where outcomes are kept when the cache can be had: an agent's turn
    /// must not see them (a golden run's log quotes the golden tests).
    pub fn place() -> Option<PathBuf> {
        crate::sys::private_dir::cache_root().map(|d| d.join("preflight"))
    }

    /// The kept outcome of `ready`'s pre-flight, its log written in `dir`
    /// as a fresh pre-flight would write it; `None` when none is kept.
    pub fn kept(&self, ready: &Ready, environment: &str, dir: &Path) -> Option<Option<Broken>> {
        let key = Self::key(ready, environment);
        let outcome = self.get(&key, &ready.instance.id, &dir.join("golden.json"))?;
        eprintln!(
            "experiment: {}: the pre-flight of an earlier output is reused (same record, \
             environment and critic)",
            ready.instance.id
        );
        Some(outcome)
    }

    /// `ready`'s pre-flight graded by `grade`, its log in `dir`, and kept.
    pub fn grade(
        &self,
        ready: &Ready,
        environment: &str,
        dir: &Path,
        grade: impl FnOnce() -> Option<Broken>,
    ) -> Option<Broken> {
        let golden = dir.join("golden.json");
        // What is kept is this run's log, never an earlier call's.
        let _ = std::fs::remove_file(&golden);
        let outcome = grade();
        self.put(&Self::key(ready, environment), outcome.as_ref(), &golden);
        outcome
    }

    /// The key of `ready`'s pre-flight where tests run as `environment`
    /// says.
    fn key(ready: &Ready, environment: &str) -> String {
        let i = &ready.instance;
        // An environment critic built is known by its name (its digest),
        // wherever the output directory holding it lies.
        let env = ready.python.parent().and_then(Path::parent);
        let python = match env.filter(|e| e.join(".complete").is_file()) {
            Some(e) => e
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
            None => ready.python.to_string_lossy().into_owned(),
        };
        let lock = ready
            .python
            .parent()
            .and_then(Path::parent)
            .map(crate::grading::environment::lock_of)
            .and_then(|l| std::fs::read(l).ok())
            .map(|b| hex::encode(Sha256::digest(b)))
            .unwrap_or_default();
        let fields = serde_json::json!({
            "id": i.id, "repo": i.repo, "base_commit": i.base_commit, "patch": i.patch,
            "test_patch": i.test_patch, "f2p": i.fail_to_pass, "p2p": i.pass_to_pass,
            "test_cmd": i.test_cmd, "log_parser": i.log_parser,
            "eval_type": format!("{:?}", i.eval_type), "eval_commands": i.eval_commands,
            "start": ready.base, "python": python, "lock": lock,
            "timeout_ms": ready.prepared.timeout.as_millis() as u64,
            "environment": environment, "critic": binary_digest(),
        });
        hex::encode(Sha256::digest(fields.to_string().as_bytes()))
    }

    /// The kept outcome of `key`, its golden run's log written to
    /// `golden` (as a fresh pre-flight would write it).
    fn get(&self, key: &str, instance_id: &str, golden: &Path) -> Option<Option<Broken>> {
        let file = self.dir.as_ref()?.join(format!("{key}.json"));
        let bytes = crate::sys::bounded_read::read_regular_file_nofollow(&file, 64 << 20).ok()?;
        let entry: Entry = serde_json::from_slice(&bytes).ok()?;
        if let Some(dir) = golden.parent() {
            std::fs::create_dir_all(dir).ok()?;
        }
        std::fs::write(golden, serde_json::to_vec_pretty(&entry.golden).ok()?).ok()?;
        Some(entry.broken.map(|(reason, log_tail)| Broken {
            instance_id: instance_id.to_string(),
            reason,
            log_tail,
        }))
    }

    /// Keep `outcome` of `key`, with the golden run's log at `golden`;
    /// not when the harness failed (a run that could not be made may be
    /// made next time).
    fn put(&self, key: &str, outcome: Option<&Broken>, golden: &Path) {
        let Some(dir) = &self.dir else { return };
        let Some(golden) = std::fs::read(golden)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .filter(|g| g["grade"]["infra"].is_null() && !g["result"].is_null())
        else {
            return;
        };
        let entry = Entry {
            broken: outcome.map(|b| (b.reason.clone(), b.log_tail.clone())),
            golden,
        };
        if let Ok(bytes) = serde_json::to_vec(&entry) {
            let file = dir.join(format!("{key}.json"));
            if let Err(e) = crate::sys::atomic_file::write(&file, &bytes, false) {
                tracing::warn!("cannot keep the pre-flight in {}: {e}", file.display());
            }
        }
    }
}

/// The running `critic` binary's digest: the grading code.
fn binary_digest() -> &'static str {
    static DIGEST: OnceLock<String> = OnceLock::new();
    DIGEST.get_or_init(|| {
        std::env::current_exe()
            .and_then(std::fs::read)
            .map(|b| hex::encode(Sha256::digest(b)))
            .unwrap_or_else(|_| "unknown".into())
    })
}

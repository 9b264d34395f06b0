//! Scratch copies of the workspace for the `run` capabilities.
//!
//! A [`ScratchPool`] checks the base commit out once into a pristine
//! *template* (through a temporary index, so the user's index and files are
//! never touched), then copies it into one *slot* per parallel job. A run takes
//! a free slot, applies its patch and files, runs the command in its own
//! process group, and gives the slot back after a reset: every file is
//! compared with the stamp taken when the slot was made, changed or missing
//! files are copied back from the template and new ones removed. Slots are
//! reused for the life of the pool; everything lives under one temp directory
//! that is removed when the pool is dropped, and directories left behind by a
//! killed host are swept by the next pool.

use crate::git;
use critic_sdk::{RunRequest, RunResult};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Default per-run timeout.
pub const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(60);
/// Default cap on captured stdout and stderr, each.
pub const DEFAULT_OUTPUT_BYTES: usize = 64 << 10;
/// Environment variables passed through from the host to commands; nothing
/// else of the host's environment (API keys, tokens) reaches them.
pub const PASSED_ENV: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ"];
/// Name prefix of pool directories under the temp dir.
const POOL_PREFIX: &str = "critic-scratch-";

/// Why a pool could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// A file system operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// git failed to check out the base.
    #[error(transparent)]
    Git(#[from] git::GitError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SandboxError + '_ {
    move |source| SandboxError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What a file looked like when its slot was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dir: bool,
    len: u64,
    modified: Option<SystemTime>,
    #[cfg(unix)]
    ino: u64,
}

fn stamp(meta: &std::fs::Metadata) -> Stamp {
    Stamp {
        dir: meta.is_dir(),
        len: meta.len(),
        modified: meta.modified().ok(),
        #[cfg(unix)]
        ino: std::os::unix::fs::MetadataExt::ino(meta),
    }
}

struct Slot {
    dir: PathBuf,
    tmp: PathBuf,
    stamps: HashMap<PathBuf, Stamp>,
}

/// Scratch copies of one workspace at one base commit.
pub struct ScratchPool {
    root: tempfile::TempDir,
    template: PathBuf,
    jobs: usize,
    free: Mutex<Vec<Slot>>,
    made: Mutex<usize>,
    returned: Condvar,
}

impl ScratchPool {
    /// Check `base` of the repository at `workspace` out into a new pool with
    /// up to `jobs` slots (made on demand).
    pub fn new(workspace: &Path, base: &str, jobs: usize) -> Result<ScratchPool, SandboxError> {
        sweep_stale();
        let root = tempfile::Builder::new()
            .prefix(&format!("{POOL_PREFIX}{}-", std::process::id()))
            .tempdir()
            .map_err(io(&std::env::temp_dir()))?;
        let template = root.path().join("template");
        std::fs::create_dir(&template).map_err(io(&template))?;
        let index = root.path().join("index");
        let mut read = git::command(workspace);
        read.env("GIT_INDEX_FILE", &index)
            .args(["read-tree", "--end-of-options", base]);
        git::run(read)?;
        let mut checkout = git::command(workspace);
        let prefix = format!("{}/", template.display());
        checkout
            .env("GIT_INDEX_FILE", &index)
            .args(["checkout-index", "--all", "--force"])
            .arg(format!("--prefix={prefix}"));
        git::run(checkout)?;
        Ok(ScratchPool {
            root,
            template,
            jobs: jobs.max(1),
            free: Mutex::new(Vec::new()),
            made: Mutex::new(0),
            returned: Condvar::new(),
        })
    }

    /// The pool's directory (removed on drop).
    pub fn path(&self) -> &Path {
        self.root.path()
    }

    /// Run one request in a free slot, waiting for one if all are busy.
    /// Never past `deadline`.
    pub fn run(&self, request: &RunRequest, deadline: Instant) -> RunResult {
        let slot = match self.take() {
            Ok(slot) => slot,
            Err(e) => return failed(format!("cannot prepare a scratch copy: {e}")),
        };
        let result = match prepare(&slot.dir, request) {
            Ok(()) => execute(&slot, request, deadline),
            Err(message) => failed(message),
        };
        let mut slot = slot;
        match reset(&mut slot, &self.template) {
            Ok(()) => self.give_back(slot),
            Err(e) => {
                // A slot that cannot be put back is dropped; a new one replaces it.
                tracing::warn!("discarding scratch copy {}: {e}", slot.dir.display());
                let _ = std::fs::remove_dir_all(&slot.dir);
                *self.made.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
                self.returned.notify_one();
            }
        }
        result
    }

    /// Run every request, up to `jobs` at a time; results in request order.
    pub fn run_all(&self, requests: &[RunRequest], deadline: Instant) -> Vec<RunResult> {
        let workers = self.jobs.min(requests.len());
        let next = std::sync::atomic::AtomicUsize::new(0);
        let results: Vec<Mutex<RunResult>> = requests.iter().map(|_| Mutex::default()).collect();
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(request) = requests.get(i) else {
                        break;
                    };
                    let result = self.run(request, deadline);
                    *results[i].lock().unwrap_or_else(|p| p.into_inner()) = result;
                });
            }
        });
        results
            .into_iter()
            .map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
            .collect()
    }

    fn take(&self) -> Result<Slot, SandboxError> {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(slot) = free.pop() {
                return Ok(slot);
            }
            let mut made = self.made.lock().unwrap_or_else(|p| p.into_inner());
            if *made < self.jobs {
                let n = *made;
                *made += 1;
                drop(made);
                drop(free);
                return self.make_slot(n).inspect_err(|_| {
                    *self.made.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
                });
            }
            drop(made);
            free = self.returned.wait(free).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn give_back(&self, slot: Slot) {
        self.free
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(slot);
        self.returned.notify_one();
    }

    fn make_slot(&self, n: usize) -> Result<Slot, SandboxError> {
        let dir = self.root.path().join(format!("slot-{n}"));
        let tmp = self.root.path().join(format!("tmp-{n}"));
        let _ = std::fs::remove_dir_all(&dir);
        copy_tree(&self.template, &dir)?;
        std::fs::create_dir_all(&tmp).map_err(io(&tmp))?;
        let mut stamps = HashMap::new();
        walk(&dir, &dir, &mut |rel, meta| {
            stamps.insert(rel.to_path_buf(), stamp(meta));
        })
        .map_err(io(&dir))?;
        Ok(Slot { dir, tmp, stamps })
    }
}

fn failed(message: String) -> RunResult {
    RunResult {
        error: Some(message),
        ..RunResult::default()
    }
}

/// Remove pool directories whose host process is gone (killed before its
/// pool could clean up).
fn sweep_stale() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(POOL_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        if pid != std::process::id() as i32 && !process_alive(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn process_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks whether the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// A workspace-relative path that stays inside the tree.
pub fn relative(path: &str) -> Result<&Path, String> {
    let p = Path::new(path);
    if path.is_empty()
        || !p
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(format!(
            "refused path {path:?}: paths must be relative to the workspace, without `..`"
        ));
    }
    Ok(p)
}

/// Apply the request's patch and files to a slot at the base.
fn prepare(dir: &Path, request: &RunRequest) -> Result<(), String> {
    if let Some(patch) = request.patch.as_deref().filter(|p| !p.trim().is_empty()) {
        apply_patch(dir, patch)?;
    }
    for (path, content) in &request.files {
        let full = dir.join(relative(path)?);
        match content {
            Some(text) => {
                if let Some(parent) = full.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| format!("{path}: {e}"))?;
                }
                std::fs::write(&full, text).map_err(|e| format!("{path}: {e}"))?;
            }
            None => match std::fs::remove_file(&full) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("{path}: {e}")),
            },
        }
    }
    Ok(())
}

fn apply_patch(dir: &Path, patch: &str) -> Result<(), String> {
    use critic_sdk::FileStatus;
    let files = critic_sdk::diff::parse(patch)
        .map_err(|e| format!("the patch is not a valid diff: {e}"))?;
    for f in &files {
        if f.binary {
            return Err(format!(
                "{}: binary changes cannot be applied in a scratch copy",
                f.path
            ));
        }
        let target = dir.join(relative(&f.path)?);
        let source = match (&f.status, &f.old_path) {
            (FileStatus::Renamed | FileStatus::Copied, Some(old)) => dir.join(relative(old)?),
            _ => target.clone(),
        };
        let old = match f.status {
            FileStatus::Added => String::new(),
            _ => std::fs::read_to_string(&source)
                .map_err(|e| format!("the patch does not apply: {}: {e}", f.path))?,
        };
        if f.status == FileStatus::Deleted {
            std::fs::remove_file(&target).map_err(|e| format!("{}: {e}", f.path))?;
            continue;
        }
        let new = critic_sdk::diff::apply(&old, &f.hunks)
            .map_err(|e| format!("the patch does not apply to the base: {}: {e}", f.path))?;
        if f.status == FileStatus::Renamed {
            std::fs::remove_file(&source).map_err(|e| format!("{}: {e}", f.path))?;
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", f.path))?;
        }
        std::fs::write(&target, new).map_err(|e| format!("{}: {e}", f.path))?;
    }
    Ok(())
}

/// Put a slot back to its stamps: copy changed or missing files from the
/// template, remove what the run added.
fn reset(slot: &mut Slot, template: &Path) -> Result<(), SandboxError> {
    let mut seen = std::collections::HashSet::new();
    let mut extra = Vec::new();
    let mut changed = Vec::new();
    walk(
        &slot.dir,
        &slot.dir,
        &mut |rel, meta| match slot.stamps.get(rel) {
            Some(s) if *s == stamp(meta) => {
                seen.insert(rel.to_path_buf());
            }
            Some(s) if s.dir && meta.is_dir() => {
                // Entries added or removed inside; the walk visits them.
                seen.insert(rel.to_path_buf());
            }
            Some(_) => {
                seen.insert(rel.to_path_buf());
                changed.push(rel.to_path_buf());
            }
            None => extra.push(rel.to_path_buf()),
        },
    )
    .map_err(io(&slot.dir))?;
    for rel in extra.iter().rev() {
        let full = slot.dir.join(rel);
        let meta = std::fs::symlink_metadata(&full);
        match meta {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&full).map_err(io(&full))?,
            Ok(_) => std::fs::remove_file(&full).map_err(io(&full))?,
            Err(_) => {}
        }
    }
    let missing = slot.stamps.keys().filter(|k| !seen.contains(*k)).cloned();
    let mut restore: Vec<PathBuf> = changed.into_iter().chain(missing).collect();
    // Parents before children.
    restore.sort_by_key(|p| p.components().count());
    for rel in &restore {
        let (from, to) = (template.join(rel), slot.dir.join(rel));
        if std::fs::symlink_metadata(&from).is_ok_and(|m| m.is_dir()) {
            if !to.is_dir() {
                let _ = std::fs::remove_file(&to);
                copy_tree(&from, &to)?;
            }
        } else {
            if std::fs::symlink_metadata(&to).is_ok_and(|m| m.is_dir()) {
                std::fs::remove_dir_all(&to).map_err(io(&to))?;
            }
            copy_entry(&from, &to)?;
        }
    }
    // Restamp what was restored (copies get new mtimes and inodes).
    for rel in restore {
        let full = slot.dir.join(&rel);
        let meta = std::fs::symlink_metadata(&full).map_err(io(&full))?;
        slot.stamps.insert(rel, stamp(&meta));
    }
    let _ = std::fs::remove_dir_all(&slot.tmp);
    std::fs::create_dir_all(&slot.tmp).map_err(io(&slot.tmp))?;
    Ok(())
}

/// Visit every entry under `dir` (not following symlinks), parents first.
fn walk(
    root: &Path,
    dir: &Path,
    visit: &mut dyn FnMut(&Path, &std::fs::Metadata),
) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let meta = entry.metadata()?;
        let rel = path.strip_prefix(root).unwrap_or(&path);
        visit(rel, &meta);
        if meta.is_dir() {
            walk(root, &path, visit)?;
        }
    }
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), SandboxError> {
    std::fs::create_dir_all(to).map_err(io(to))?;
    for entry in std::fs::read_dir(from).map_err(io(from))? {
        let entry = entry.map_err(io(from))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type().map_err(io(&src))?.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            copy_entry(&src, &dst)?;
        }
    }
    Ok(())
}

fn copy_entry(from: &Path, to: &Path) -> Result<(), SandboxError> {
    let meta = std::fs::symlink_metadata(from).map_err(io(from))?;
    let _ = std::fs::remove_file(to);
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(from).map_err(io(from))?;
        std::os::unix::fs::symlink(target, to).map_err(io(to))?;
    } else {
        std::fs::copy(from, to).map_err(io(to))?;
    }
    Ok(())
}

/// `{scratch}` replaced by the slot's path.
fn expand(text: &str, dir: &Path) -> String {
    text.replace("{scratch}", &dir.display().to_string())
}

/// Run the request's command in its slot and collect the result.
fn execute(slot: &Slot, request: &RunRequest, deadline: Instant) -> RunResult {
    let Some(program) = request.argv.first() else {
        return failed("the run request has an empty argv".into());
    };
    let cwd = match request.cwd.as_deref() {
        Some(c) => match relative(c) {
            Ok(rel) => slot.dir.join(rel),
            Err(e) => return failed(e),
        },
        None => slot.dir.clone(),
    };
    let mut cmd = Command::new(expand(program, &slot.dir));
    cmd.args(request.argv[1..].iter().map(|a| expand(a, &slot.dir)))
        .current_dir(&cwd)
        .env_clear();
    for key in PASSED_ENV {
        if let Some(v) = std::env::var_os(key) {
            cmd.env(key, v);
        }
    }
    cmd.env("TMPDIR", &slot.tmp)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env(
            "PYTHONPATH",
            python_path(&slot.dir, request.env.get("PYTHONPATH")),
        );
    for (k, v) in request.env.iter().filter(|(k, _)| *k != "PYTHONPATH") {
        cmd.env(k, expand(v, &slot.dir));
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let timeout = request
        .timeout_ms
        .map_or(DEFAULT_RUN_TIMEOUT, Duration::from_millis)
        .min(deadline.saturating_duration_since(Instant::now()));
    let cap = request.output_bytes.unwrap_or(DEFAULT_OUTPUT_BYTES);
    let started = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return failed(format!(
                "command not found: {program:?} (is it installed and on PATH?)"
            ))
        }
        Err(e) => return failed(format!("cannot start {program:?}: {e}")),
    };
    let pgid = child.id() as i32;
    let readers = [
        child.stdout.take().map(|o| capture(o, cap)),
        child.stderr.take().map(|e| capture(e, cap)),
    ];
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() >= timeout => {
                timed_out = true;
                kill_group(pgid);
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(_) => break None,
        }
    };
    // Background processes the command left behind die with its group.
    kill_group(pgid);
    let [out, err] = readers.map(|r| r.and_then(|h| h.join().ok()).unwrap_or_default());
    #[cfg(unix)]
    let signal = status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s));
    #[cfg(not(unix))]
    let signal = None;
    RunResult {
        exit_code: status.and_then(|s| s.code()),
        signal,
        timed_out,
        stdout: out,
        stderr: err,
        duration_ms: started.elapsed().as_secs_f64() * 1000.0,
        error: None,
    }
}

/// The scratch copy (and its `src/`, for src-layout packages) come first on
/// Python's path, after any entries the request gives: a package the user
/// installed in editable mode from the workspace would otherwise be imported
/// from the workspace instead of the patched copy.
fn python_path(dir: &Path, requested: Option<&String>) -> String {
    let mut parts: Vec<String> = requested.map(|p| expand(p, dir)).into_iter().collect();
    parts.push(dir.display().to_string());
    if dir.join("src").is_dir() {
        parts.push(dir.join("src").display().to_string());
    }
    parts.join(":")
}

fn kill_group(pgid: i32) {
    // SAFETY: kill(2) on our own child's process group.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

/// Read a pipe to the end on a thread, keeping the head and the tail.
fn capture<R: Read + Send + 'static>(mut pipe: R, cap: usize) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let half = cap / 2;
        let (mut head, mut tail, mut dropped) =
            (Vec::new(), std::collections::VecDeque::new(), 0usize);
        let mut buf = [0u8; 8192];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            for &b in &buf[..n] {
                if head.len() < half {
                    head.push(b);
                } else {
                    tail.push_back(b);
                    if tail.len() > cap - half {
                        tail.pop_front();
                        dropped += 1;
                    }
                }
            }
        }
        let mut text = String::from_utf8_lossy(&head).into_owned();
        if dropped > 0 {
            text.push_str(&format!("\n[... {dropped} bytes cut ...]\n"));
        }
        text.push_str(&String::from_utf8_lossy(tail.make_contiguous()));
        text
    })
}

/// Requests as the guest sent them, checked for the things a run can refuse
/// up front.
pub fn check_requests(requests: &[RunRequest]) -> Result<(), String> {
    for (i, r) in requests.iter().enumerate() {
        if r.argv.is_empty() {
            return Err(format!("request {i}: argv is empty"));
        }
        for path in r.files.keys() {
            relative(path).map_err(|e| format!("request {i}: {e}"))?;
        }
    }
    Ok(())
}

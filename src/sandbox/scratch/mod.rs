//! Scratch copies of the workspace for the `run` capabilities.
//!
//! A [`ScratchPool`] has git check the base commit out into one *slot* per
//! parallel job (through a temporary index, so the user's index and files are
//! never touched). A run takes a free slot, applies its patch and files, runs
//! the command in its own process group, and gives the slot back after a
//! reset: every entry is compared with the stamp taken when the slot was made,
//! changed or missing files are rewritten from the base commit's blobs (read
//! from git once, then cached) and new ones removed. Slots are reused for the
//! life of the pool.
//!
//! Everything lives under one directory, on tmpfs (`/dev/shm`) when the
//! machine has it, since creating thousands of files on a disk file system
//! can cost seconds (`CRITIC_SCRATCH_DIR` overrides the place). It is removed
//! when the pool is dropped, and directories left behind by a killed host are
//! swept by the next pool.

mod execute;
mod place;

use execute::execute;
use execute::failed;
pub use execute::{probe, relative, DEFAULT_OUTPUT_BYTES, MAX_OUTPUT_BYTES};
pub use place::scratch_root;
use place::POOL_PREFIX;

use crate::sandbox::beneath::Beneath;
use crate::sys::remove_tree::remove_tree;
use crate::workspace::git;
use critic_sdk::{RunRequest, RunResult};
use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::{Instant, SystemTime};

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

/// What an entry looked like when its slot was made. The change time is
/// what a run cannot forge: every write (through any name, or a shared
/// mapping), `chmod`, `utime` and new hard link moves it, and nothing sets
/// it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dir: bool,
    link: bool,
    len: u64,
    modified: Option<SystemTime>,
    changed: (i64, i64),
    ino: u64,
    links: u64,
    mode: u32,
}

fn stamp(meta: &std::fs::Metadata) -> Stamp {
    use std::os::unix::fs::MetadataExt;
    Stamp {
        dir: meta.is_dir(),
        link: meta.file_type().is_symlink(),
        len: meta.len(),
        modified: meta.modified().ok(),
        changed: (meta.ctime(), meta.ctime_nsec()),
        ino: meta.ino(),
        links: meta.nlink(),
        mode: meta.mode() & 0o7777,
    }
}

struct Slot {
    dir: PathBuf,
    tmp: PathBuf,
    /// Reports what runs touch, so a reset need not stat every file; `None`
    /// when inotify is unavailable, out of watches, or the copy is larger
    /// than [`Watch::MAX_ENTRIES`] (then reset walks).
    watch: Option<Watch>,
    /// Keyed by the relative path's bytes (hashing bytes is much cheaper than
    /// hashing a `Path` component by component, and reset looks up every entry).
    stamps: HashMap<Vec<u8>, Stamp>,
}

fn key(rel: &Path) -> &[u8] {
    rel.as_os_str().as_bytes()
}

fn path_of(key: &[u8]) -> &Path {
    Path::new(std::ffi::OsStr::from_bytes(key))
}

/// Scratch copies of one workspace at one base commit.
pub struct ScratchPool {
    root: tempfile::TempDir,
    workspace: PathBuf,
    /// The git directory checkouts use: its configuration read once, its
    /// filter drivers off.
    git: git::PrivateGitDir,
    base: String,
    jobs: usize,
    free: Mutex<Vec<Slot>>,
    made: Mutex<usize>,
    returned: Condvar,
    blobs: Mutex<HashMap<PathBuf, Blob>>,
    /// Names slots; never reused, so a replacement never meets a live slot.
    serial: std::sync::atomic::AtomicUsize,
    /// Whether commands run confined (see [`crate::sandbox::confine`]).
    confined: bool,
    /// Programs every run needs to see wherever they lie (the interpreter
    /// grading was given), besides the one each run starts.
    seen: Vec<PathBuf>,
}

/// A file's content at the base commit, shared by the slots that restore it.
type Blob = std::sync::Arc<Vec<u8>>;

impl ScratchPool {
    /// A pool for commit `base` of the repository at `workspace`, with up to
    /// `jobs` slots (checked out on demand, in parallel), whose commands run
    /// confined unless `confined` is false.
    pub fn new(
        workspace: &Path,
        base: &str,
        jobs: usize,
        confined: bool,
    ) -> Result<ScratchPool, SandboxError> {
        let place = scratch_root();
        sweep_stale(&place);
        // Private: the copies hold the user's code, in a shared directory.
        let root = tempfile::Builder::new()
            .prefix(&format!("{POOL_PREFIX}{}-", std::process::id()))
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir_in(&place)
            .map_err(io(&place))?;
        // Resolve once: every slot gets the same commit even if a branch moves.
        let mut rev = git::command(workspace);
        rev.args([
            "rev-parse",
            "--absolute-git-dir",
            "--verify",
            "--end-of-options",
        ])
        .arg(format!("{base}^{{commit}}"));
        let out = String::from_utf8_lossy(&git::run(rev)?).into_owned();
        let mut lines = out.lines();
        let (git_dir, base) = (lines.next().unwrap_or(""), lines.next().unwrap_or(""));
        let git = git::PrivateGitDir::new(workspace, Path::new(git_dir))?;
        let base = base.trim().to_string();
        // Runs take long: an interrupt is worth handling from here on.
        crate::sys::interrupt::arm();
        crate::sys::interrupt::remember_dir(root.path());
        Ok(ScratchPool {
            root,
            workspace: workspace.to_path_buf(),
            git,
            base,
            jobs: jobs.max(1),
            free: Mutex::new(Vec::new()),
            made: Mutex::new(0),
            returned: Condvar::new(),
            blobs: Mutex::new(HashMap::new()),
            serial: std::sync::atomic::AtomicUsize::new(0),
            confined,
            seen: Vec::new(),
        })
    }

    /// The pool with `programs` seen by every confined run, read-only,
    /// wherever they lie (`/tmp` included): programs the host chose, such
    /// as the interpreter a run's command starts through `env`.
    pub fn seeing(mut self, programs: Vec<PathBuf>) -> ScratchPool {
        self.seen = programs;
        self
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
            Ok(()) => execute(
                &slot.dir,
                &slot.tmp,
                request,
                deadline,
                self.confined,
                &self.seen,
            ),
            Err(message) => failed(message),
        };
        let mut slot = slot;
        match reset(&mut slot, &|rel| self.blob(rel)) {
            Ok(()) => self.give_back(slot),
            Err(e) => {
                // A slot that cannot be put back is dropped; a new one replaces it.
                tracing::warn!("discarding scratch copy {}: {e}", slot.dir.display());
                for dir in [&slot.dir, &slot.tmp] {
                    if let Err(e) = remove_tree(dir) {
                        tracing::error!("cannot remove scratch copy {}: {e}", dir.display());
                    }
                }
                self.forget_slot();
            }
        }
        result
    }

    /// Run every request, up to `jobs` at a time; results in request order.
    pub fn run_all(&self, requests: &[RunRequest], deadline: Instant) -> Vec<RunResult> {
        crate::sys::parallel::map(requests.len(), self.jobs, |i| {
            self.run(&requests[i], deadline)
        })
    }

    fn take(&self) -> Result<Slot, SandboxError> {
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(slot) = free.pop() {
                return Ok(slot);
            }
            let mut made = self.made.lock().unwrap_or_else(|p| p.into_inner());
            if *made < self.jobs {
                *made += 1;
                drop(made);
                drop(free);
                return self.make_slot().inspect_err(|_| self.forget_slot());
            }
            drop(made);
            free = self.returned.wait(free).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// One slot fewer exists: a waiter may make a new one. The `free` lock is
    /// held so the wake-up cannot fall between a waiter's check and its wait.
    fn forget_slot(&self) {
        let _free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        *self.made.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
        self.returned.notify_all();
    }

    fn give_back(&self, slot: Slot) {
        self.free
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(slot);
        self.returned.notify_one();
    }

    fn make_slot(&self) -> Result<Slot, SandboxError> {
        let n = self
            .serial
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = self.root.path().join(format!("slot-{n}"));
        let tmp = self.root.path().join(format!("tmp-{n}"));
        let index = self.root.path().join(format!("index-{n}"));
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        std::fs::create_dir_all(&tmp).map_err(io(&tmp))?;
        let mut read = git::command(&self.workspace);
        self.git.apply(&mut read);
        read.env("GIT_INDEX_FILE", &index)
            .args(["read-tree", &self.base]);
        git::run(read)?;
        let mut checkout = git::command(&self.workspace);
        self.git.apply(&mut checkout);
        checkout
            .env("GIT_INDEX_FILE", &index)
            .env("GIT_WORK_TREE", &self.workspace)
            .args(["checkout-index", "--all", "--force"])
            .arg(format!("--prefix={}/", dir.display()));
        git::run(checkout)?;
        let _ = std::fs::remove_file(&index);
        let stamps = stamp_tree(&dir).map_err(io(&dir))?;
        let watch = Watch::new(&dir, &stamps);
        Ok(Slot {
            dir,
            tmp,
            watch,
            stamps,
        })
    }

    /// The base commit's content of `rel`, from git once, then from memory.
    fn blob(&self, rel: &Path) -> Result<Blob, SandboxError> {
        if let Some(b) = self
            .blobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(rel)
        {
            return Ok(b.clone());
        }
        let mut show = git::command(&self.workspace);
        show.args(["cat-file", "blob"])
            .arg(format!("{}:{}", self.base, rel.display()));
        let bytes = std::sync::Arc::new(git::run(show)?);
        self.blobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(rel.to_path_buf(), bytes.clone());
        Ok(bytes)
    }
}

impl Drop for ScratchPool {
    fn drop(&mut self) {
        crate::sys::interrupt::forget_dir(self.root.path());
        // The copies' runs shaped them; `TempDir`'s own removal can be
        // defeated and would fail silently.
        if let Err(e) = remove_tree(self.root.path()) {
            tracing::error!(
                "cannot remove scratch pool {}: {e}; remove it by hand",
                self.root.path().display()
            );
        }
    }
}

/// Remove pool directories whose host process is gone (killed before its
/// pool could clean up), first killing commands still running in them.
fn sweep_stale(place: &Path) {
    for pool in crate::sys::interrupt::leftovers(place, POOL_PREFIX) {
        kill_processes_in(&pool);
        if let Err(e) = remove_tree(&pool) {
            tracing::error!(
                "cannot remove stale scratch pool {}: {e}; remove it by hand",
                pool.display()
            );
        }
    }
}

fn kill_processes_in(dir: &Path) {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if std::fs::read_link(p.path().join("cwd")).is_ok_and(|cwd| cwd.starts_with(dir)) {
            // SAFETY: kill(2) on a process running in our own stale scratch dir.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// Apply the request's patch and files to a slot at the base. Every write
/// stays in the slot: paths are relative without `..`, and no symlink (a base
/// commit may hold one pointing anywhere) is followed (see [`Beneath`]).
fn prepare(dir: &Path, request: &RunRequest) -> Result<(), String> {
    let slot = Beneath::open(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if let Some(patch) = request.patch.as_deref().filter(|p| !p.trim().is_empty()) {
        apply_patch(&slot, patch)?;
    }
    for (path, content) in &request.files {
        let rel = relative(path)?;
        match content {
            Some(text) => slot.write(rel, text.as_bytes()),
            None => slot.remove_file(rel),
        }
        .map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(())
}

/// Apply `patch` to the slot as `git apply` would (see
/// [`crate::workspace::apply`]): every result computed first, then removals,
/// then writes, each through no link.
fn apply_patch(slot: &Beneath, patch: &str) -> Result<(), String> {
    use crate::workspace::apply::{self, Entry, Mode};
    let max = crate::sandbox::confine::MAX_FILE_BYTES;
    let mut read = |path: &str| -> Result<Option<Entry>, String> {
        let rel = relative(path)?;
        let kind = slot.kind(rel).map_err(|e| e.to_string())?;
        let entry = match kind {
            None => return Ok(None),
            Some(rustix::fs::FileType::Symlink) => Entry {
                bytes: slot.read_link(rel).map_err(|e| e.to_string())?,
                mode: Mode::Symlink,
            },
            Some(rustix::fs::FileType::RegularFile) => {
                let executable = slot
                    .open_file(rel)
                    .and_then(|f| f.metadata())
                    .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o100 != 0)
                    .map_err(|e| e.to_string())?;
                Entry {
                    bytes: slot.read(rel, max).map_err(|e| e.to_string())?,
                    mode: if executable {
                        Mode::Executable
                    } else {
                        Mode::File
                    },
                }
            }
            // A directory where the patch names a file: git finds no file.
            Some(_) => return Ok(None),
        };
        Ok(Some(entry))
    };
    let results =
        apply::apply(patch, &mut read).map_err(|e| format!("the patch does not apply: {e}"))?;
    for (path, entry) in &results {
        if entry.is_none() {
            let rel = relative(path)?;
            slot.remove_file(rel).map_err(|e| format!("{path}: {e}"))?;
            // git removes the directories a removal leaves empty.
            for dir in rel.ancestors().skip(1) {
                if dir.as_os_str().is_empty() {
                    break;
                }
                slot.remove_empty_dir(dir);
            }
        }
    }
    for (path, entry) in &results {
        let Some(entry) = entry else { continue };
        let rel = relative(path)?;
        match entry.mode {
            Mode::Symlink => slot.symlink(rel, &entry.bytes),
            Mode::File => slot.write_atomic_mode(rel, &entry.bytes, 0o644),
            Mode::Executable => slot.write_atomic_mode(rel, &entry.bytes, 0o755),
        }
        .map_err(|e| format!("{path}: {e}"))?;
    }
    Ok(())
}

/// The stamps of everything under `dir`, `dir` itself (as `""`) included.
fn stamp_tree(dir: &Path) -> std::io::Result<HashMap<Vec<u8>, Stamp>> {
    let mut stamps = HashMap::new();
    stamps.insert(Vec::new(), stamp(&std::fs::symlink_metadata(dir)?));
    walk(dir, dir, &mut |rel, meta| {
        stamps.insert(key(rel).to_vec(), stamp(meta));
    })?;
    Ok(stamps)
}

/// Put a slot back to its stamps: rewrite changed or missing files from the
/// base commit, recreate missing directories (and everything that was in
/// one the run replaced), give directories back their modes, remove what the
/// run added.
fn reset(
    slot: &mut Slot,
    blob: &dyn Fn(&Path) -> Result<Blob, SandboxError>,
) -> Result<(), SandboxError> {
    let touched = slot.watch.as_mut().and_then(Watch::touched);
    let mut matched = 0usize;
    let mut extra = Vec::new();
    let mut changed = Vec::new();
    // A file the watch saw touched is rewritten whatever its stamp says.
    let trust_stamps = touched.is_none();
    let mut check = |rel: &Path, meta: &std::fs::Metadata| match slot.stamps.get(key(rel)) {
        // A directory's times and size move when entries come and go (the
        // walk visits those entries); its mode must stay.
        Some(s) if s.dir && meta.is_dir() && stamp(meta).mode == s.mode => matched += 1,
        Some(s) if !s.dir && trust_stamps && *s == stamp(meta) => matched += 1,
        Some(_) => {
            matched += 1;
            changed.push(key(rel).to_vec());
        }
        None => extra.push(rel.to_path_buf()),
    };
    let mut missing: Vec<Vec<u8>> = Vec::new();
    match &touched {
        // Only the entries the run touched (every directory was watched).
        Some(paths) => {
            for rel in paths {
                match std::fs::symlink_metadata(slot.dir.join(rel)) {
                    Ok(meta) => check(rel, &meta),
                    Err(_) if slot.stamps.contains_key(key(rel)) => missing.push(key(rel).to_vec()),
                    Err(_) => {}
                }
            }
        }
        None => {
            let root = std::fs::symlink_metadata(&slot.dir).map_err(io(&slot.dir))?;
            check(Path::new(""), &root);
            walk(&slot.dir, &slot.dir, &mut check).map_err(io(&slot.dir))?;
            // Only when some stamped entry was not seen: find which.
            if matched < slot.stamps.len() {
                missing = slot
                    .stamps
                    .keys()
                    .filter(|k| std::fs::symlink_metadata(slot.dir.join(path_of(k))).is_err())
                    .cloned()
                    .collect();
            }
        }
    }
    extra.sort();
    extra.dedup();
    changed.sort();
    changed.dedup();
    missing.sort();
    missing.dedup();
    for rel in extra.iter().rev() {
        let full = slot.dir.join(rel);
        match std::fs::symlink_metadata(&full) {
            Ok(m) if m.is_dir() => remove_tree(&full).map_err(io(&full))?,
            Ok(_) => std::fs::remove_file(&full).map_err(io(&full))?,
            Err(_) => {}
        }
    }
    let mut restore: Vec<Vec<u8>> = changed.into_iter().chain(missing).collect();
    // A directory the run removed or replaced (by a symlink to a look-alike,
    // say) takes everything stamped under it along: the lookups above may
    // have gone through the replacement.
    let replaced: Vec<&Path> = restore
        .iter()
        .map(|k| path_of(k))
        .filter(|rel| {
            slot.stamps.get(key(rel)).is_some_and(|s| s.dir)
                && !std::fs::symlink_metadata(slot.dir.join(rel)).is_ok_and(|m| m.is_dir())
        })
        .collect();
    let below: Vec<Vec<u8>> = slot
        .stamps
        .keys()
        .filter(|k| {
            let rel = path_of(k);
            replaced.iter().any(|d| rel != *d && rel.starts_with(d))
        })
        .cloned()
        .collect();
    restore.extend(below);
    restore.sort();
    restore.dedup();
    // Parents before children.
    restore.sort_by_key(|k| path_of(k).components().count());
    for k in &restore {
        let rel = path_of(k);
        let full = slot.dir.join(rel);
        if let Some(dir) = slot.stamps.get(k).filter(|s| s.dir) {
            if std::fs::symlink_metadata(&full).is_ok_and(|m| !m.is_dir()) {
                std::fs::remove_file(&full).map_err(io(&full))?;
            }
            std::fs::create_dir_all(&full).map_err(io(&full))?;
            let mode = std::os::unix::fs::PermissionsExt::from_mode(dir.mode);
            std::fs::set_permissions(&full, mode).map_err(io(&full))?;
            continue;
        }
        if std::fs::symlink_metadata(&full).is_ok_and(|m| m.is_dir()) {
            remove_tree(&full).map_err(io(&full))?;
        }
        restore_file(&full, &blob(rel)?, slot.stamps.get(k))?;
    }
    // Restamp what was restored (rewrites get new mtimes).
    for k in &restore {
        let full = slot.dir.join(path_of(k));
        let meta = std::fs::symlink_metadata(&full).map_err(io(&full))?;
        slot.stamps.insert(k.clone(), stamp(&meta));
    }
    remove_tree(&slot.tmp).map_err(io(&slot.tmp))?;
    std::fs::create_dir_all(&slot.tmp).map_err(io(&slot.tmp))?;
    // Our own writes above were reported too; they are not the next run's.
    // Rewritten files are new inodes, to be watched afresh. When watches
    // were lost (a watched directory went away), start over.
    let intact = touched.is_some()
        && slot.watch.as_mut().is_some_and(|w| {
            w.touched().is_some()
                && restore
                    .iter()
                    .filter(|k| slot.stamps.get(*k).is_some_and(|s| !s.dir && !s.link))
                    .all(|k| w.add(&slot.dir, path_of(k), false).is_some())
        });
    if !intact {
        slot.watch = Watch::new(&slot.dir, &slot.stamps);
    }
    Ok(())
}

/// Write a base file back (a symlink when git stored one).
fn restore_file(full: &Path, bytes: &[u8], was: Option<&Stamp>) -> Result<(), SandboxError> {
    let _ = std::fs::remove_file(full);
    if let Some(parent) = full.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    if was.is_some_and(|s| s.link) {
        let target = std::ffi::OsStr::from_bytes(bytes);
        std::os::unix::fs::symlink(target, full).map_err(io(full))?;
        return Ok(());
    }
    std::fs::write(full, bytes).map_err(io(full))?;
    #[cfg(unix)]
    if let Some(mode) = was.map(|s| s.mode) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(full, std::fs::Permissions::from_mode(mode)).map_err(io(full))?;
    }
    Ok(())
}

/// inotify watches on every directory and regular file of a slot.
///
/// Directories report the names that come and go; each file reports
/// itself, whatever name it is reached by: a hard link made elsewhere in the
/// copy, or a write through it, is an event on the file's own watch, where
/// the directory's watch would never hear of it.
struct Watch {
    fd: std::os::fd::OwnedFd,
    /// Each watch: the relative path it was added for, and whether it is a
    /// directory.
    entries: HashMap<i32, (PathBuf, bool)>,
}

impl Watch {
    /// Copies with more entries than this are walked instead: each watch
    /// counts against the user's inotify limit, shared with their editors
    /// and tools.
    const MAX_ENTRIES: usize = 20_000;

    const MASK: u32 = libc::IN_MODIFY
        | libc::IN_ATTRIB
        | libc::IN_CLOSE_WRITE
        | libc::IN_CREATE
        | libc::IN_DELETE
        | libc::IN_MOVED_FROM
        | libc::IN_MOVED_TO
        | libc::IN_DELETE_SELF
        | libc::IN_MOVE_SELF
        | libc::IN_DONT_FOLLOW;

    /// Watch the slot's root and every stamped directory and file; `None` if
    /// any watch cannot be added (no inotify, or the user's watch limit) or
    /// there are too many.
    fn new(dir: &Path, stamps: &HashMap<Vec<u8>, Stamp>) -> Option<Watch> {
        use std::os::fd::FromRawFd;
        if stamps.len() > Self::MAX_ENTRIES {
            return None;
        }
        // SAFETY: inotify_init1 returns a new descriptor or -1.
        let raw = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if raw < 0 {
            return None;
        }
        // SAFETY: `raw` is a fresh descriptor we own.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) };
        let mut w = Watch {
            fd,
            entries: HashMap::new(),
        };
        w.add(dir, Path::new(""), true)?;
        // Symlinks are not followed, and replacing one is a directory event.
        for (k, s) in stamps.iter().filter(|(_, s)| !s.link) {
            w.add(dir, path_of(k), s.dir)?;
        }
        Some(w)
    }

    fn add(&mut self, dir: &Path, rel: &Path, is_dir: bool) -> Option<()> {
        use std::os::fd::AsRawFd;
        let full = std::ffi::CString::new(dir.join(rel).as_os_str().as_bytes()).ok()?;
        // SAFETY: a valid descriptor and NUL-terminated path.
        let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), full.as_ptr(), Self::MASK) };
        (wd >= 0).then(|| {
            self.entries.insert(wd, (rel.to_path_buf(), is_dir));
        })
    }

    /// The relative paths touched since the last call, or `None` when the
    /// record is incomplete (queue overflow, a watched directory removed or
    /// moved) and the caller must walk the slot. A watched file removed or
    /// moved is only touched: its directory reports where it went.
    fn touched(&mut self) -> Option<Vec<PathBuf>> {
        use std::os::fd::AsRawFd;
        let mut paths = Vec::new();
        let mut complete = true;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: reading into a buffer we own, of the length we pass.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
            let mut at = 0usize;
            let header = std::mem::size_of::<libc::inotify_event>();
            while at + header <= n as usize {
                // SAFETY: the kernel wrote a whole event at `at`; read_unaligned
                // copes with the byte buffer's alignment.
                let ev: libc::inotify_event =
                    unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
                let name = &buf[at + header..at + header + ev.len as usize];
                let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
                at += header + ev.len as usize;
                if ev.mask & libc::IN_Q_OVERFLOW != 0 {
                    complete = false;
                    continue;
                }
                let Some((rel, is_dir)) = self.entries.get(&ev.wd) else {
                    continue;
                };
                let gone = libc::IN_DELETE_SELF | libc::IN_MOVE_SELF | libc::IN_IGNORED;
                if ev.mask & gone != 0 && *is_dir {
                    complete = false;
                    continue;
                }
                paths.push(if name.is_empty() {
                    rel.clone()
                } else {
                    rel.join(std::ffi::OsStr::from_bytes(name))
                });
                if ev.mask & libc::IN_IGNORED != 0 {
                    self.entries.remove(&ev.wd);
                }
            }
        }
        complete.then_some(paths)
    }
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

#[cfg(test)]
mod tests;

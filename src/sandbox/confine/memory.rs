//! A memory limit for an agent's turn: a memory cgroup of its own, made
//! under the host process's own, which the turn's first process joins in
//! the forked child before anything else (so every process of the turn is
//! in it). The kernel then kills a process of the turn that would take it
//! past the limit, and the runner reads that kill from the cgroup's
//! counters afterwards.
//!
//! cgroup v1's memory hierarchy is used where it is mounted
//! (`/sys/fs/cgroup/memory`), else cgroup v2's where the host's cgroup can
//! hand the memory controller to a child. Where neither can be written (no
//! privileges, a read-only `/sys/fs/cgroup`), [`MemoryCgroup::new`] says why
//! and the caller holds each process to the limit's worth of data instead
//! (see `Confinement::limit_data`). `RLIMIT_AS` is no substitute: the
//! JavaScript runtimes Claude Code and Codex run on reserve far more
//! address space than they use, and would not start.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// The memory a turn's processes may hold together unless the experiment
/// says otherwise (`agent.limits.memory`).
pub const DEFAULT_TURN_MEMORY_BYTES: u64 = 8 << 30;
use std::path::{Path, PathBuf};

/// A turn's memory cgroup, removed when dropped (once its processes are
/// gone).
#[derive(Debug)]
pub struct MemoryCgroup {
    dir: PathBuf,
    procs: OwnedFd,
    /// The file whose `oom_kill` line counts the kills.
    events: PathBuf,
}

const V1_ROOT: &str = "/sys/fs/cgroup/memory";
const V2_ROOT: &str = "/sys/fs/cgroup";

impl MemoryCgroup {
    /// A new cgroup limiting its processes to `bytes` of memory (swap
    /// included where the kernel accounts it).
    pub fn new(bytes: u64) -> Result<MemoryCgroup, String> {
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| format!("/proc/self/cgroup: {e}"))?;
        let name = format!(
            "critic-turn-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let v1 = own
            .lines()
            .find_map(|l| {
                let mut parts = l.splitn(3, ':');
                let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
                controllers
                    .split(',')
                    .any(|c| c == "memory")
                    .then(|| path.to_string())
            })
            .filter(|_| Path::new(V1_ROOT).join("memory.limit_in_bytes").exists());
        if let Some(path) = v1 {
            let parent = Path::new(V1_ROOT).join(path.trim_start_matches('/'));
            sweep(&parent);
            let dir = parent.join(&name);
            make(&dir)?;
            let made = (|| {
                write(&dir.join("memory.limit_in_bytes"), bytes)?;
                // Swap too, where it is accounted: else the limit only moves
                // memory to swap.
                let swap = dir.join("memory.memsw.limit_in_bytes");
                if swap.exists() {
                    write(&swap, bytes)?;
                }
                Ok(MemoryCgroup {
                    procs: open_procs(&dir)?,
                    events: dir.join("memory.oom_control"),
                    dir: dir.clone(),
                })
            })();
            if made.is_err() {
                let _ = std::fs::remove_dir(&dir);
            }
            return made;
        }
        let path = own
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .ok_or("no memory cgroup: neither cgroup v1's memory hierarchy nor cgroup v2")?;
        let parent = Path::new(V2_ROOT).join(path.trim_start_matches('/'));
        let controllers = std::fs::read_to_string(parent.join("cgroup.subtree_control"))
            .map_err(|e| format!("{}: {e}", parent.display()))?;
        if !controllers.split_whitespace().any(|c| c == "memory") {
            return Err(format!(
                "{}: the memory controller is not delegated to this process's cgroup",
                parent.display()
            ));
        }
        sweep(&parent);
        let dir = parent.join(&name);
        make(&dir)?;
        let made = (|| {
            write(&dir.join("memory.max"), bytes)?;
            let _ = write(&dir.join("memory.swap.max"), 0);
            Ok(MemoryCgroup {
                procs: open_procs(&dir)?,
                events: dir.join("memory.events"),
                dir: dir.clone(),
            })
        })();
        if made.is_err() {
            let _ = std::fs::remove_dir(&dir);
        }
        made
    }

    #[cfg(any(test, feature = "internals"))]
    /// Where the cgroup lies.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The descriptor the turn's first process writes `0` to, to join.
    pub fn procs_fd(&self) -> RawFd {
        self.procs.as_raw_fd()
    }

    /// Whether the kernel killed a process of the cgroup for going past
    /// the limit.
    pub fn oom_killed(&self) -> bool {
        std::fs::read_to_string(&self.events)
            .ok()
            .and_then(|text| {
                text.lines()
                    .find_map(|l| l.strip_prefix("oom_kill "))
                    .and_then(|n| n.trim().parse::<u64>().ok())
            })
            .is_some_and(|n| n > 0)
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        // The turn's processes are killed with its PID namespace; the
        // kernel may take a moment to let the cgroup go.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        tracing::warn!(
            "{}: a turn's memory cgroup could not be removed",
            self.dir.display()
        );
    }
}

static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Remove the turn cgroups under `parent` that a critic which is gone left
/// behind (killed before it could remove them); an empty cgroup is all
/// they are once their processes are gone.
fn sweep(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("critic-turn-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

fn make(dir: &Path) -> Result<(), String> {
    std::fs::create_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

fn write(file: &Path, value: u64) -> Result<(), String> {
    std::fs::write(file, value.to_string()).map_err(|e| format!("{}: {e}", file.display()))
}

fn open_procs(dir: &Path) -> Result<OwnedFd, String> {
    let path = dir.join("cgroup.procs");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .map(OwnedFd::from)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// In the forked child: join the cgroup whose `cgroup.procs` is open at
/// `fd` (writing `0` moves the writer).
///
/// # Safety
/// Async-signal-safe: one `write(2)`.
pub(super) unsafe fn join(fd: RawFd) -> std::io::Result<()> {
    if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

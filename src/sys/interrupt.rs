//! What the host undoes when it is interrupted (SIGINT, SIGTERM, SIGHUP):
//! scratch pools and private git directories are removed, and the processes it
//! started (run commands' and git's process groups) are killed, before it exits
//! with 128 + the signal. Without this, an interrupt would leave files in
//! `/dev/shm` and git processes running on their own.
//!
//! For programs that own their process: the `critic` binary asks for it at
//! start with [`cleanup_on_signals`]; a library embedding the host keeps its
//! own signal handling. The handling thread starts only when something long
//! is under way (a scratch pool, a git process still running after a
//! second): a thread alive at exit costs a short check about 0.5 ms (the
//! kernel must schedule it to end it), and a short check has little to lose.
//! What a killed host leaves behind anyway (scratch pools, private git
//! directories, named after its pid) is found and removed by the next check.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// What is alive in this process and must not outlive it.
struct Live {
    /// Directory trees to remove.
    dirs: Vec<PathBuf>,
    /// Process groups to kill.
    groups: Vec<i32>,
}

static LIVE: Mutex<Live> = Mutex::new(Live {
    dirs: Vec::new(),
    groups: Vec::new(),
});

static WANTED: AtomicBool = AtomicBool::new(false);

/// What to tell the user when interrupted (what was kept, how to go on).
static FAREWELL: Mutex<Option<String>> = Mutex::new(None);

/// Say `message` on stderr if this process is interrupted from now on.
pub fn on_interrupt_say(message: String) {
    *FAREWELL.lock().unwrap_or_else(|p| p.into_inner()) = Some(message);
}

fn live() -> MutexGuard<'static, Live> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Clean up on SIGINT, SIGTERM or SIGHUP from now on.
pub fn cleanup_on_signals() {
    WANTED.store(true, Ordering::Relaxed);
}

/// Start the signal thread if the program asked for it and it is not running.
pub(crate) fn arm() {
    static ARMED: OnceLock<()> = OnceLock::new();
    if !WANTED.load(Ordering::Relaxed) {
        return;
    }
    ARMED.get_or_init(|| {
        if let Err(e) = spawn_handler() {
            tracing::warn!(
                "cannot watch for interrupts; scratch copies may outlive an interrupted run: {e}"
            );
        }
    });
}

fn spawn_handler() -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    std::thread::Builder::new()
        .name("critic-signals".into())
        .spawn(move || {
            let mut signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!("cannot watch for interrupts: {e}");
                    return;
                }
            };
            if let Some(sig) = signals.forever().next() {
                undo_and_exit(128 + sig);
            }
        })?;
    Ok(())
}

/// Kill the process groups and remove the trees alive now, then exit with
/// `code`.
fn undo_and_exit(code: i32) -> ! {
    let live = live();
    for &g in &live.groups {
        // SAFETY: kill(2) on a process group this process started.
        unsafe { libc::kill(-g, libc::SIGKILL) };
    }
    for dir in &live.dirs {
        let _ = crate::sys::remove_tree::remove_tree(dir);
    }
    if let Some(message) = FAREWELL.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
        eprintln!("{message}");
    }
    std::process::exit(code);
}

/// Give up on everything under way, as an interrupt of a program that asked
/// for [`cleanup_on_signals`] does: for a server told twice to stop.
pub(crate) fn abandon() -> ! {
    undo_and_exit(128 + libc::SIGTERM)
}

/// A directory tree to remove if interrupted (once [`arm`]ed); until
/// [`forget_dir`].
pub(crate) fn remember_dir(dir: &Path) {
    live().dirs.push(dir.to_path_buf());
}

/// See [`remember_dir`].
pub(crate) fn forget_dir(dir: &Path) {
    live().dirs.retain(|d| d != dir);
}

/// A process group to kill if interrupted; until [`forget_group`].
pub(crate) fn remember_group(pgid: i32) {
    live().groups.push(pgid);
}

/// See [`remember_group`].
pub(crate) fn forget_group(pgid: i32) {
    live().groups.retain(|&g| g != pgid);
}

/// What hosts of this user that were killed (their pid no longer alive)
/// left in `place` under names `<prefix><pid>-...`: private (`0700`)
/// directories only. The place is shared: another user may name a
/// directory like one to have it removed.
pub(crate) fn leftovers(place: &Path, prefix: &str) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(place) else {
        return Vec::new();
    };
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let dead = |pid: i32| pid != std::process::id() as i32 && !process_alive(pid);
    entries
        .flatten()
        .filter(|entry| {
            let name = entry.file_name();
            let pid = name
                .to_str()
                .and_then(|n| n.strip_prefix(prefix))
                .and_then(|rest| rest.split('-').next()?.parse::<i32>().ok());
            let ours = entry
                .metadata()
                .is_ok_and(|m| m.is_dir() && m.uid() == me && m.mode() & 0o077 == 0);
            ours && pid.is_some_and(dead)
        })
        .map(|entry| entry.path())
        .collect()
}

/// Whether process `pid` exists (ours or another user's).
fn process_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks whether the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

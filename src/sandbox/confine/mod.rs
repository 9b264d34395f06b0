//! Confinement of the commands `run` and `run-matrix` start.
//!
//! Those commands run model-written code (mutants, generated tests), so they
//! are as untrusted as the skill that asks for them. Each one starts in:
//!
//! - a new **user namespace** (mapped to the caller's own uid and gid, so
//!   files keep their owners) that owns the rest;
//! - a new **network namespace** whose only interface is its own loopback:
//!   no route anywhere, the host's `127.0.0.1` included, for TCP and UDP;
//! - a new **PID namespace** whose first process waits for the command,
//!   its child (so that signals the command's own processes send it are
//!   not dropped, as they would be for the first one), and reaps what is
//!   orphaned: when the command ends, or is killed at the deadline, the
//!   kernel kills everything it started, `setsid` daemons included;
//! - a new **IPC namespace** (no shared memory or queues with the host);
//! - a new **mount namespace** in which every mount is read-only except
//!   bind mounts of the scratch copy and its temporary directory: Landlock
//!   governs file *contents* and names, not metadata, so this is what stops
//!   `chmod`, `chown`, `setcap`, `touch -d` and `setfattr` on the user's
//!   files. In it the command gets its own empty `/tmp`, `/var/tmp` and
//!   `/dev/shm`, a `/dev` of harmless devices (no terminal of the user's to
//!   read, no disk) and a fresh `/proc` showing only its own processes; the
//!   user's service sockets are hidden, and so are the user's home
//!   directories, but for the toolchains a run needs, bound back read-only
//!   (see [`homes`]), in which the usual places of credentials are hidden
//!   again;
//! - a new, empty **session keyring** (the keys of the user's login session
//!   stay out of reach);
//! - a **Landlock** domain: read and execute everywhere, write only to the
//!   scratch copy, its private temporary directories and the harmless
//!   devices (`/dev/null`...); from ABI 9 on, no connecting to a Unix socket
//!   outside them either (below it, a **seccomp** filter refuses making Unix
//!   sockets at all, see [`seccomp`]); processes outside the domain (the
//!   host among them) cannot be traced, so `/proc/<host>/environ`, `cwd`
//!   and `mem` are closed (and the waiter, a copy of the host, is not
//!   dumpable);
//! - **resource limits**: no core files, a ceiling on file size and on
//!   processes;
//!
//! with `no_new_privs` set and an empty capability bounding set, so neither a
//! setuid program nor the namespace's root can widen any of it (Landlock
//! refuses new mounts, and without `CAP_SYS_ADMIN` the read-only flags stay).
//! The environment is built from scratch by the caller (see [`crate::sandbox::scratch`]).
//!
//! What is *not* confined: reads outside the home directories. A run can
//! read what the user can read of the system (and of other places the user
//! keeps files, outside every home); it has no network to send them
//! anywhere, but its output goes back to the detector.
//!
//! The setup runs in the forked child before `exec`, where only
//! async-signal-safe calls are allowed: everything that allocates (the
//! Landlock ruleset, the id maps) is prepared in the parent.

mod agent;
mod child;
mod hidden;
mod homes;
pub mod memory;
mod network;
mod seccomp;
mod support;

use child::{enter, mount, mount_proc};
use hidden::{homes, Hidden};
pub use support::{
    agent_turns, report, report_text, socket_families, support, unix_sockets, Support, UnixSockets,
};

pub use agent::{hosts_file, listenable, AgentReach, Listeners, MAX_LISTENERS};

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Largest file a confined command may write (`RLIMIT_FSIZE`); scratch
/// copies live on tmpfs, in memory.
pub const MAX_FILE_BYTES: u64 = 1 << 30;
/// Most processes a confined command's user may have (`RLIMIT_NPROC`, counted
/// in its own user namespace): a fork bomb stops here.
pub const MAX_PROCESSES: u64 = 1024;

/// Devices a confined command may write to.
const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

/// The devices a confined command's `/dev` holds (a fresh tmpfs with these
/// bound in, as bubblewrap's `--dev` makes): nothing of the user's
/// terminals, disks or input devices, which a command could read.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// The links of a usual `/dev` to the process's own descriptors.
const DEVICE_LINKS: &[(&std::ffi::CStr, &std::ffi::CStr)] = &[
    (c"/proc/self/fd", c"/dev/fd"),
    (c"/proc/self/fd/0", c"/dev/stdin"),
    (c"/proc/self/fd/1", c"/dev/stdout"),
    (c"/proc/self/fd/2", c"/dev/stderr"),
];

/// The namespaces every confined command gets.
const NAMESPACES: libc::c_int = libc::CLONE_NEWUSER
    | libc::CLONE_NEWNS
    | libc::CLONE_NEWNET
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWIPC;

/// Where services listen on Unix sockets: under `/run` (the session bus
/// and systemd's user manager in `/run/user/<uid>`, the system bus and
/// manager, container and VM engines, databases), and the X server's. Landlock
/// does not govern connecting to a socket file, and through one of these a
/// run could have a process started outside its confinement, write to a
/// database, or type into the user's terminal. Every directory of `/run`
/// (and of a `/var/run` that is not a link to it) is covered by an empty
/// read-only tmpfs, and every socket there by `/dev/null`, except these
/// entries of `/run`, which hold programs and no service sockets.
const RUN_KEPT: &[&str] = &[
    "current-system",
    "booted-system",
    "opengl-driver",
    "opengl-driver-32",
    "wrappers",
    "lock",
];

/// Socket directories outside `/run` and the private directories, hidden
/// the same way.
const SOCKET_DIRS: &[&str] = &["/var/snap/lxd/common/lxd"];

/// Directories each command gets empty and its own (a fresh tmpfs each):
/// whatever the host's users keep there (a tmux or `critic serve` socket, an
/// ssh-agent's, a lock, a cache) is out of sight.
const PRIVATE_DIRS: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

/// How much each private directory holds unless the caller says otherwise
/// (an agent's turn: `agent.limits.tmp`). A tmpfs lives in memory: without
/// a size, each could take half of the host's.
pub const DEFAULT_PRIVATE_DIR_BYTES: u64 = 1 << 30;

/// Whether `path` lies in a directory a confined command gets empty and
/// its own (a program kept there is not there for it).
pub fn in_private_dir(path: &Path) -> bool {
    PRIVATE_DIRS.iter().any(|d| path.starts_with(d))
}

/// Where credentials usually live in a home directory; each that exists is
/// covered (a directory by an empty tmpfs, a file by `/dev/null`) in the
/// user's home and in the one `HOME` names, since a run can read what the
/// user can and what it prints may reach the agent and its model.
pub const SECRET_PLACES: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".kube",
    ".config/gh",
    ".docker",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gcloud",
    ".azure",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".password-store",
    ".local/share/keyrings",
    ".config/hub",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".local/share/fish/fish_history",
    // The coding agents' own sign-ins.
    ".claude/.credentials.json",
    ".claude.json",
    ".codex/auth.json",
    ".gemini/oauth_creds.json",
    ".gemini/google_accounts.json",
    ".config/github-copilot",
    ".copilot/config.json",
    ".cursor/cli-config.json",
    ".openhands/secrets.json",
    // Tokens of other tools that keep them in a file.
    ".cache/huggingface/token",
    ".huggingface/token",
    ".vault-token",
    ".config/rclone",
    ".config/containers/auth.json",
    ".config/op",
    ".terraform.d/credentials.tfrc.json",
    ".pulumi/credentials.json",
    ".boto",
    ".s3cfg",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".gem/credentials",
    ".config/pip/pip.conf",
    ".pip/pip.conf",
    ".condarc",
];

/// The Landlock ABI that governs connecting to pathname Unix sockets
/// (`LANDLOCK_ACCESS_FS_RESOLVE_UNIX`, Linux 7.1). Below it, the sockets a
/// command could reach are hidden by mounts instead (see [`Hidden`]).
pub const UNIX_SOCKET_ABI: u32 = 9;

/// The Landlock ABI whose file system rights this build asks for.
const ABI_WANTED: landlock::ABI = landlock::ABI::V9;

/// `KEYCTL_JOIN_SESSION_KEYRING` of `<linux/keyctl.h>`.
const KEYCTL_JOIN_SESSION_KEYRING: libc::c_long = 1;

/// `MOUNT_ATTR_RDONLY` of `<linux/mount.h>`.
const MOUNT_ATTR_RDONLY: u64 = 0x1;

/// `struct mount_attr` of `<linux/mount.h>`, the argument of `mount_setattr`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Wait for child `pid`; its exit code, or -1 when it failed to start or
/// died of a signal (async-signal-safe).
fn exit_code_of(pid: libc::pid_t) -> i32 {
    if pid < 0 {
        return -1;
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        if errno() != libc::EINTR {
            return -1;
        }
    }
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// `uid_map` and `gid_map` lines mapping the caller's ids to themselves.
#[derive(Debug, Clone)]
struct IdMaps {
    uid: Vec<u8>,
    gid: Vec<u8>,
}

impl IdMaps {
    fn current() -> Result<IdMaps, String> {
        // SAFETY: getuid and getgid have no preconditions.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Ok(IdMaps {
            uid: format!("{uid} {uid} 1\n").into_bytes(),
            gid: format!("{gid} {gid} 1\n").into_bytes(),
        })
    }

    /// Write the maps of the calling process (async-signal-safe).
    fn write(&self) -> Result<(), i32> {
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", &self.uid)?;
        write_file(c"/proc/self/gid_map", &self.gid)
    }
}

fn write_file(path: &std::ffi::CStr, bytes: &[u8]) -> Result<(), i32> {
    // SAFETY: plain syscalls on a NUL-terminated path and a live buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(errno());
        }
        let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let err = errno();
        libc::close(fd);
        if n == bytes.len() as isize {
            Ok(())
        } else {
            Err(err)
        }
    }
}

/// A prepared confinement for one command: its Landlock ruleset, id maps
/// and the directories it may write.
#[derive(Debug)]
pub struct Confinement {
    ruleset: OwnedFd,
    maps: IdMaps,
    mounts: Mounts,
    /// The seccomp filter, where Landlock does not keep the command from
    /// the host's Unix sockets.
    filter: Option<seccomp::Filter>,
    /// The listeners an agent's turn opens in its network namespace.
    listen: Option<agent::ChildListen>,
    /// The `cgroup.procs` of the memory cgroup the command joins first
    /// (see [`Confinement::join_memory`]).
    memory: Option<std::os::fd::RawFd>,
    /// Each process's data limit where no memory cgroup can be had (see
    /// [`Confinement::limit_data`]).
    data_bytes: Option<u64>,
}

/// Which cover a directory put back lies under (see [`Confinement::new`]).
#[derive(Clone, Copy)]
enum Cover {
    /// A home: its place is made before the toolchains go back.
    Home,
    /// `/dev`, a private directory, or none.
    Early,
    /// A place covered last.
    Late,
}

/// Most writable directories a command may have (their mounts are cloned
/// into a fixed array in the forked child, which cannot allocate).
const MAX_WRITABLE: usize = 4;

/// Most directories in private places a command may need to see (cloned
/// the same way).
const MAX_PRIVATE_SEEN: usize = 4;

/// What the command's mount namespace changes.
#[derive(Debug)]
struct Mounts {
    /// The directories left writable (canonical paths).
    writable: Vec<CString>,
    /// Fresh, empty, writable tmpfs mounts (see [`PRIVATE_DIRS`]).
    private: Vec<CString>,
    /// Their mount options: the size each may hold.
    private_options: CString,
    /// Directories to make in the private mounts, parents first, for the
    /// writable directories that lie in them to be mounted back at their
    /// paths.
    mountpoints: Vec<CString>,
    /// What to hide.
    hidden: Hidden,
    /// The home directories (and a moved `XDG_CONFIG_HOME`), covered by an
    /// empty file system.
    homes: Vec<CString>,
    /// The toolchain directories in them, bound back (see [`homes`]).
    kept: Vec<CString>,
    /// Directories to make in the covered homes, parents first, for `kept`
    /// and the writable directories there to be mounted back at their paths.
    home_mountpoints: Vec<CString>,
    /// What the command must see that lies in a private directory (an
    /// interpreter under `/tmp`, a skill being built there), bound back
    /// read-only.
    private_seen: Vec<CString>,
    /// The devices bound into the command's `/dev` (see [`DEVICES`]).
    devices: Vec<CString>,
    /// A file bound over `/etc/hosts` (an agent's turn, see [`agent`]).
    hosts: Option<CString>,
    /// Whether the command's `/dev` gets pseudo-terminals of its own (a
    /// fresh `devpts`: an agent's tools run commands in one).
    ptys: bool,
    /// Directories covered by an empty file system after everything else
    /// is put back but the writable directories (an agent's turn).
    late_dirs: Vec<CString>,
    /// Files covered by `/dev/null` then.
    late_files: Vec<CString>,
    /// Directories the command must see in those covers, put back
    /// read-only after them.
    late_shown: Vec<CString>,
    /// Directories to make in those covers for the writable directories
    /// and those seen there.
    late_mountpoints: Vec<CString>,
    /// The Landlock rights the private mounts get (every handled one).
    private_access: u64,
}

/// `struct landlock_path_beneath_attr` of `<linux/landlock.h>` (packed).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

impl Confinement {
    /// A confinement letting the command write only under `writable` (the
    /// scratch copy and its private temporary directory) and its private
    /// directories, and see of the user's homes only the toolchains and
    /// `seen`: the prefix of a program in it (the command's argv\[0\]), a
    /// directory as it is (see [`homes`]). Fails with what is missing when
    /// this machine cannot confine.
    pub fn new(writable: &[&Path], seen: &[&Path]) -> Result<Confinement, String> {
        Self::build(writable, seen, None).map(|(c, _)| c)
    }

    /// The confinement of an agent's turn: a run's, with `reach`'s places
    /// covered too, its `/etc/hosts` and its listeners (whose descriptors
    /// the returned [`Listeners`] receives once the command has started).
    pub fn for_agent(
        writable: &[&Path],
        seen: &[&Path],
        reach: &AgentReach,
    ) -> Result<(Confinement, Listeners), String> {
        let (confinement, listeners) = Self::build(writable, seen, Some(reach))?;
        let listeners = listeners.ok_or("a turn's listeners were not prepared (internal error)")?;
        Ok((confinement, listeners))
    }

    fn build(
        writable: &[&Path],
        seen: &[&Path],
        reach: Option<&AgentReach>,
    ) -> Result<(Confinement, Option<Listeners>), String> {
        use landlock::{
            path_beneath_rules, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr,
            RulesetCreatedAttr, Scope, ABI,
        };
        let support = support();
        if let Some(missing) = support.missing() {
            return Err(format!("this machine lacks {missing}"));
        }
        if writable.len() > MAX_WRITABLE {
            return Err(format!(
                "at most {MAX_WRITABLE} writable directories (internal error)"
            ));
        }
        // The newest rights this build knows; the kernel's own ABI decides
        // how many of them are enforced (writes are denied from ABI 1 on).
        let fail = |e: landlock::RulesetError| format!("cannot build the Landlock ruleset: {e}");
        let ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(ABI_WANTED))
            .map_err(fail)?
            .scope(Scope::from_all(ABI_WANTED))
            .map_err(fail)?
            .create()
            .map_err(fail)?
            .add_rules(path_beneath_rules(["/"], AccessFs::from_read(ABI_WANTED)))
            .map_err(fail)?
            .add_rules(path_beneath_rules(writable, AccessFs::from_all(ABI_WANTED)))
            .map_err(fail)?
            .add_rules(path_beneath_rules(
                WRITABLE_DEVICES.iter().filter(|d| Path::new(d).exists()),
                AccessFs::from_read(ABI_WANTED) | AccessFs::WriteFile,
            ))
            .map_err(fail)?;
        let ruleset: Option<OwnedFd> = ruleset.into();
        // What best effort handled on this kernel: the private mounts, made
        // in the child, get all of it.
        let kernel = ABI::from(support.landlock_abi.map_or(0, |v| v as i32));
        let private_access = AccessFs::from_all(kernel.min(ABI_WANTED)).bits();
        let c = |p: &Path| {
            CString::new(p.as_os_str().as_bytes())
                .map_err(|_| format!("{} contains a NUL byte", p.display()))
        };
        let real = |p: &Path| std::fs::canonicalize(p).map_err(|e| format!("{}: {e}", p.display()));
        let writable: Vec<PathBuf> = writable.iter().map(|w| real(w)).collect::<Result<_, _>>()?;
        // A private directory is not covered where a writable one holds it
        // (a scratch place of `/`, say): that would hide part of the copy.
        // `/dev/shm` is made in the command's fresh `/dev`, whatever the
        // host's is (a link to `/run/shm` on some systems).
        let private: Vec<PathBuf> = PRIVATE_DIRS
            .iter()
            .map(Path::new)
            .filter(|p| {
                *p == Path::new("/dev/shm")
                    || std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir())
            })
            .filter(|p| !writable.iter().any(|w| p.starts_with(w)))
            .map(Path::to_path_buf)
            .collect();
        // What lies in a writable directory (the scratch copy the run's own
        // code shaped) says nothing of what to show: a `.venv` link there
        // could point anywhere.
        let seen: Vec<&Path> = seen
            .iter()
            .copied()
            .filter(|s| {
                let real = std::fs::canonicalize(s).unwrap_or_else(|_| s.to_path_buf());
                !writable
                    .iter()
                    .any(|w| s.starts_with(w) || real.starts_with(w))
            })
            .collect();
        let seen = seen.as_slice();
        let mut plan = homes::plan(
            &homes(),
            std::env::var_os("PATH").as_deref(),
            seen,
            &|name| std::env::var_os(name).map(PathBuf::from),
        );
        // A home in a private or writable directory is covered with it.
        plan.covered.retain(|h| {
            !private.iter().chain(&writable).any(|p| h.starts_with(p)) && !h.starts_with("/dev")
        });
        plan.kept
            .retain(|k| plan.covered.iter().any(|h| k.starts_with(h)));
        // An agent's turn: the experiment's places, covered last (a
        // directory put back, the program's own, could hold one), a file
        // by `/dev/null`; the writable directories in them go back after.
        let mut late_dirs: Vec<PathBuf> = Vec::new();
        let mut late_files: Vec<PathBuf> = Vec::new();
        for place in reach.iter().flat_map(|r| &r.covered) {
            let Ok(real) = std::fs::canonicalize(place) else {
                continue;
            };
            if writable.iter().any(|w| real.starts_with(w)) {
                continue;
            }
            if real.is_dir() {
                late_dirs.push(real);
            } else {
                late_files.push(real);
            }
        }
        let all = late_dirs.clone();
        late_dirs.retain(|d| !all.iter().any(|o| o != d && d.starts_with(o)));
        late_dirs.dedup();
        // What the command needs that lies in a private directory: what it
        // was told to see, then what is on its PATH there (an interpreter
        // or virtual environment the user keeps under /tmp).
        let all_homes = homes();
        let on_path: Vec<PathBuf> = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default();
        let mut private_seen: Vec<PathBuf> = Vec::new();
        let wanted = seen
            .iter()
            .flat_map(|s| homes::needed(s, &all_homes))
            .chain(
                on_path
                    .iter()
                    .flat_map(|d| homes::with_prefix(d, &all_homes)),
            )
            .filter_map(|d| std::fs::canonicalize(d).ok())
            .filter(|d| d.is_dir())
            .filter(|d| private.iter().any(|p| d.starts_with(p) && d != p))
            .filter(|d| !writable.iter().any(|w| d.starts_with(w)));
        for dir in wanted {
            if !private_seen.contains(&dir) {
                private_seen.push(dir);
            }
        }
        // Nested ones would be bound twice.
        let all = private_seen.clone();
        private_seen.retain(|d| !all.iter().any(|o| o != d && d.starts_with(o)));
        // What the command must see inside a place covered last (the
        // experiment's own environment under its output directory), put
        // back read-only after it.
        let mut late_shown: Vec<PathBuf> = seen
            .iter()
            .flat_map(|s| homes::needed(s, &all_homes))
            .filter_map(|d| std::fs::canonicalize(d).ok())
            .filter(|d| d.is_dir())
            .filter(|d| late_dirs.iter().any(|l| d.starts_with(l) && d != l))
            .filter(|d| !writable.iter().any(|w| d.starts_with(w)))
            .collect();
        late_shown.sort();
        late_shown.dedup();
        let all = late_shown.clone();
        late_shown.retain(|d| !all.iter().any(|o| o != d && d.starts_with(o)));
        late_shown.truncate(MAX_PRIVATE_SEEN);
        if private_seen.len() > MAX_PRIVATE_SEEN {
            tracing::warn!(
                "{} directories in {} to show a run; it sees the first {MAX_PRIVATE_SEEN}",
                private_seen.len(),
                PRIVATE_DIRS.join(", ")
            );
            private_seen.truncate(MAX_PRIVATE_SEEN);
        }
        // A directory put back under a cover (the new `/dev`, a private
        // directory, a home, a place covered last) is mounted on
        // directories made in the deepest cover.
        let early: Vec<&Path> = std::iter::once(Path::new("/dev"))
            .chain(private.iter().map(PathBuf::as_path))
            .chain(plan.covered.iter().map(PathBuf::as_path))
            .collect();
        let all_covers: Vec<&Path> = early
            .iter()
            .copied()
            .chain(late_dirs.iter().map(PathBuf::as_path))
            .collect();
        // The directories from `dir`'s deepest cover of `covers` down to
        // it, and which kind of cover that is.
        let chain_to = |dir: &Path, covers: &[&Path]| -> (Vec<PathBuf>, Cover) {
            let deepest = covers
                .iter()
                .filter(|c| dir.starts_with(c) && dir != **c)
                .max_by_key(|c| c.components().count());
            let Some(cover) = deepest else {
                return (Vec::new(), Cover::Early);
            };
            let mut chain: Vec<PathBuf> = dir
                .ancestors()
                .take_while(|a| a != cover)
                .map(Path::to_path_buf)
                .collect();
            chain.reverse();
            let kind = if plan.covered.iter().any(|h| h == cover) {
                Cover::Home
            } else if late_dirs.iter().any(|l| l == cover) {
                Cover::Late
            } else {
                Cover::Early
            };
            (chain, kind)
        };
        let push_new = |list: &mut Vec<PathBuf>, chain: Vec<PathBuf>| {
            for d in chain {
                if !list.contains(&d) {
                    list.push(d);
                }
            }
        };
        // One in a home needs its place there before the kept directories
        // go back; the others are made once `/dev` and the private
        // directories are mounted. The writable directories and what the
        // command must see inside a place covered last go back after it,
        // so into it; the rest before.
        let mut mountpoints: Vec<PathBuf> = Vec::new();
        let mut home_mountpoints: Vec<PathBuf> = Vec::new();
        let mut late_mountpoints: Vec<PathBuf> = Vec::new();
        let placed = writable
            .iter()
            .chain(&late_shown)
            .map(|w| chain_to(w, &all_covers))
            .chain(
                plan.kept
                    .iter()
                    .chain(&private_seen)
                    // A place covered last is made where it is not seen
                    // (its own directory ends its chain).
                    .chain(&late_dirs)
                    .map(|d| chain_to(d, &early)),
            );
        for (chain, kind) in placed.collect::<Vec<_>>() {
            match kind {
                Cover::Home => push_new(&mut home_mountpoints, chain),
                Cover::Early => push_new(&mut mountpoints, chain),
                Cover::Late => push_new(&mut late_mountpoints, chain),
            }
        }
        let mut hidden = Hidden::collect(&writable)?;
        if reach.is_none() && Path::new(network::RESOLV_CONF).exists() {
            // A run's addresses off the machine lead nowhere (see
            // `routes_to_nowhere`): with no name server named, its resolver
            // asks the loopback, where nothing answers, and fails at once
            // instead of waiting out its time limit on every lookup.
            hidden.files.push(c(Path::new(network::RESOLV_CONF))?);
        }
        let devices: Vec<PathBuf> = DEVICES
            .iter()
            .map(PathBuf::from)
            .filter(|d| d.exists())
            .collect();
        // Every command gets the filter of socket families; Unix sockets
        // pass it only where Landlock governs them.
        let filter = seccomp::Filter::sockets(support.unix_sockets() == UnixSockets::Landlock);
        let cs = |paths: &[PathBuf]| paths.iter().map(|p| c(p)).collect::<Result<Vec<_>, _>>();
        let (listen, listeners) = match reach {
            Some(reach) => {
                let (child, runner) = agent::prepare(&reach.listen)?;
                (Some(child), Some(runner))
            }
            None => (None, None),
        };
        let hosts = reach.and_then(|r| r.hosts.as_deref()).map(c).transpose()?;
        let confinement = Confinement {
            ruleset: ruleset.ok_or("Landlock is not enforced on this machine")?,
            maps: IdMaps::current()?,
            mounts: Mounts {
                writable: cs(&writable)?,
                private: cs(&private)?,
                private_options: CString::new(format!(
                    "mode=1777,size={}",
                    reach
                        .and_then(|r| r.tmp_bytes)
                        .unwrap_or(DEFAULT_PRIVATE_DIR_BYTES)
                ))
                .expect("digits have no NUL"),
                mountpoints: cs(&mountpoints)?,
                hidden,
                homes: cs(&plan.covered)?,
                kept: cs(&plan.kept)?,
                home_mountpoints: cs(&home_mountpoints)?,
                private_seen: cs(&private_seen)?,
                devices: cs(&devices)?,
                hosts,
                ptys: reach.is_some(),
                late_dirs: cs(&late_dirs)?,
                late_shown: cs(&late_shown)?,
                late_files: cs(&late_files)?,
                late_mountpoints: cs(&late_mountpoints)?,
                private_access,
            },
            filter,
            listen,
            memory: None,
            data_bytes: None,
        };
        Ok((confinement, listeners))
    }

    /// Make the command join `cgroup` before anything else, so that every
    /// process of it is held to the cgroup's memory limit. `cgroup` must
    /// outlive the command's start.
    pub fn join_memory(&mut self, cgroup: &memory::MemoryCgroup) {
        self.memory = Some(cgroup.procs_fd());
    }

    /// Where no memory cgroup can be had: hold each process of the command
    /// to `bytes` of data (`RLIMIT_DATA`: the memory it has written to,
    /// not the address space it reserved, which the JavaScript runtimes
    /// agents run on reserve far beyond what they use).
    pub fn limit_data(&mut self, bytes: u64) {
        self.data_bytes = Some(bytes);
    }

    /// Make `cmd` start confined, as the leader of a new session (so the
    /// caller can kill it as a process group).
    pub fn apply(self, cmd: &mut Command) {
        let Confinement {
            ruleset,
            maps,
            mounts,
            filter,
            listen,
            memory,
            data_bytes,
        } = self;
        let mut limits = vec![
            (libc::RLIMIT_CORE, 0),
            (libc::RLIMIT_FSIZE, MAX_FILE_BYTES),
            (libc::RLIMIT_NPROC, MAX_PROCESSES),
        ];
        limits.extend(data_bytes.map(|b| (libc::RLIMIT_DATA, b)));
        let host = std::process::id() as libc::pid_t;
        // SAFETY: the hook runs in the forked child and makes only
        // async-signal-safe calls (see `enter`).
        unsafe {
            cmd.pre_exec(move || {
                if let Some(fd) = memory {
                    memory::join(fd)?;
                }
                enter(
                    host,
                    ruleset.as_raw_fd(),
                    &maps,
                    &mounts,
                    filter.as_ref(),
                    listen.as_ref(),
                    &limits,
                )
            });
        }
    }
}

/// A command with the session and process-group setup of an unconfined run
/// (`--unconfined-runs`): killed as a group, nothing more.
pub fn apply_unconfined(cmd: &mut Command) {
    // SAFETY: setsid is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
}

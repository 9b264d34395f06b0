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
mod homes;
pub mod memory;
mod network;
mod seccomp;

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

/// What of the host a command must not see, as C strings ready for the
/// forked child: directories covered by an empty tmpfs, files (sockets,
/// credentials) covered by `/dev/null`.
#[derive(Debug, Default)]
struct Hidden {
    dirs: Vec<CString>,
    files: Vec<CString>,
}

impl Hidden {
    /// Everything to hide from a command writing to `writable` (canonical
    /// paths): the service socket directories and sockets (see
    /// [`RUN_KEPT`]) and the credential places of the user's homes. A
    /// place holding one of `writable` (a scratch copy in the runtime
    /// directory, say) is not covered whole: everything in it but the way
    /// to the copy is.
    fn collect(writable: &[PathBuf]) -> Result<Hidden, String> {
        use std::os::unix::fs::FileTypeExt;
        let mut places: Vec<PathBuf> = SOCKET_DIRS.iter().map(Into::into).collect();
        for run in ["/run", "/var/run"] {
            let run = Path::new(run);
            if run == Path::new("/var/run")
                && std::fs::canonicalize(run).ok().as_deref() == Some(Path::new("/run"))
            {
                continue;
            }
            for entry in std::fs::read_dir(run).into_iter().flatten().flatten() {
                let kept = run == Path::new("/run")
                    && RUN_KEPT
                        .iter()
                        .any(|k| entry.file_name() == std::ffi::OsStr::new(k));
                match entry.file_type() {
                    Ok(kind) if (kind.is_dir() && !kept) || kind.is_socket() => {
                        places.push(entry.path())
                    }
                    _ => {}
                }
            }
        }
        for home in homes() {
            places.extend(SECRET_PLACES.iter().map(|p| home.join(p)));
        }
        let mut hidden = (Vec::new(), Vec::new());
        for place in places {
            hide(&place, writable, &mut hidden);
        }
        let c = |p: &PathBuf| {
            CString::new(p.as_os_str().as_bytes())
                .map_err(|_| format!("{} contains a NUL byte", p.display()))
        };
        Ok(Hidden {
            dirs: hidden.0.iter().map(c).collect::<Result<_, _>>()?,
            files: hidden.1.iter().map(c).collect::<Result<_, _>>()?,
        })
    }
}

/// Add `place` to what is hidden (`.0` directories, `.1` files), if it
/// exists: whole, unless it holds one of `writable`; then each entry but the
/// one on the way to it, level by level down to it.
fn hide(place: &Path, writable: &[PathBuf], hidden: &mut (Vec<PathBuf>, Vec<PathBuf>)) {
    let Ok(meta) = std::fs::metadata(place) else {
        return;
    };
    // Compared as the kernel will resolve them (`/var/run` is often a link).
    let real = std::fs::canonicalize(place).unwrap_or_else(|_| place.to_path_buf());
    if writable.iter().any(|w| real.starts_with(w)) {
        return;
    }
    if !meta.is_dir() {
        hidden.1.push(place.to_path_buf());
        return;
    }
    let Some(inner) = writable.iter().find(|w| w.starts_with(&real)) else {
        hidden.0.push(place.to_path_buf());
        return;
    };
    let Some(next) = inner.strip_prefix(&real).ok().and_then(|r| r.iter().next()) else {
        return;
    };
    for entry in std::fs::read_dir(&real).into_iter().flatten().flatten() {
        if entry.file_name() == next {
            if real.join(next) != *inner {
                hide(&real.join(next), writable, hidden);
            }
        } else {
            hide(&entry.path(), writable, hidden);
        }
    }
}

/// The user's home directories: the one `HOME` names and the password
/// database's, when they differ.
fn homes() -> Vec<PathBuf> {
    let mut homes: Vec<PathBuf> = std::env::var_os("HOME")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    let mut buf = vec![0 as libc::c_char; 16 << 10];
    // SAFETY: getpwuid_r fills `entry` from `buf`, both live and sized here;
    // `pw_dir` points into `buf`, read before it is dropped.
    unsafe {
        let mut entry: libc::passwd = std::mem::zeroed();
        let mut found = std::ptr::null_mut();
        if libc::getpwuid_r(
            libc::getuid(),
            &mut entry,
            buf.as_mut_ptr(),
            buf.len(),
            &mut found,
        ) == 0
            && !found.is_null()
            && !entry.pw_dir.is_null()
        {
            let dir = std::ffi::CStr::from_ptr(entry.pw_dir).to_bytes();
            homes.push(PathBuf::from(std::ffi::OsStr::from_bytes(dir)));
        }
    }
    homes.retain(|h| h.is_absolute() && h != Path::new("/"));
    homes.dedup();
    homes
}

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

/// What this machine offers for confinement.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Support {
    /// The Landlock ABI version the kernel speaks (`None`: no Landlock).
    pub landlock_abi: Option<u32>,
    /// Whether an unprivileged process can make user, mount, network, PID and IPC
    /// namespaces (`Err`: why not).
    pub namespaces: Result<(), String>,
}

/// How a confined command is kept from the host's Unix sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnixSockets {
    /// Landlock ABI 9 denies connecting to a pathname socket outside the
    /// copy and the private directories; the run may use its own.
    Landlock,
    /// A seccomp filter refuses making Unix sockets at all (stream socket
    /// pairs excepted).
    Seccomp,
    /// Neither is available here.
    Unguarded,
}

impl Support {
    /// How a confined command is kept from the host's Unix sockets here.
    pub fn unix_sockets(&self) -> UnixSockets {
        if self.landlock_abi >= Some(UNIX_SOCKET_ABI) {
            UnixSockets::Landlock
        } else if seccomp::WRITTEN_FOR_THIS_MACHINE {
            UnixSockets::Seccomp
        } else {
            UnixSockets::Unguarded
        }
    }

    /// What is missing for confined runs, or `None` when they can run.
    pub fn missing(&self) -> Option<String> {
        let mut missing = Vec::new();
        if self.landlock_abi.is_none() {
            missing.push(
                "Landlock (Linux 5.13 or later, with `landlock` in the kernel's lsm= list)"
                    .to_string(),
            );
        }
        if !seccomp::WRITTEN_FOR_THIS_MACHINE {
            missing.push(
                "this build's seccomp filter of socket families (written for x86_64 and aarch64)"
                    .to_string(),
            );
        }
        if let Err(e) = &self.namespaces {
            missing.push(format!(
                "user namespaces ({e}; on some distributions `sysctl kernel.unprivileged_userns_clone=1` \
                 or an AppArmor profile allows them)"
            ));
        }
        (!missing.is_empty()).then(|| missing.join(" and "))
    }
}

/// This machine's [`Support`], probed once per process.
pub fn support() -> &'static Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(|| Support {
        landlock_abi: landlock_abi(),
        namespaces: probe_namespaces(),
    })
}

/// The kernel's Landlock ABI version, asked with
/// `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`.
fn landlock_abi() -> Option<u32> {
    // SAFETY: the version query takes no attribute and creates nothing.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    u32::try_from(v).ok().filter(|&v| v > 0)
}

/// Whether a child can enter the namespaces a confined command gets and
/// mount a fresh `/proc` there (a container that covers parts of its
/// `/proc` forbids that).
fn probe_namespaces() -> Result<(), String> {
    let maps = IdMaps::current()?;
    // Exit codes of the probe beyond errno values.
    const NO_MAPS: i32 = 201;
    const NO_PROC: i32 = 202;
    // SAFETY: the child makes only async-signal-safe calls and `_exit`s.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork: {}", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: in the forked child; nothing here allocates.
        unsafe {
            if libc::unshare(NAMESPACES) != 0 {
                libc::_exit(errno().clamp(1, 200));
            }
            if maps.write().is_err() {
                libc::_exit(NO_MAPS);
            }
            if mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE, None).is_err() {
                libc::_exit(errno().clamp(1, 200));
            }
            // The first process of the new PID namespace mounts its /proc.
            let first = libc::fork();
            if first == 0 {
                libc::_exit(if mount_proc().is_ok() { 0 } else { NO_PROC });
            }
            libc::_exit(exit_code_of(first));
        }
    }
    match exit_code_of(pid) {
        0 => Ok(()),
        NO_MAPS => Err("cannot map the user's ids in a new user namespace".into()),
        NO_PROC => Err(
            "cannot mount a fresh /proc in a new PID namespace (parts of /proc are covered, \
             as in some containers)"
                .into(),
        ),
        code if (1..=200).contains(&code) => Err(format!(
            "unshare(user, mount, network, PID, IPC namespaces): {}",
            std::io::Error::from_raw_os_error(code)
        )),
        _ => Err("the namespace probe died".into()),
    }
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

/// How pathname Unix sockets outside the copy are kept from a command on
/// this machine, in words.
pub fn unix_sockets(support: &Support) -> &'static str {
    match support.unix_sockets() {
        UnixSockets::Landlock => {
            "Landlock denies connecting to one outside the scratch copy and its private \
             directories; a run may make and use its own"
        }
        UnixSockets::Seccomp => {
            "a seccomp filter refuses making any (socketpair streams excepted), so none of the \
             host's can be reached; with Landlock ABI 9 (Linux 7.1) a run could use its own"
        }
        UnixSockets::Unguarded => "not guarded on this machine: runs are refused",
    }
}

/// Which socket families a confined command may make, in words.
pub fn socket_families() -> &'static str {
    if seccomp::WRITTEN_FOR_THIS_MACHINE {
        "IPv4 and IPv6 (in the run's own network namespace), route netlink and Unix; vsock, \
         packet, the other netlink protocols, io_uring and foreign system-call ABIs are refused"
    } else {
        "not filtered on this architecture: runs are refused"
    }
}

/// `critic doctor`'s report as JSON: each feature, and whether runs can be
/// confined.
pub fn report(support: &Support) -> serde_json::Value {
    serde_json::json!({
        "landlock_abi": support.landlock_abi,
        "namespaces": support.namespaces.as_ref().map(|()| "available").map_err(Clone::clone),
        "private_dirs": PRIVATE_DIRS,
        "private_dir_bytes": DEFAULT_PRIVATE_DIR_BYTES,
        "private_home": support.namespaces.is_ok(),
        "fresh_proc": support.namespaces.is_ok(),
        "minimal_dev": support.namespaces.is_ok(),
        "unix_sockets": unix_sockets(support),
        "socket_families": socket_families(),
        "homes": homes_seen(),
        "confined_runs": support.missing().map_or_else(
            || "available".to_string(),
            |m| format!("refused: this machine lacks {m}; --unconfined-runs opts out")
        ),
        "agent_turns": agent_turns(support),
    })
}

/// How `critic experiment` runs an agent's turns here, in words.
pub fn agent_turns(support: &Support) -> String {
    match support.missing() {
        None => format!(
            "confined as runs are, writing only to the workspace and the agent's own \
             directory; the output directory, the user's repositories and the instances \
             covered; a network namespace in which only the model's endpoint and the \
             session's judge answer; a PID namespace per turn; {}",
            match memory::MemoryCgroup::new(1 << 30) {
                Ok(_) => format!(
                    "a memory cgroup per turn (agent.limits.memory, default {} GiB)",
                    memory::DEFAULT_TURN_MEMORY_BYTES >> 30
                ),
                Err(e) => format!(
                    "no memory cgroup ({e}): each process held to agent.limits.memory of data \
                     instead (default {} GiB)",
                    memory::DEFAULT_TURN_MEMORY_BYTES >> 30
                ),
            }
        ),
        Some(m) => format!(
            "refused: this machine lacks {m}; `critic experiment run --unconfined-agents` \
             runs them with your full privileges"
        ),
    }
}

/// What a confined command sees of the user's homes here (without the
/// prefix of a program of its own, see [`homes`]).
fn homes_seen() -> serde_json::Value {
    let plan = homes::plan(
        &homes(),
        std::env::var_os("PATH").as_deref(),
        &[],
        &|name| std::env::var_os(name).map(PathBuf::from),
    );
    serde_json::json!({"covered": plan.covered, "kept": plan.kept})
}

/// `critic doctor`'s report for a person.
pub fn report_text(support: &Support) -> String {
    let yes_no = |ok: bool| if ok { "yes" } else { "NO " };
    let mut out = String::new();
    match support.landlock_abi {
        Some(abi) => out.push_str(&format!(
            "{} Landlock ABI {abi}: writes confined to the scratch copy and its private dirs{}\n",
            yes_no(true),
            if abi >= 6 { "; signals scoped" } else { "" }
        )),
        None => out.push_str(&format!("{} Landlock: not available\n", yes_no(false))),
    }
    match &support.namespaces {
        Ok(()) => out.push_str(&format!(
            "{} user, mount, network, PID and IPC namespaces: read-only system, no network, \
             process tree killed whole, a fresh /proc, a /dev of harmless devices, private {} \
             ({} MiB each; an agent's turn: agent.limits.tmp), an empty HOME, credential places \
             hidden\n",
            yes_no(true),
            PRIVATE_DIRS.join(", "),
            DEFAULT_PRIVATE_DIR_BYTES >> 20
        )),
        Err(e) => out.push_str(&format!("{} namespaces: {e}\n", yes_no(false))),
    }
    let seen = homes_seen();
    let list = |key: &str| {
        seen[key]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "none".into())
    };
    out.push_str(&format!(
        "{} home directories covered ({}); only toolchains bound back, read-only: {}\n",
        yes_no(support.namespaces.is_ok()),
        list("covered"),
        list("kept")
    ));
    out.push_str(&format!(
        "{} socket families (seccomp): {}\n",
        yes_no(seccomp::WRITTEN_FOR_THIS_MACHINE),
        socket_families()
    ));
    out.push_str(&format!(
        "{} Unix sockets: {}\n",
        yes_no(support.unix_sockets() != UnixSockets::Unguarded),
        unix_sockets(support)
    ));
    out.push_str(&format!(
        "{} experiment agents' turns: {}\n",
        yes_no(support.missing().is_none()),
        agent_turns(support)
    ));
    match support.missing() {
        None => out.push_str("run/run-matrix commands run confined.\n"),
        Some(m) => out.push_str(&format!(
            "run/run-matrix are refused: this machine lacks {m}.\n\
             --unconfined-runs runs them with your full privileges instead.\n"
        )),
    }
    out
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

/// In the forked child: enter the namespaces and build the command's mounts,
/// then fork the first process of the new PID namespace (which mounts its
/// `/proc`, takes on the Landlock domain, drops its capabilities, and forks
/// the command) while this process stays behind, confined the same way, to
/// wait for it and pass the command's status on.
fn enter(
    host: libc::pid_t,
    ruleset: libc::c_int,
    maps: &IdMaps,
    mounts: &Mounts,
    filter: Option<&seccomp::Filter>,
    listen: Option<&agent::ChildListen>,
    limits: &[(libc::__rlimit_resource_t, u64)],
) -> std::io::Result<()> {
    let os = std::io::Error::last_os_error;
    // SAFETY: async-signal-safe syscalls on values prepared before the fork.
    unsafe {
        libc::setsid();
        // A killed host takes its runs with it (the spawning thread waits
        // for the command, so it outlives it).
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        if libc::getppid() != host {
            libc::_exit(127);
        }
        for &(resource, value) in limits {
            let lim = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            if libc::setrlimit(resource, &lim) != 0 {
                return Err(os());
            }
        }
        // No supplementary groups (a `docker` group opens sockets the
        // lists below do not know): possible only for root, and harmless to
        // try for anyone else.
        libc::setgroups(0, std::ptr::null());
        if libc::unshare(NAMESPACES) != 0 {
            return Err(os());
        }
        maps.write().map_err(std::io::Error::from_raw_os_error)?;
        // A new, empty session keyring: the host's (a login's Kerberos
        // tickets, say) is neither readable nor writable from the run.
        if libc::syscall(
            libc::SYS_keyctl,
            KEYCTL_JOIN_SESSION_KEYRING,
            std::ptr::null::<libc::c_char>(),
        ) < 0
            && errno() != libc::ENOSYS
        {
            return Err(os());
        }
        network::loopback_up();
        // A run's addresses off the machine lead nowhere, so a connection
        // times out as in a container; an agent's turn (the one with
        // listeners) should learn at once that its network is closed.
        if listen.is_none() {
            network::routes_to_nowhere();
        }
        if let Some(listen) = listen {
            listen.open_and_send()?;
        }
        build_mounts(mounts, ruleset)?;
        // This process is a copy of the host's memory (its environment, keys
        // read from it): the command must not read it through /proc. Not
        // dumpable, it needs CAP_SYS_PTRACE in the host's user namespace,
        // which the command lacks.
        if libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 {
            return Err(os());
        }
        // Tells the command whether this process is still alive.
        let mut alive = [0; 2];
        // How the command ended, from the namespace's init to the waiter.
        let mut ended = [0; 2];
        if libc::pipe2(alive.as_mut_ptr(), libc::O_CLOEXEC) != 0
            || libc::pipe2(ended.as_mut_ptr(), libc::O_CLOEXEC) != 0
        {
            return Err(os());
        }
        let pid = libc::fork();
        if pid < 0 {
            return Err(os());
        }
        if pid == 0 {
            // PID 1 of the namespace, killed with its waiter.
            libc::close(alive[1]);
            libc::close(ended[0]);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            let mut poll = libc::pollfd {
                fd: alive[0],
                events: libc::POLLIN,
                revents: 0,
            };
            if libc::poll(&mut poll, 1, 0) != 0 {
                // The waiter died before the death signal was armed.
                libc::_exit(127);
            }
            // Only a process of the new PID namespace can mount the /proc
            // that shows it alone; Landlock refuses mounts, so this comes
            // first.
            mount_proc()?;
            restrict(ruleset)?;
            if let Some(filter) = filter {
                filter.install()?;
            }
            // The kernel drops the signals a namespace's processes send its
            // first one (unless it handles them), so the command is not it:
            // `kill $PPID` from an agent's tool must reach the agent. The
            // first process reaps what is orphaned and tells how the
            // command ended.
            let command = libc::fork();
            if command < 0 {
                return Err(os());
            }
            if command == 0 {
                libc::close(ended[1]);
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                return Ok(());
            }
            reap_until(command, ended[1]);
        }
        libc::close(ended[1]);
        if restrict(ruleset).is_err() {
            libc::kill(pid, libc::SIGKILL);
        }
        wait_and_exit(pid, alive[1], ended[0])
    }
}

/// The first process of the namespace: drop every descriptor but `report`,
/// reap every child until `command` ends, and write its wait status to
/// `report`.
///
/// # Safety
/// Only in the first process of [`enter`]'s PID namespace.
unsafe fn reap_until(command: libc::pid_t, report: libc::c_int) -> ! {
    close_all_but(&[report]);
    let mut status = 0;
    loop {
        let reaped = libc::waitpid(-1, &mut status, 0);
        if reaped == command {
            break;
        }
        if reaped < 0 && errno() != libc::EINTR {
            libc::_exit(127);
        }
    }
    let bytes = status.to_ne_bytes();
    libc::write(report, bytes.as_ptr().cast(), bytes.len());
    libc::_exit(0)
}

/// Close every descriptor but `keep` (ascending).
///
/// # Safety
/// Async-signal-safe; for the forked children of [`enter`].
unsafe fn close_all_but(keep: &[libc::c_int]) {
    let mut from = 0u32;
    for &fd in keep {
        if fd as u32 > from {
            libc::syscall(libc::SYS_close_range, from, fd as u32 - 1, 0u32);
        }
        from = fd as u32 + 1;
    }
    libc::syscall(libc::SYS_close_range, from, u32::MAX, 0u32);
}

/// Take on the Landlock domain for good: `no_new_privs`, the ruleset, and
/// no capabilities left to undo the read-only mounts with.
///
/// # Safety
/// Async-signal-safe; for the forked children of [`enter`].
unsafe fn restrict(ruleset: libc::c_int) -> std::io::Result<()> {
    let os = std::io::Error::last_os_error;
    if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
        return Err(os());
    }
    if libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0) != 0 {
        return Err(os());
    }
    drop_capabilities()
}

/// Mount a fresh, read-only procfs of this PID namespace on `/proc`: the
/// host's processes (their command lines, with whatever secrets were passed
/// as arguments) are not in it.
///
/// # Safety
/// Async-signal-safe; for the first process of a new PID namespace.
unsafe fn mount_proc() -> std::io::Result<()> {
    mount(
        Some(c"proc"),
        c"/proc",
        Some(c"proc"),
        libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        None,
    )
}

/// Where an agent's turn gets its pseudo-terminals.
const PTS: &std::ffi::CStr = c"/dev/pts";

/// `OPEN_TREE_CLONE` of `<linux/mount.h>`.
const OPEN_TREE_CLONE: libc::c_uint = 1;
/// `MOVE_MOUNT_F_EMPTY_PATH` of `<linux/mount.h>`.
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
/// `MOVE_MOUNT_T_SYMLINKS` of `<linux/mount.h>`.
const MOVE_MOUNT_T_SYMLINKS: libc::c_uint = 0x10;
/// `LANDLOCK_RULE_PATH_BENEATH` of `<linux/landlock.h>`.
const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;

/// Build the command's mounts in this (new) mount namespace: the hidden
/// places covered, fresh private directories, every mount read-only except
/// the writable directories (put back at their paths) and the private
/// ones, which `ruleset` lets the command write.
///
/// # Safety
/// Async-signal-safe; for the forked child, inside its own user and mount
/// namespaces.
unsafe fn build_mounts(mounts: &Mounts, ruleset: libc::c_int) -> std::io::Result<()> {
    let os = std::io::Error::last_os_error;
    // Nothing done here may reach the host's mounts.
    mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE, None)?;
    // The writable directories and the devices, cloned before anything
    // covers them.
    let clone_of = |path: &CString| {
        let fd = libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            path.as_ptr(),
            OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | libc::AT_RECURSIVE as libc::c_uint,
        );
        if fd < 0 {
            return Err(os());
        }
        Ok(fd as libc::c_int)
    };
    let mut clones = [-1 as libc::c_int; MAX_WRITABLE];
    for (clone, dir) in clones.iter_mut().zip(&mounts.writable) {
        *clone = clone_of(dir)?;
    }
    let mut devices = [-1 as libc::c_int; DEVICES.len()];
    for (clone, device) in devices.iter_mut().zip(&mounts.devices) {
        *clone = clone_of(device)?;
    }
    let mut kept = [-1 as libc::c_int; homes::MAX_KEPT];
    for (clone, dir) in kept.iter_mut().zip(&mounts.kept) {
        *clone = clone_of(dir)?;
    }
    let mut private_seen = [-1 as libc::c_int; MAX_PRIVATE_SEEN];
    for (clone, dir) in private_seen.iter_mut().zip(&mounts.private_seen) {
        *clone = clone_of(dir)?;
    }
    let mut late_shown = [-1 as libc::c_int; MAX_PRIVATE_SEEN];
    for (clone, dir) in late_shown.iter_mut().zip(&mounts.late_shown) {
        *clone = clone_of(dir)?;
    }
    let hosts = match &mounts.hosts {
        Some(file) => Some(clone_of(file)?),
        None => None,
    };
    let put_back = |clone: libc::c_int, path: &std::ffi::CStr| {
        let moved = libc::syscall(
            libc::SYS_move_mount,
            clone,
            c"".as_ptr(),
            libc::AT_FDCWD,
            path.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        );
        libc::close(clone);
        if moved != 0 {
            return Err(os());
        }
        Ok(())
    };
    let hidden = libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    let absent =
        |e: &std::io::Error| matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR));
    let make_dir = |dir: &std::ffi::CStr, mode| {
        if libc::mkdir(dir.as_ptr(), mode) != 0 && errno() != libc::EEXIST {
            return Err(os());
        }
        Ok(())
    };
    // The homes, emptied, with the toolchains put back; writable until the
    // whole tree is made read-only below. Before the hidden places, which
    // cover what of them is put back (cargo's credentials, say).
    for home in &mounts.homes {
        match mount(
            Some(c"tmpfs"),
            home,
            Some(c"tmpfs"),
            libc::MS_NOSUID | libc::MS_NODEV,
            Some(c"size=64k,mode=755"),
        ) {
            Err(e) if !absent(&e) => return Err(e),
            _ => {}
        }
    }
    for dir in &mounts.home_mountpoints {
        make_dir(dir, 0o755)?;
    }
    for (&clone, dir) in kept.iter().zip(&mounts.kept) {
        put_back(clone, dir)?;
    }
    // One empty tmpfs, bound over the rest: a bind mount costs far less
    // than a new file system.
    let mut empty: Option<&CString> = None;
    for dir in &mounts.hidden.dirs {
        let covered = match empty {
            Some(first) => mount(Some(first), dir, None, libc::MS_BIND, None),
            None => mount(
                Some(c"tmpfs"),
                dir,
                Some(c"tmpfs"),
                hidden,
                Some(c"size=4k,mode=755"),
            ),
        };
        match covered {
            Ok(()) => empty = empty.or(Some(dir)),
            Err(e) if !absent(&e) => return Err(e),
            Err(_) => {}
        }
    }
    for file in &mounts.hidden.files {
        match mount(Some(c"/dev/null"), file, None, libc::MS_BIND, None) {
            Err(e) if !absent(&e) => return Err(e),
            _ => {}
        }
    }
    // A `/dev` of the harmless devices, their links and the mount points
    // below.
    mount(
        Some(c"tmpfs"),
        c"/dev",
        Some(c"tmpfs"),
        libc::MS_NOSUID | libc::MS_NOEXEC,
        Some(c"size=64k,mode=755"),
    )?;
    for (&clone, device) in devices.iter().zip(&mounts.devices) {
        let file = libc::open(
            device.as_ptr(),
            libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
            0o666,
        );
        if file < 0 {
            return Err(os());
        }
        libc::close(file);
        put_back(clone, device)?;
    }
    for (target, link) in DEVICE_LINKS {
        if libc::symlink(target.as_ptr(), link.as_ptr()) != 0 {
            return Err(os());
        }
    }
    if mounts.ptys {
        // A new instance: none of the host's terminals is in it.
        make_dir(PTS, 0o755)?;
        mount(
            Some(c"devpts"),
            PTS,
            Some(c"devpts"),
            libc::MS_NOSUID | libc::MS_NOEXEC,
            Some(c"newinstance,ptmxmode=0666,mode=0620"),
        )?;
        if libc::symlink(c"pts/ptmx".as_ptr(), c"/dev/ptmx".as_ptr()) != 0 {
            return Err(os());
        }
    }
    for dir in &mounts.private {
        make_dir(dir, 0o1777)?;
        mount(
            Some(c"tmpfs"),
            dir,
            Some(c"tmpfs"),
            libc::MS_NOSUID | libc::MS_NODEV,
            Some(mounts.private_options.as_c_str()),
        )?;
    }
    for dir in &mounts.mountpoints {
        make_dir(dir, 0o700)?;
    }
    // What is seen first: a writable directory may lie in it (a skill's
    // target directory).
    for (&clone, dir) in private_seen.iter().zip(&mounts.private_seen) {
        put_back(clone, dir)?;
    }
    // Each its own: the writable directories' places are made in them.
    for dir in &mounts.late_dirs {
        mount(
            Some(c"tmpfs"),
            dir,
            Some(c"tmpfs"),
            libc::MS_NOSUID | libc::MS_NODEV,
            Some(c"size=64k,mode=755"),
        )?;
    }
    for dir in &mounts.late_mountpoints {
        make_dir(dir, 0o700)?;
    }
    for (&clone, dir) in late_shown.iter().zip(&mounts.late_shown) {
        put_back(clone, dir)?;
    }
    for file in &mounts.late_files {
        match mount(Some(c"/dev/null"), file, None, libc::MS_BIND, None) {
            Err(e) if !absent(&e) => return Err(e),
            _ => {}
        }
    }
    for (&clone, dir) in clones.iter().zip(&mounts.writable) {
        put_back(clone, dir)?;
    }
    if let Some(clone) = hosts {
        // Onto the file `/etc/hosts` names, when it is a link.
        let moved = libc::syscall(
            libc::SYS_move_mount,
            clone,
            c"".as_ptr(),
            libc::AT_FDCWD,
            c"/etc/hosts".as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_SYMLINKS,
        );
        libc::close(clone);
        if moved != 0 {
            return Err(os());
        }
    }
    let set_attr = |path: &std::ffi::CStr, attr: &MountAttr| {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::AT_RECURSIVE,
            attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    let read_only = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    if set_attr(c"/", &read_only) != 0 {
        return Err(os());
    }
    let read_write = MountAttr {
        attr_set: 0,
        attr_clr: MOUNT_ATTR_RDONLY,
        propagation: 0,
        userns_fd: 0,
    };
    // Writable: the private directories; read-only again what is seen in
    // them and the places covered last (with what is seen in those),
    // whatever Landlock allows there; writable the writable ones, in it or
    // not.
    if mounts.ptys && set_attr(PTS, &read_write) != 0 {
        return Err(os());
    }
    let passes = [
        (&mounts.private, &read_write),
        (&mounts.private_seen, &read_only),
        (&mounts.late_dirs, &read_only),
        (&mounts.late_shown, &read_only),
        (&mounts.writable, &read_write),
    ];
    for (dirs, attr) in passes {
        for dir in dirs {
            if set_attr(dir, attr) != 0 {
                return Err(os());
            }
        }
    }
    // The private mounts did not exist when the ruleset was made: their
    // roots get their rule now.
    let pts = mounts.ptys.then_some(PTS);
    for dir in mounts.private.iter().map(CString::as_c_str).chain(pts) {
        let fd = libc::open(
            dir.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return Err(os());
        }
        let rule = PathBeneathAttr {
            allowed_access: mounts.private_access,
            parent_fd: fd,
        };
        let added = libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset,
            LANDLOCK_RULE_PATH_BENEATH,
            &rule as *const PathBeneathAttr,
            0u32,
        );
        libc::close(fd);
        if added != 0 {
            return Err(os());
        }
    }
    // The working directory was entered before the mounts covered it:
    // enter it again by name to land on the writable mount.
    let mut cwd = [0 as libc::c_char; libc::PATH_MAX as usize];
    if libc::syscall(libc::SYS_getcwd, cwd.as_mut_ptr(), cwd.len()) < 0
        || libc::chdir(cwd.as_ptr()) != 0
    {
        return Err(os());
    }
    Ok(())
}

/// `mount(2)` (async-signal-safe).
///
/// # Safety
/// For the forked child.
unsafe fn mount(
    source: Option<&std::ffi::CStr>,
    target: &std::ffi::CStr,
    fstype: Option<&std::ffi::CStr>,
    flags: libc::c_ulong,
    data: Option<&std::ffi::CStr>,
) -> std::io::Result<()> {
    let ptr = |s: Option<&std::ffi::CStr>| s.map_or(std::ptr::null(), |s| s.as_ptr());
    let data = ptr(data).cast::<libc::c_void>();
    if libc::mount(ptr(source), target.as_ptr(), ptr(fstype), flags, data) != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Empty the capability bounding set and the ambient set, so the command
/// (root of its user namespace or not) execs with no capability at all and
/// cannot undo the read-only mounts.
///
/// # Safety
/// Async-signal-safe; for the forked child.
unsafe fn drop_capabilities() -> std::io::Result<()> {
    // Capabilities are numbered from 0; the kernel's last one is below 64,
    // and dropping an unknown one fails with EINVAL, which ends the loop.
    for cap in 0..64 {
        if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
            if errno() == libc::EINVAL {
                break;
            }
            return Err(std::io::Error::last_os_error());
        }
    }
    if libc::prctl(
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_CLEAR_ALL,
        0,
        0,
        0,
    ) != 0
    {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The waiter: drop every descriptor but the liveness pipe and the pipe
/// that tells how the command `ended` (the command's output pipes must close
/// when the command's namespace dies, and the exec error pipe when the
/// command execs), wait, and end the way the command did.
///
/// # Safety
/// Only in the forked child of [`enter`].
unsafe fn wait_and_exit(pid: libc::pid_t, alive: libc::c_int, ended: libc::c_int) -> ! {
    let (a, b) = (alive.min(ended), alive.max(ended));
    close_all_but(&[a, b]);
    let mut status = 0;
    while libc::waitpid(pid, &mut status, 0) < 0 {
        if errno() != libc::EINTR {
            libc::_exit(127);
        }
    }
    // The command's own end, as the namespace's first process saw it;
    // that process's, if it died first.
    let mut bytes = [0u8; 4];
    if libc::WIFEXITED(status)
        && libc::WEXITSTATUS(status) == 0
        && libc::read(ended, bytes.as_mut_ptr().cast(), bytes.len()) == bytes.len() as isize
    {
        status = i32::from_ne_bytes(bytes);
    }
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        libc::signal(sig, libc::SIG_DFL);
        libc::kill(libc::getpid(), sig);
        libc::_exit(128 + sig);
    }
    libc::_exit(libc::WEXITSTATUS(status))
}

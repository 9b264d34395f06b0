//! What this machine can confine (namespaces, Landlock's ABI, Unix socket
//! rules), probed once, and how `critic doctor` reports it.

use super::child::{mount, mount_proc};
use super::hidden::homes;
use super::kernel::{errno, exit_code_of, IdMaps};
use super::places::{DEFAULT_PRIVATE_DIR_BYTES, NAMESPACES, PRIVATE_DIRS, UNIX_SOCKET_ABI};
use super::{memory, seccomp};
use std::path::PathBuf;
use std::sync::OnceLock;

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
pub(super) fn landlock_abi() -> Option<u32> {
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
pub(super) fn probe_namespaces() -> Result<(), String> {
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
/// How pathname Unix sockets outside the copy are kept from a command on
/// this machine, in words.
fn unix_sockets(support: &Support) -> &'static str {
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
fn socket_families() -> &'static str {
    if seccomp::WRITTEN_FOR_THIS_MACHINE {
        "IPv4 and IPv6 (in the run's own network namespace), route netlink and Unix; vsock, \
         packet, the other netlink protocols and io_uring are refused; an x32 call fails and an \
         i386 call kills the process"
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
fn agent_turns(support: &Support) -> String {
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
pub(super) fn homes_seen() -> serde_json::Value {
    let plan = super::homes::plan(
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

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
mod kernel;
pub mod memory;
mod mount_plan;
mod network;
mod places;
mod seccomp;
mod support;

use child::enter;
use hidden::{homes, Hidden};
pub use support::{report, report_text, support, UnixSockets};

use kernel::IdMaps;
use mount_plan::{Mounts, MAX_WRITABLE};
pub use places::{in_private_dir, DEFAULT_PRIVATE_DIR_BYTES, MAX_FILE_BYTES, MAX_PROCESSES};
use places::{DEVICES, PRIVATE_DIRS, WRITABLE_DEVICES};

pub use agent::{hosts_file, listenable, AgentReach, Listeners};

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The Landlock ABI whose file system rights this build asks for.
const ABI_WANTED: landlock::ABI = landlock::ABI::V9;

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
        let paths = mount_plan::plan(&mount_plan::Inputs {
            writable: &writable,
            private: &private,
            seen,
            covered_last: reach.map_or(&[], |r| &r.covered),
            homes: &homes(),
            path: std::env::var_os("PATH").as_deref(),
            var: &|name| std::env::var_os(name).map(PathBuf::from),
        });
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
                mountpoints: cs(&paths.mountpoints)?,
                hidden,
                homes: cs(&paths.homes)?,
                kept: cs(&paths.kept)?,
                home_mountpoints: cs(&paths.home_mountpoints)?,
                private_seen: cs(&paths.private_seen)?,
                devices: cs(&devices)?,
                hosts,
                ptys: reach.is_some(),
                late_dirs: cs(&paths.late_dirs)?,
                late_shown: cs(&paths.late_shown)?,
                late_files: cs(&paths.late_files)?,
                late_mountpoints: cs(&paths.late_mountpoints)?,
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

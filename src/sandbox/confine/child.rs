//! What the forked child does between `fork` and `exec`: enter the
//! namespaces, build the mounts, fork the namespace's first process (which
//! mounts `/proc`, takes the Landlock domain, drops capabilities and
//! starts the command), and wait to pass the command's status on. Only
//! async-signal-safe calls happen here: what allocates is prepared by
//! [`super::Confinement`] in the parent.

use super::kernel::{
    errno, IdMaps, MountAttr, PathBeneathAttr, KEYCTL_JOIN_SESSION_KEYRING, MOUNT_ATTR_RDONLY,
};
use super::mount_plan::{Mounts, MAX_PRIVATE_SEEN, MAX_WRITABLE};
use super::places::{DEVICES, DEVICE_LINKS, NAMESPACES};
use super::{agent, homes, network, seccomp};
use std::ffi::CString;

/// In the forked child: enter the namespaces and build the command's mounts,
/// then fork the first process of the new PID namespace (which mounts its
/// `/proc`, takes on the Landlock domain, drops its capabilities, and forks
/// the command) while this process stays behind, confined the same way, to
/// wait for it and pass the command's status on.
pub(super) fn enter(
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
pub(super) unsafe fn mount_proc() -> std::io::Result<()> {
    mount(
        Some(c"proc"),
        c"/proc",
        Some(c"proc"),
        libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        None,
    )
}

/// Where an agent's turn gets its pseudo-terminals.
pub(super) const PTS: &std::ffi::CStr = c"/dev/pts";

/// `OPEN_TREE_CLONE` of `<linux/mount.h>`.
pub(super) const OPEN_TREE_CLONE: libc::c_uint = 1;
/// `MOVE_MOUNT_F_EMPTY_PATH` of `<linux/mount.h>`.
pub(super) const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
/// `MOVE_MOUNT_T_SYMLINKS` of `<linux/mount.h>`.
pub(super) const MOVE_MOUNT_T_SYMLINKS: libc::c_uint = 0x10;
/// `LANDLOCK_RULE_PATH_BENEATH` of `<linux/landlock.h>`.
pub(super) const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;

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
pub(super) unsafe fn mount(
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

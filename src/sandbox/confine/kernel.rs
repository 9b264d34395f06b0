//! The kernel interfaces the confinement calls that libc does not wrap, and
//! the async-signal-safe helpers the forked child uses (errors, waits, id
//! maps).

/// `KEYCTL_JOIN_SESSION_KEYRING` of `<linux/keyctl.h>`.
pub(super) const KEYCTL_JOIN_SESSION_KEYRING: libc::c_long = 1;

/// `MOUNT_ATTR_RDONLY` of `<linux/mount.h>`.
pub(super) const MOUNT_ATTR_RDONLY: u64 = 0x1;

/// `struct mount_attr` of `<linux/mount.h>`, the argument of `mount_setattr`.
#[repr(C)]
pub(super) struct MountAttr {
    pub(super) attr_set: u64,
    pub(super) attr_clr: u64,
    pub(super) propagation: u64,
    pub(super) userns_fd: u64,
}

/// Wait for child `pid`; its exit code, or -1 when it failed to start or
/// died of a signal (async-signal-safe).
pub(super) fn exit_code_of(pid: libc::pid_t) -> i32 {
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

pub(super) fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// `uid_map` and `gid_map` lines mapping the caller's ids to themselves.
#[derive(Debug, Clone)]
pub(super) struct IdMaps {
    pub(super) uid: Vec<u8>,
    pub(super) gid: Vec<u8>,
}

impl IdMaps {
    pub(super) fn current() -> Result<IdMaps, String> {
        // SAFETY: getuid and getgid have no preconditions.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Ok(IdMaps {
            uid: format!("{uid} {uid} 1\n").into_bytes(),
            gid: format!("{gid} {gid} 1\n").into_bytes(),
        })
    }

    /// Write the maps of the calling process (async-signal-safe).
    pub(super) fn write(&self) -> Result<(), i32> {
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

/// `struct landlock_path_beneath_attr` of `<linux/landlock.h>` (packed).
#[repr(C, packed)]
pub(super) struct PathBeneathAttr {
    pub(super) allowed_access: u64,
    pub(super) parent_fd: i32,
}

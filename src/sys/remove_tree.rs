//! Removing a directory tree that an untrusted run shaped.
//!
//! `std::fs::remove_dir_all` holds a descriptor for every level it descends
//! and gives up on a directory it cannot read, so a run that nests
//! directories deeper than the open-file limit, or takes the permissions off
//! one, leaves its scratch copy behind (in memory, on tmpfs) for good. This
//! walk holds at most two descriptors at any depth, gives each directory
//! back its owner's permissions before reading it, and never follows a
//! symlink. It climbs back up through `..` and checks, by device and inode,
//! that it arrived where it came from: a tree moved under it mid-walk stops
//! it rather than steering it elsewhere.

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};
use std::ffi::{CStr, CString};
use std::os::fd::OwnedFd;
use std::path::Path;

/// A directory the walk is inside: its name in its parent, its device and
/// inode, and the subdirectories it still has to empty.
struct Level {
    name: CString,
    id: (u64, u64),
    pending: Vec<CString>,
}

/// The device and inode of an open directory.
fn id_of(fd: &OwnedFd) -> std::io::Result<(u64, u64)> {
    let st = rustix::fs::fstat(fd)?;
    Ok((st.st_dev, st.st_ino))
}

/// Remove `root` and everything under it. A missing `root` is not an error.
pub fn remove_tree(root: &Path) -> std::io::Result<()> {
    let mut cur = match open_dir(rustix::fs::CWD, root) {
        Ok(fd) => fd,
        Err(e) if e == rustix::io::Errno::NOENT => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let mut stack = vec![Level {
        name: CString::default(),
        id: id_of(&cur)?,
        pending: empty_files(&cur)?,
    }];
    while let Some(top) = stack.last_mut() {
        if let Some(child) = top.pending.pop() {
            let fd = open_dir(&cur, child.as_c_str())?;
            let id = id_of(&fd)?;
            let pending = empty_files(&fd)?;
            cur = fd;
            stack.push(Level {
                name: child,
                id,
                pending,
            });
            continue;
        }
        let done = stack.pop().expect("the loop saw a top level");
        let Some(parent) = stack.last() else {
            break;
        };
        cur = open_dir(&cur, c"..")?;
        if id_of(&cur)? != parent.id {
            return Err(std::io::Error::other(format!(
                "{}: a directory was moved while it was being removed; stopped",
                root.display()
            )));
        }
        rustix::fs::unlinkat(&cur, done.name.as_c_str(), AtFlags::REMOVEDIR)?;
    }
    drop(cur);
    std::fs::remove_dir(root)
}

/// Open the directory `name` in `dir` without following a symlink, giving
/// it back its owner's permissions first if it has lost them.
fn open_dir<P: rustix::path::Arg + Copy>(
    dir: impl rustix::fd::AsFd + Copy,
    name: P,
) -> rustix::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Err(rustix::io::Errno::ACCESS) => {
            rustix::fs::chmodat(dir, name, Mode::RWXU, AtFlags::empty())?;
            rustix::fs::openat(dir, name, flags, Mode::empty())
        }
        other => other,
    }
}

/// Remove every non-directory entry of `dir`; the names of its
/// subdirectories.
fn empty_files(dir: &OwnedFd) -> std::io::Result<Vec<CString>> {
    // Entries can be removed only from a writable, searchable directory.
    let _ = rustix::fs::fchmod(dir, Mode::RWXU);
    let mut subdirs = Vec::new();
    let mut entries = Dir::read_from(dir)?;
    while let Some(entry) = entries.read() {
        let entry = entry?;
        let name: &CStr = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        let kind = match entry.file_type() {
            FileType::Unknown => rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
                .map(|st| FileType::from_raw_mode(st.st_mode))?,
            kind => kind,
        };
        if kind == FileType::Directory {
            subdirs.push(name.to_owned());
        } else {
            rustix::fs::unlinkat(dir, name, AtFlags::empty())?;
        }
    }
    Ok(subdirs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_trees_deeper_than_a_path_can_name() {
        let root = tempfile::tempdir().unwrap();
        let top = root.path().join("t");
        std::fs::create_dir(&top).unwrap();
        // 2,000 levels of 3 bytes: deeper than PATH_MAX, and than the
        // descriptor limit of many machines (the integration test in
        // tests/security/scratch_copies.rs lowers the limit for the real binary).
        let mut dir = open_dir(rustix::fs::CWD, &top).unwrap();
        for _ in 0..2000 {
            let flags = OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC;
            drop(rustix::fs::openat(&dir, "f", flags, Mode::RUSR).unwrap());
            rustix::fs::mkdirat(&dir, "dd", Mode::RWXU).unwrap();
            dir = open_dir(&dir, "dd").unwrap();
        }
        drop(dir);
        remove_tree(&top).unwrap();
        assert!(!top.exists());
    }

    #[test]
    fn removes_unreadable_directories_and_leaves_symlink_targets() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "x").unwrap();
        let top = root.path().join("t");
        std::fs::create_dir_all(top.join("a/b")).unwrap();
        std::fs::write(top.join("a/b/f"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), top.join("a/link")).unwrap();
        for d in ["a/b", "a"] {
            std::fs::set_permissions(top.join(d), std::fs::Permissions::from_mode(0o000)).unwrap();
        }
        remove_tree(&top).unwrap();
        assert!(!top.exists());
        assert!(outside.path().join("keep").exists());
        assert!(
            remove_tree(&top).is_ok(),
            "a missing tree is removed already"
        );
    }
}

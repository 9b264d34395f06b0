//! File operations confined beneath a directory, following no symlink.
//!
//! The host writes into places an untrusted party shaped: feedback files in
//! the agent's workspace, patched files in a scratch copy whose base commit
//! may hold symlinks. Every operation here walks from the root's descriptor
//! one component at a time with `openat(O_NOFOLLOW)`, so a symlink anywhere
//! on the way (planted before the walk or swapped in during it) is refused
//! instead of followed, and `..` or absolute paths never get that far.

use rustix::fs::{AtFlags, Mode, OFlags};
use std::ffi::OsStr;
use std::io::{Error, ErrorKind, Read, Result, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

/// A directory whose descendants are reached without following symlinks.
#[derive(Debug)]
pub struct Beneath {
    root: OwnedFd,
}

const DIR_FLAGS: OFlags = OFlags::DIRECTORY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC)
    .union(OFlags::RDONLY);

/// The components of `rel`, refused unless it is a plain relative path.
fn parts(rel: &Path) -> Result<Vec<&OsStr>> {
    let mut out = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    format!(
                        "{}: not a relative path inside the directory",
                        rel.display()
                    ),
                ))
            }
        }
    }
    if out.is_empty() {
        return Err(Error::new(ErrorKind::InvalidInput, "empty path"));
    }
    Ok(out)
}

fn symlink_refused(err: rustix::io::Errno, name: &OsStr) -> Error {
    if err == rustix::io::Errno::LOOP || err == rustix::io::Errno::NOTDIR {
        Error::new(
            ErrorKind::InvalidInput,
            format!(
                "{}: is a symlink or not a directory; refusing to follow it",
                Path::new(name).display()
            ),
        )
    } else {
        err.into()
    }
}

impl Beneath {
    /// The directory at `root` (which the caller trusts; symlinks in `root`
    /// itself are followed).
    pub fn open(root: &Path) -> Result<Beneath> {
        let root = rustix::fs::open(root, DIR_FLAGS.difference(OFlags::NOFOLLOW), Mode::empty())?;
        Ok(Beneath { root })
    }

    /// The directory holding `rel`'s last component, made (mode 0755) when
    /// `create` is set, and that component's name.
    fn parent<'p>(&self, rel: &'p Path, create: bool) -> Result<(OwnedFd, &'p OsStr)> {
        let parts = parts(rel)?;
        let (name, dirs) = parts.split_last().expect("parts is never empty");
        let mut dir = self.root.as_fd().try_clone_to_owned()?;
        for part in dirs {
            let next = match rustix::fs::openat(&dir, *part, DIR_FLAGS, Mode::empty()) {
                Err(rustix::io::Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(&dir, *part, Mode::from_raw_mode(0o755)) {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(e) => return Err(e.into()),
                    }
                    rustix::fs::openat(&dir, *part, DIR_FLAGS, Mode::empty())
                }
                other => other,
            };
            dir = next.map_err(|e| symlink_refused(e, part))?;
        }
        Ok((dir, name))
    }

    /// Write `bytes` to `rel` in place (an existing file keeps its mode),
    /// making missing directories.
    pub fn write(&self, rel: &Path, bytes: &[u8]) -> Result<()> {
        let (dir, name) = self.parent(rel, true)?;
        let fd = rustix::fs::openat(
            &dir,
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|e| symlink_refused(e, name))?;
        std::fs::File::from(fd).write_all(bytes)
    }

    /// Write `bytes` to `rel` through a temporary file renamed over it, so a
    /// reader sees the old content or the new, never a part.
    pub fn write_atomic(&self, rel: &Path, bytes: &[u8]) -> Result<()> {
        self.write_atomic_mode(rel, bytes, 0o644)
    }

    /// [`Beneath::write_atomic`], the new file made with `mode` (before the
    /// umask).
    pub fn write_atomic_mode(&self, rel: &Path, bytes: &[u8], mode: u32) -> Result<()> {
        let (dir, name) = self.parent(rel, true)?;
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".tmp-{}", std::process::id()));
        // Whatever sits at the temporary name (a hard link the agent
        // planted, say) is removed, never written through.
        let _ = rustix::fs::unlinkat(&dir, &tmp_name, AtFlags::empty());
        let fd = rustix::fs::openat(
            &dir,
            &tmp_name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        )
        .map_err(|e| symlink_refused(e, name))?;
        let written = std::fs::File::from(fd).write_all(bytes);
        let renamed = written.and_then(|()| {
            // rename replaces a symlink at `name` itself; it never follows it.
            rustix::fs::renameat(&dir, &tmp_name, &dir, name).map_err(Error::from)
        });
        if renamed.is_err() {
            let _ = rustix::fs::unlinkat(&dir, &tmp_name, AtFlags::empty());
        }
        renamed
    }

    /// The regular file `rel`, opened for reading without blocking (a FIFO
    /// is refused, not waited on).
    pub fn open_file(&self, rel: &Path) -> Result<std::fs::File> {
        let (dir, name) = self.parent(rel, false)?;
        let fd = rustix::fs::openat(
            &dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::empty(),
        )
        .map_err(|e| symlink_refused(e, name))?;
        let file = std::fs::File::from(fd);
        if !file.metadata()?.is_file() {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("{}: not a regular file", rel.display()),
            ));
        }
        Ok(file)
    }

    /// The content of the regular file `rel`, refused when it is larger
    /// than `max` bytes.
    pub fn read(&self, rel: &Path, max: u64) -> Result<Vec<u8>> {
        let file = self.open_file(rel)?;
        let mut bytes = Vec::new();
        file.take(max + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > max {
            return Err(Error::new(
                ErrorKind::InvalidInput,
                format!("{}: larger than {max} bytes", rel.display()),
            ));
        }
        Ok(bytes)
    }

    /// Remove the file (or symlink) `rel`; a missing one is not an error.
    pub fn remove_file(&self, rel: &Path) -> Result<()> {
        let (dir, name) = match self.parent(rel, false) {
            Ok(p) => p,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        match rustix::fs::unlinkat(&dir, name, AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// What `rel` itself is, not followed if it is a link (`None`: nothing
    /// there).
    pub fn kind(&self, rel: &Path) -> Result<Option<rustix::fs::FileType>> {
        let (dir, name) = match self.parent(rel, false) {
            Ok(p) => p,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(rustix::fs::FileType::from_raw_mode(st.st_mode))),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The target of the symbolic link `rel`.
    pub fn read_link(&self, rel: &Path) -> Result<Vec<u8>> {
        let (dir, name) = self.parent(rel, false)?;
        Ok(rustix::fs::readlinkat(&dir, name, Vec::new())?.into_bytes())
    }

    /// Make `rel` a symbolic link to `target`, replacing what is there
    /// (through no link), making missing directories.
    pub fn symlink(&self, rel: &Path, target: &[u8]) -> Result<()> {
        let (dir, name) = self.parent(rel, true)?;
        match rustix::fs::unlinkat(&dir, name, AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => {}
            Err(e) => return Err(e.into()),
        }
        rustix::fs::symlinkat(OsStr::from_bytes(target), &dir, name)?;
        Ok(())
    }

    /// Remove the directory `rel` if it is empty; anything else (not
    /// empty, missing, not a directory) is left as it is.
    pub fn remove_empty_dir(&self, rel: &Path) {
        if let Ok((dir, name)) = self.parent(rel, false) {
            let _ = rustix::fs::unlinkat(&dir, name, AtFlags::REMOVEDIR);
        }
    }

    /// The directory `rel`, reached with no symlink followed (`rel` itself
    /// included).
    pub fn dir(&self, rel: &Path) -> Result<Beneath> {
        let (dir, name) = self.parent(rel, false)?;
        let root = rustix::fs::openat(&dir, name, DIR_FLAGS, Mode::empty())
            .map_err(|e| symlink_refused(e, name))?;
        Ok(Beneath { root })
    }

    /// The names in this directory (`.` and `..` left out), at most `max`.
    pub fn names(&self, max: usize) -> Result<Vec<std::ffi::OsString>> {
        let mut dir = rustix::fs::Dir::read_from(&self.root)?;
        let mut names = Vec::new();
        while let Some(entry) = dir.read() {
            let name = std::ffi::OsStr::from_bytes(entry?.file_name().to_bytes()).to_os_string();
            if name == "." || name == ".." {
                continue;
            }
            if names.len() == max {
                return Err(Error::new(
                    ErrorKind::InvalidInput,
                    format!("more than {max} entries"),
                ));
            }
            names.push(name);
        }
        Ok(names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn setup() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        let outside = t.path().join("outside");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("victim"), "keep").unwrap();
        (t, root, outside)
    }

    #[test]
    fn a_directory_is_reached_and_listed_through_no_link() {
        let (_t, root, outside) = setup();
        std::fs::write(root.join("sub/a.json"), "{}").unwrap();
        symlink(&outside, root.join("linked")).unwrap();
        symlink(outside.join("victim"), root.join("sub/b.json")).unwrap();
        let b = Beneath::open(&root).unwrap();
        let sub = b.dir(Path::new("sub")).unwrap();
        let mut names = sub.names(10).unwrap();
        names.sort();
        assert_eq!(names, ["a.json", "b.json"]);
        assert_eq!(sub.read(Path::new("a.json"), 10).unwrap(), b"{}");
        assert!(
            sub.read(Path::new("b.json"), 10).is_err(),
            "a link is not read"
        );
        assert!(b.dir(Path::new("linked")).is_err());
        assert!(sub.names(1).is_err());
    }

    #[test]
    fn an_atomic_write_never_goes_through_a_planted_temporary_name() {
        let (_t, root, outside) = setup();
        let b = Beneath::open(&root).unwrap();
        let tmp = root.join(format!("sub/.hint.md.tmp-{}", std::process::id()));
        std::fs::hard_link(outside.join("victim"), &tmp).unwrap();
        b.write_atomic(Path::new("sub/hint.md"), b"new").unwrap();
        assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"keep");
        assert_eq!(std::fs::read(root.join("sub/hint.md")).unwrap(), b"new");
    }

    #[test]
    fn writes_reads_and_removes_inside() {
        let (_t, root, _) = setup();
        let b = Beneath::open(&root).unwrap();
        b.write(Path::new("a/b/c.txt"), b"one").unwrap();
        b.write_atomic(Path::new("./a/d.txt"), b"two").unwrap();
        assert_eq!(b.read(Path::new("a/b/c.txt"), 3).unwrap(), b"one");
        assert!(
            b.read(Path::new("a/b/c.txt"), 2).is_err(),
            "longer than asked"
        );
        assert_eq!(std::fs::read(root.join("a/d.txt")).unwrap(), b"two");
        b.remove_file(Path::new("a/b/c.txt")).unwrap();
        b.remove_file(Path::new("missing/x")).unwrap();
        assert!(!root.join("a/b/c.txt").exists());
    }

    #[test]
    fn never_follows_a_symlink() {
        let (_t, root, outside) = setup();
        symlink(&outside, root.join("out")).unwrap();
        symlink(outside.join("victim"), root.join("victim")).unwrap();
        symlink("sub", root.join("inner")).unwrap();
        let b = Beneath::open(&root).unwrap();
        for rel in ["out/new", "out/victim", "victim", "inner/x"] {
            let rel = Path::new(rel);
            assert!(b.write(rel, b"x").is_err(), "{rel:?}");
            assert!(b.read(rel, 1 << 20).is_err(), "{rel:?}");
        }
        assert!(b.write_atomic(Path::new("out/victim"), b"x").is_err());
        assert!(b.remove_file(Path::new("out/victim")).is_err());
        // Replacing a symlink atomically swaps the link, not its target.
        b.write_atomic(Path::new("victim"), b"new").unwrap();
        assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"keep");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
        for bad in ["../x", "/etc/passwd", ""] {
            assert!(b.write(Path::new(bad), b"x").is_err(), "{bad:?}");
        }
    }
}

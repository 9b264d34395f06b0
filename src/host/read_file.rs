//! Capability `read-file`: a detector reads a workspace file, read-only.
//!
//! The path is relative to the workspace root. Absolute paths, `..`, and paths
//! whose real location (after symlinks) leaves the workspace are refused, and so
//! are non-regular files (a FIFO would block the host call forever) and
//! anything in a `.git` directory (its config may hold credentials, and
//! detectors judge the work tree, not the repository's internals).

use crate::sandbox::beneath::Beneath;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// Largest file a detector may read in one call.
pub const MAX_READ_BYTES: u64 = 16 << 20;

/// Read `rel` inside `root` (an already canonical workspace root).
///
/// The file is opened once: where `rel` resolves (links inside the
/// workspace followed, see [`resolve`]) is then opened from the root's
/// descriptor with no link followed on the way and without blocking, and
/// what it is (a regular file) and its size are read from that descriptor.
/// A process the agent left running cannot swap a FIFO or a link out of
/// the workspace in between.
pub fn read(root: &Path, rel: &str) -> Result<Vec<u8>, String> {
    let real = resolve(root, rel)?;
    let inside = real.strip_prefix(root).map_err(|_| escaped(rel))?;
    let file = Beneath::open(root)
        .and_then(|b| b.open_file(inside))
        .map_err(|e| format!("{rel}: {e}"))?;
    let len = file.metadata().map_err(|e| format!("{rel}: {e}"))?.len();
    if len > MAX_READ_BYTES {
        return Err(format!(
            "{rel}: {len} bytes, more than the {} MiB read-file limit",
            MAX_READ_BYTES >> 20
        ));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(MAX_READ_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{rel}: {e}"))?;
    Ok(bytes)
}

fn escaped(rel: &str) -> String {
    format!("{rel}: resolves outside the workspace (symlink escape refused)")
}

/// The real path of `rel` under `root`, or why it is refused.
fn resolve(root: &Path, rel: &str) -> Result<PathBuf, String> {
    if rel.is_empty() {
        return Err("read-file: empty path".into());
    }
    let path = Path::new(rel);
    for part in path.components() {
        match part {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => {
                return Err(format!(
                    "{rel}: '..' is not allowed; paths are relative to the workspace root"
                ))
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "{rel}: absolute paths are not allowed; use a workspace-relative path"
                ))
            }
        }
    }
    if path.components().any(is_git_dir) {
        return Err(git_refused(rel));
    }
    let joined = root.join(path);
    let real = joined.canonicalize().map_err(|e| format!("{rel}: {e}"))?;
    let Ok(inside) = real.strip_prefix(root) else {
        return Err(escaped(rel));
    };
    if inside.components().any(is_git_dir) {
        return Err(git_refused(rel));
    }
    Ok(real)
}

fn git_refused(rel: &str) -> String {
    format!("{rel}: files in .git are not readable by detectors")
}

fn is_git_dir(part: Component<'_>) -> bool {
    matches!(part, Component::Normal(n) if n.eq_ignore_ascii_case(".git"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.py"), "x = 1\n").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "s3cret").unwrap();
        let root = root.canonicalize().unwrap();
        (dir, root)
    }

    #[test]
    fn reads_workspace_files() {
        let (_d, root) = workspace();
        assert_eq!(read(&root, "src/a.py").unwrap(), b"x = 1\n");
        assert_eq!(read(&root, "./src/a.py").unwrap(), b"x = 1\n");
    }

    #[test]
    fn refuses_escapes() {
        let (d, root) = workspace();
        assert!(read(&root, "../secret.txt").unwrap_err().contains("'..'"));
        let abs = d.path().join("secret.txt");
        assert!(read(&root, abs.to_str().unwrap())
            .unwrap_err()
            .contains("absolute"));
        std::os::unix::fs::symlink(d.path().join("secret.txt"), root.join("link")).unwrap();
        assert!(read(&root, "link")
            .unwrap_err()
            .contains("outside the workspace"));
        assert!(read(&root, "src")
            .unwrap_err()
            .contains("not a regular file"));
        assert!(read(&root, "missing.py").is_err());
        // A FIFO is refused at once, not waited on; so is a device.
        assert!(std::process::Command::new("mkfifo")
            .arg(root.join("pipe"))
            .status()
            .unwrap()
            .success());
        assert!(read(&root, "pipe")
            .unwrap_err()
            .contains("not a regular file"));
        std::os::unix::fs::symlink("/dev/zero", root.join("zero")).unwrap();
        assert!(read(&root, "zero").is_err());
        // A link inside the workspace to a file inside it is read.
        std::os::unix::fs::symlink("src/a.py", root.join("alias.py")).unwrap();
        assert_eq!(read(&root, "alias.py").unwrap(), b"x = 1\n");
    }

    /// A process swaps a FIFO and a link to a file outside the workspace
    /// in and out of a path while it is read: no read blocks, and none
    /// returns the outside file.
    #[test]
    fn a_path_swapped_while_it_is_read_neither_blocks_nor_escapes() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let (d, root) = workspace();
        let fifo = root.join("fifo.tmp");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        std::os::unix::fs::symlink(d.path().join("secret.txt"), root.join("link.tmp")).unwrap();
        std::fs::write(root.join("plain.tmp"), "plain").unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let (root, stop) = (root.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    // Each swap puts a fresh one in place: hard links keep
                    // the originals.
                    let from = ["plain.tmp", "fifo.tmp", "link.tmp"][(i % 3) as usize];
                    let staged = root.join(format!("staged-{i}"));
                    if std::fs::hard_link(root.join(from), &staged).is_ok() {
                        let _ = std::fs::rename(&staged, root.join("target.txt"));
                    }
                    i += 1;
                }
            })
        };
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let reader = {
            let root = root.clone();
            std::thread::spawn(move || {
                for _ in 0..20_000 {
                    if let Ok(bytes) = read(&root, "target.txt") {
                        assert_eq!(bytes, b"plain", "only the workspace's file");
                    }
                }
                let _ = done_tx.send(());
            })
        };
        let finished = done_rx.recv_timeout(std::time::Duration::from_secs(60));
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        assert!(finished.is_ok(), "a read blocked on the FIFO");
        reader.join().unwrap();
    }

    #[test]
    fn refuses_the_git_dir_however_it_is_named() {
        let (_d, root) = workspace();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/config"), "token = s3cret").unwrap();
        std::os::unix::fs::symlink(root.join(".git/config"), root.join("cfg")).unwrap();
        for path in [".git/config", "./.git/config", ".GIT/config", "cfg"] {
            let err = read(&root, path).unwrap_err();
            assert!(err.contains(".git are not readable"), "{path}: {err}");
        }
    }
}

//! Capability `read-file`: a detector reads a workspace file, read-only.
//!
//! The path is relative to the workspace root. Absolute paths, `..`, and paths
//! whose real location (after symlinks) leaves the workspace are refused, and so
//! are non-regular files (a FIFO would block the host call forever) and
//! anything in a `.git` directory (its config may hold credentials, and
//! detectors judge the work tree, not the repository's internals).

use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// Largest file a detector may read in one call.
pub const MAX_READ_BYTES: u64 = 16 << 20;

/// Read `rel` inside `root` (an already canonical workspace root).
pub fn read(root: &Path, rel: &str) -> Result<Vec<u8>, String> {
    let target = resolve(root, rel)?;
    let meta = std::fs::metadata(&target).map_err(|e| format!("{rel}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{rel}: not a regular file"));
    }
    if meta.len() > MAX_READ_BYTES {
        return Err(format!(
            "{rel}: {} bytes, more than the {} MiB read-file limit",
            meta.len(),
            MAX_READ_BYTES >> 20
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    std::fs::File::open(&target)
        .and_then(|f| f.take(MAX_READ_BYTES).read_to_end(&mut bytes))
        .map_err(|e| format!("{rel}: {e}"))?;
    Ok(bytes)
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
        return Err(format!(
            "{rel}: resolves outside the workspace (symlink escape refused)"
        ));
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

//! Paths with their symbolic links resolved, for telling whether one lies
//! within another: `starts_with` on paths as written is fooled by a link.

use std::path::{Path, PathBuf};

/// Whether `path` lies within `root` (canonical), symbolic links resolved
/// as far as `path` exists.
pub fn within(path: &Path, root: &Path) -> bool {
    resolved(path).starts_with(root)
}

/// `path` made canonical as far as it exists, the rest appended with `.`
/// and `..` resolved by name (a state directory need not exist yet).
pub fn resolved(path: &Path) -> PathBuf {
    use std::path::Component;
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    // Canonical for as long as it exists, so `..` goes to the real parent.
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => {
                out.push(other);
                if let Ok(real) = out.canonicalize() {
                    out = real;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_resolved_through_symlinks_as_far_as_they_exist() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        std::fs::create_dir(real.join("ws")).unwrap();
        std::os::unix::fs::symlink(real.join("ws"), real.join("link")).unwrap();
        let ws = real.join("ws");
        assert_eq!(
            resolved(&real.join("link/state/x")),
            real.join("ws/state/x")
        );
        assert!(within(&real.join("link/not/yet"), &ws));
        assert!(within(&real.join("elsewhere/../ws/./s"), &ws));
        assert!(!within(&real.join("link/../elsewhere"), &ws));
        assert!(
            !within(&real.join("wsx"), &ws),
            "a prefix of a name is not a parent"
        );
    }
}

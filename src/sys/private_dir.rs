//! Directories the host trusts: the state store and the compiled-component
//! cache. What is in them decides verdicts (state) or is loaded as native code
//! (cache), so they live outside the workspace, are created private to the
//! user (`0700`), and are refused when another user could write them.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The per-user directory `kind` names under the XDG base directory
/// `xdg_var` (e.g. `XDG_STATE_HOME`), else under `$HOME/<home_rel>`; `None`
/// when neither is set to an absolute path. Never the shared temp dir, where
/// another user could plant the directory first.
pub fn user_dir(xdg_var: &str, home_rel: &str) -> Option<PathBuf> {
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    std::env::var_os(xdg_var)
        .and_then(absolute)
        .or_else(|| {
            std::env::var_os("HOME")
                .and_then(absolute)
                .map(|h| h.join(home_rel))
        })
        .map(|base| base.join("pluggable-critic"))
}

/// critic's cache: `CRITIC_CACHE_DIR`, else `pluggable-critic` in the
/// user's cache directory (`XDG_CACHE_HOME`, else `~/.cache`).
pub fn cache_root() -> Option<PathBuf> {
    std::env::var_os("CRITIC_CACHE_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| user_dir("XDG_CACHE_HOME", ".cache"))
}

/// Create `dir` (and missing parents) private to this user, and check that
/// it is a directory this user owns that no one else may write.
pub fn ensure(dir: &Path) -> Result<(), String> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
    let meta = std::fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !meta.is_dir() {
        return Err(format!("{}: not a directory", dir.display()));
    }
    owned_and_private(dir, &meta)
}

/// Check that `file`, inside a trusted directory, is a regular file (not a
/// symlink) this user owns that no one else may write.
pub fn trusted_file(file: &Path) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(file).map_err(|e| format!("{}: {e}", file.display()))?;
    if !meta.is_file() {
        return Err(format!("{}: not a regular file", file.display()));
    }
    owned_and_private(file, &meta)
}

fn owned_and_private(dir: &Path, meta: &std::fs::Metadata) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(format!(
            "{}: owned by uid {}, not by this user (uid {me}); refusing to trust it",
            dir.display(),
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "{}: writable by group or others (mode {:o}); refusing to trust it \
             (fix with `chmod go-w {}`)",
            dir.display(),
            meta.mode() & 0o7777,
            dir.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn creates_private_and_refuses_shared() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("a/b");
        ensure(&dir).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(ensure(&dir)
            .unwrap_err()
            .contains("writable by group or others"));
        let file = t.path().join("f");
        std::fs::write(&file, "").unwrap();
        assert!(ensure(&file).is_err());
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        trusted_file(&file).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(trusted_file(&file).is_err());
        std::os::unix::fs::symlink(&file, t.path().join("l")).unwrap();
        assert!(trusted_file(&t.path().join("l"))
            .unwrap_err()
            .contains("not a regular file"));
    }
}

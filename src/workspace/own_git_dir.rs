//! The runner reads an agent's workspace unconfined, and only through the
//! git directory it made: a `.git` the agent replaced (a gitfile naming the
//! user's clone, a link, borrowed objects or refs) is refused, not followed.

use super::patch_error::PatchError;
use std::path::Path;

/// Set (to `1`) by the experiment runner on the `critic` processes it
/// starts on an agent's workspace (its checks, the session's judge): the
/// workspace's git directory must be the one the runner made (see
/// [`check_own_git_dir`]).
pub const OWN_GIT_DIR_VAR: &str = "CRITIC_OWN_GIT_DIR";

pub(super) fn own_git_dir_required() -> bool {
    static REQUIRED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *REQUIRED.get_or_init(|| std::env::var_os(OWN_GIT_DIR_VAR).is_some_and(|v| v == "1"))
}

/// Whether the git directory of the work tree at `root` is a plain one of
/// its own: `root/.git` a directory (not a gitfile naming another
/// repository, not a link), with no `commondir` or alternates (which borrow
/// another repository's refs or objects) and no link anywhere in it. The
/// runner reads an agent's workspace unconfined; a repository the agent
/// points elsewhere (the user's clone, which it cannot read itself) must
/// not be followed.
pub fn check_own_git_dir(root: &Path) -> Result<(), PatchError> {
    let git_dir = root.join(".git");
    let foreign = |path: &Path, what: &str| PatchError::ForeignGitDir {
        path: path.to_path_buf(),
        what: what.to_string(),
    };
    let meta = std::fs::symlink_metadata(&git_dir)
        .map_err(|_| foreign(&git_dir, "missing (git would look for a repository above)"))?;
    if meta.file_type().is_symlink() {
        return Err(foreign(&git_dir, "a link"));
    }
    if !meta.is_dir() {
        return Err(foreign(
            &git_dir,
            "a file (a gitfile names another repository)",
        ));
    }
    // What git needs to take it for a repository: without it, git would
    // look for one above.
    for (part, dir) in [("HEAD", false), ("objects", true), ("refs", true)] {
        let path = git_dir.join(part);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() == dir && !m.file_type().is_symlink() => {}
            _ => return Err(foreign(&path, "missing or not what git makes")),
        }
    }
    for borrowed in [
        "commondir",
        "objects/info/alternates",
        "objects/info/http-alternates",
    ] {
        let path = git_dir.join(borrowed);
        if std::fs::symlink_metadata(&path).is_ok() {
            return Err(foreign(
                &path,
                "borrows another repository's refs or objects",
            ));
        }
    }
    let mut stack = vec![git_dir];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| PatchError::Io {
            path: dir.clone(),
            source: e,
        })?;
        for entry in entries.flatten() {
            match entry.file_type() {
                Ok(t) if t.is_symlink() => {
                    return Err(foreign(&entry.path(), "a link inside the git directory"))
                }
                Ok(t) if t.is_dir() => stack.push(entry.path()),
                _ => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_plain_git_directory_of_its_own_is_the_runs() {
        let elsewhere = tempfile::tempdir().unwrap();
        type Plant = fn(&Path, &Path);
        let plants: [(&str, Plant); 7] = [
            ("a gitfile", |git, other| {
                std::fs::remove_dir_all(git).unwrap();
                std::fs::write(git, format!("gitdir: {}\n", other.display())).unwrap();
            }),
            ("a link", |git, other| {
                std::fs::remove_dir_all(git).unwrap();
                std::os::unix::fs::symlink(other, git).unwrap();
            }),
            ("commondir", |git, other| {
                std::fs::write(git.join("commondir"), other.display().to_string()).unwrap()
            }),
            ("alternates", |git, other| {
                std::fs::create_dir_all(git.join("objects/info")).unwrap();
                std::fs::write(
                    git.join("objects/info/alternates"),
                    other.display().to_string(),
                )
                .unwrap()
            }),
            ("a linked pack directory", |git, other| {
                std::fs::create_dir_all(git.join("objects")).unwrap();
                std::os::unix::fs::symlink(other, git.join("objects/pack")).unwrap();
            }),
            ("no .git", |git, _| std::fs::remove_dir_all(git).unwrap()),
            ("no HEAD", |git, _| {
                std::fs::remove_file(git.join("HEAD")).unwrap()
            }),
        ];
        for (what, plant) in plants {
            let ws = tempfile::tempdir().unwrap();
            std::fs::create_dir_all(ws.path().join(".git/refs")).unwrap();
            std::fs::create_dir_all(ws.path().join(".git/objects")).unwrap();
            std::fs::write(ws.path().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
            assert!(check_own_git_dir(ws.path()).is_ok());
            plant(&ws.path().join(".git"), elsewhere.path());
            let e = check_own_git_dir(ws.path()).unwrap_err();
            assert!(matches!(e, PatchError::ForeignGitDir { .. }), "{what}: {e}");
        }
    }
}

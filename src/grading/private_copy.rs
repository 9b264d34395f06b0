//! The grader's own copy of a repository: the base commits an experiment
//! grades at, fetched from the user's clone into a bare repository under
//! the output directory (`OUT/repos/<owner>__<name>.git`), one snapshot per
//! commit, and checked object by object. Grading reads only this copy, so
//! nothing a workspace does to the objects it shares with anything (a
//! rewritten object file) reaches a grade, and the user's clone is only
//! ever read.
//!
//! A fetch re-hashes every object it receives, so an object whose content
//! no longer matches its id is refused on the way in; `git fsck --full`
//! then checks the copy as a whole each time it is opened.

use crate::workspace::git;
use std::path::{Path, PathBuf};

/// The ref each fetched base commit is kept under (a commit no ref names
/// could be pruned).
fn base_ref(commit: &str) -> String {
    format!("refs/critic/base/{commit}")
}

/// The bare repository that holds `repo`'s (`owner/name`) commits under
/// `root`.
pub fn dir(root: &Path, repo: &str) -> PathBuf {
    root.join(format!("{}.git", repo.replace('/', "__")))
}

/// Put `base` (a commit id or anything `git rev-parse` takes in `clone`)
/// of the user's `clone` into the copy at `copy`, made if missing; its
/// full commit id.
pub fn fetch(clone: &Path, base: &str, copy: &Path) -> Result<String, String> {
    let mut rev = git::command(clone);
    rev.args(["rev-parse", "--verify", "--end-of-options"])
        .arg(format!("{base}^{{commit}}"));
    let commit = git::run(rev)
        .map(|out| String::from_utf8_lossy(&out).trim().to_string())
        .map_err(|e| {
            format!(
                "{base} is not a commit of {}: {}",
                clone.display(),
                e.message.trim()
            )
        })?;
    if !copy.join("HEAD").is_file() {
        std::fs::create_dir_all(copy).map_err(|e| format!("{}: {e}", copy.display()))?;
        let mut init = git::command(copy);
        init.args(["init", "--quiet", "--bare", "."]);
        git::run(init).map_err(|e| e.to_string())?;
    }
    if has_commit(copy, &commit) {
        return Ok(commit);
    }
    // The clone is the user's own, read through the file transport that
    // git::command otherwise allows no repository. One snapshot: grading
    // needs the commit's tree, not its history.
    let mut fetch = git::command(copy);
    fetch
        .env("GIT_ALLOW_PROTOCOL", "file")
        .args(["fetch", "--quiet", "--no-tags", "--depth=1", "--"])
        .arg(format!("file://{}", absolute(clone).display()))
        .arg(format!("{commit}:{}", base_ref(&commit)));
    git::run(fetch).map_err(|e| {
        format!(
            "cannot copy {commit} of {} for grading: {}",
            clone.display(),
            e.message.trim()
        )
    })?;
    Ok(commit)
}

/// Whether the copy holds `commit` under its ref.
fn has_commit(copy: &Path, commit: &str) -> bool {
    let mut show = git::command(copy);
    show.args(["rev-parse", "--verify", "--quiet", &base_ref(commit)]);
    git::run(show).is_ok_and(|out| String::from_utf8_lossy(&out).trim() == commit)
}

/// Check every object of the copy against its id.
pub fn verify(copy: &Path) -> Result<(), String> {
    let mut fsck = git::command(copy);
    fsck.args(["fsck", "--full", "--no-dangling", "--no-progress"]);
    git::run(fsck).map(drop).map_err(|e| {
        format!(
            "{}: the grader's copy of the repository is damaged (remove it and run again): {}",
            copy.display(),
            e.message.trim()
        )
    })
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@localhost",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    fn a_base_is_copied_once_and_a_rewritten_object_is_found() {
        let clone = tempfile::tempdir().unwrap();
        git(clone.path(), &["init", "-q"]);
        std::fs::write(clone.path().join("a.py"), "x = 1\n").unwrap();
        git(clone.path(), &["add", "."]);
        git(clone.path(), &["commit", "-qm", "one"]);
        let base = git(clone.path(), &["rev-parse", "HEAD"]).trim().to_string();
        std::fs::write(clone.path().join("a.py"), "x = 2\n").unwrap();
        git(clone.path(), &["commit", "-qam", "two"]);
        let out = tempfile::tempdir().unwrap();
        let copy = dir(out.path(), "o/r");
        assert_eq!(fetch(clone.path(), &base[..10], &copy).unwrap(), base);
        assert_eq!(fetch(clone.path(), &base, &copy).unwrap(), base);
        verify(&copy).unwrap();
        let shown = git(&copy, &["cat-file", "blob", &format!("{base}:a.py")]);
        assert_eq!(shown, "x = 1\n");
        // Rewrite every loose object of the copy in place: fsck says so.
        let mut damaged = 0;
        for entry in walk(&copy.join("objects")) {
            let mut perms = std::fs::metadata(&entry).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perms.set_readonly(false);
            std::fs::set_permissions(&entry, perms).unwrap();
            let mut bytes = std::fs::read(&entry).unwrap();
            if let Some(b) = bytes.last_mut() {
                *b ^= 0xff;
                damaged += 1;
            }
            std::fs::write(&entry, bytes).unwrap();
        }
        assert!(damaged > 0);
        let e = verify(&copy).unwrap_err();
        assert!(e.contains("damaged"), "{e}");
        let e = fetch(clone.path(), "nope", &copy).unwrap_err();
        assert!(e.contains("nope is not a commit"), "{e}");
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else if p.extension().is_none_or(|x| x != "idx") {
                out.push(p);
            }
        }
        out
    }
}

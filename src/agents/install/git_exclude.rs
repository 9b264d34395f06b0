//! A project-scope install's configuration file, kept out of the patch the
//! critic judges: its path goes into the repository's own, untracked
//! exclude file (`.git/info/exclude`, or wherever `core.excludesFile`-free
//! git keeps it for a worktree), with a line saying who put it there, and
//! comes out again on uninstall. A file the project already tracks is left
//! alone: the user committed it, and its changes are theirs.

use std::path::{Path, PathBuf};

/// The comment above each line the critic adds.
const MARK: &str = "# added by `critic hook install`; `critic hook uninstall` removes it";

/// The repository's exclude file for the work tree at `project`, when it is
/// the root of one (a `.git` directory there).
fn exclude_file(project: &Path) -> Option<PathBuf> {
    let git = project.join(".git");
    std::fs::symlink_metadata(&git)
        .ok()
        .filter(|m| m.is_dir())
        .map(|_| git.join("info").join("exclude"))
}

/// The line naming `rel` (anchored at the root, so only that file).
fn line_for(rel: &Path) -> String {
    format!("/{}", rel.display())
}

/// Keep `rel` (relative to `project`) out of the project's changes. Whether
/// a line was added (nothing when it is there already, tracked, or the
/// project is not a repository's root).
pub fn add(project: &Path, rel: &Path) -> std::io::Result<bool> {
    let Some(file) = exclude_file(project) else {
        return Ok(false);
    };
    if tracked(project, rel) {
        return Ok(false);
    }
    let text = read(&file)?;
    let line = line_for(rel);
    if text.lines().any(|l| l == line) {
        return Ok(false);
    }
    let mut new = text;
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    new.push_str(&format!("{MARK}\n{line}\n"));
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    crate::sys::atomic_file::write(&file, new.as_bytes(), true)?;
    Ok(true)
}

/// Take out what [`add`] put in for `rel`; whether there was anything.
pub fn remove(project: &Path, rel: &Path) -> std::io::Result<bool> {
    let Some(file) = exclude_file(project) else {
        return Ok(false);
    };
    let text = read(&file)?;
    let line = line_for(rel);
    let lines: Vec<&str> = text.lines().collect();
    let mut kept = Vec::new();
    let mut removed = false;
    let mut i = 0;
    while i < lines.len() {
        if lines[i] == MARK && lines.get(i + 1) == Some(&line.as_str()) {
            removed = true;
            i += 2;
            continue;
        }
        kept.push(lines[i]);
        i += 1;
    }
    if removed {
        let mut new = kept.join("\n");
        if !new.is_empty() {
            new.push('\n');
        }
        crate::sys::atomic_file::write(&file, new.as_bytes(), true)?;
    }
    Ok(removed)
}

fn read(file: &Path) -> std::io::Result<String> {
    match crate::sys::bounded_read::read_regular_file_nofollow(file, 1 << 20) {
        Ok(bytes) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(e),
    }
}

/// Whether git tracks `rel` in `project` (asked the way the host asks git
/// anything: the repository's configuration cannot run a hook or a
/// monitor, and a git that hangs is stopped).
fn tracked(project: &Path, rel: &Path) -> bool {
    let mut cmd = crate::workspace::git::command(project);
    cmd.args(["ls-files", "--error-unmatch", "--"]).arg(rel);
    crate::workspace::git::run(cmd).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_goes_in_once_and_comes_out_with_nothing_else() {
        let t = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            assert!(std::process::Command::new("git")
                .arg("-C")
                .arg(t.path())
                .args(args)
                .status()
                .unwrap()
                .success())
        };
        git(&["init", "-q"]);
        let exclude = t.path().join(".git/info/exclude");
        std::fs::write(&exclude, "# mine\n*.log").unwrap();
        let rel = Path::new(".claude/settings.json");
        assert!(add(t.path(), rel).unwrap());
        assert!(!add(t.path(), rel).unwrap(), "once");
        let text = std::fs::read_to_string(&exclude).unwrap();
        assert!(text.starts_with("# mine\n*.log\n"), "{text}");
        assert!(text.ends_with("/.claude/settings.json\n"), "{text}");
        assert!(remove(t.path(), rel).unwrap());
        assert_eq!(
            std::fs::read_to_string(&exclude).unwrap(),
            "# mine\n*.log\n"
        );
        // A tracked file is the user's: not excluded.
        std::fs::write(t.path().join("tracked.json"), "{}").unwrap();
        git(&["add", "tracked.json"]);
        assert!(!add(t.path(), Path::new("tracked.json")).unwrap());
    }
}

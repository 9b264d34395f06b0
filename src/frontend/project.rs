//! Which work tree a stop hook judges.
//!
//! The hook input's `cwd` is where the agent's shell is at the stop in some
//! agents (Claude Code and Copilot CLI follow its `cd`): an agent that made
//! a fresh repository inside its project and `cd`'ed into it would have
//! that clean tree judged and be let stop. So a hook judges the *project*:
//! the workspace the hook was installed for (`--workspace`), else the root
//! the agent reports to its hooks (`CLAUDE_PROJECT_DIR` and each agent's
//! equivalent, see [`crate::agents::hook::HookProtocol::project_env`]),
//! else the project recorded at the session's first finish, else the
//! input's `cwd`. A `cwd` inside another git repository than the project's
//! is not judged at all: the finish is a rejection that says why (see
//! [`crate::frontend::unjudged::elsewhere`]).
//!
//! The session's first project is kept per agent and session under the
//! state directory (`projects/`), written and read like state: atomically,
//! never through a link, never blocking.

use crate::sys::bounded_read::read_regular_file_nofollow;
use crate::workspace::nearest_root;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The most bytes of a recorded project read back (a path).
const MAX_RECORD_BYTES: u64 = 64 << 10;

/// The work tree a hook judges, and where the agent's `cwd` was when that
/// lies in another repository.
#[derive(Debug, Clone, PartialEq)]
pub struct Project {
    /// The project's directory.
    pub dir: PathBuf,
    /// The root of the other git repository the hook input's `cwd` lies in.
    pub elsewhere: Option<PathBuf>,
}

/// Where a hook learns its project from, first given first.
#[derive(Debug, Default, Clone)]
pub struct Sources<'a> {
    /// The workspace the hook was installed for (`--workspace`).
    pub named: Option<&'a Path>,
    /// The root the agent reports in its environment.
    pub reported: Option<&'a Path>,
    /// The project recorded at the session's first finish.
    pub recorded: Option<PathBuf>,
    /// The hook input's `cwd`.
    pub cwd: Option<&'a Path>,
}

/// The project `sources` give; `None` when none names a directory.
pub fn project(sources: &Sources<'_>) -> Option<Project> {
    let dir = sources
        .named
        .or(sources.reported)
        .map(Path::to_path_buf)
        .or_else(|| sources.recorded.clone())
        .or_else(|| sources.cwd.map(Path::to_path_buf))?;
    let elsewhere = sources.cwd.and_then(|cwd| {
        let root = nearest_root(cwd);
        // A `cwd` in no repository, or in the project's, is the project.
        (root.join(".git").exists() && root != nearest_root(&dir)).then_some(root)
    });
    Some(Project { dir, elsewhere })
}

/// The session projects recorded under the state directory `state`.
#[derive(Debug, Clone)]
pub struct Records {
    dir: PathBuf,
}

impl Records {
    /// The records kept in `state` (`state/projects/`).
    pub fn new(state: &Path) -> Records {
        Records {
            dir: state.join("projects"),
        }
    }

    fn file(&self, agent: &str, session: &str) -> PathBuf {
        use sha2::{Digest, Sha256};
        let key = hex::encode(&Sha256::digest(format!("{agent}\0{session}").as_bytes())[..16]);
        self.dir.join(key)
    }

    /// The project recorded for `agent`'s `session`, if one is, and it is
    /// still a directory.
    pub fn get(&self, agent: &str, session: &str) -> Option<PathBuf> {
        let bytes =
            read_regular_file_nofollow(&self.file(agent, session), MAX_RECORD_BYTES).ok()?;
        let dir = PathBuf::from(std::ffi::OsStr::from_bytes(&bytes));
        (dir.is_absolute() && dir.is_dir()).then_some(dir)
    }

    /// Record `dir` as `agent`'s `session`'s project.
    pub fn set(&self, agent: &str, session: &str, dir: &Path) -> std::io::Result<()> {
        crate::sys::atomic_file::write(
            &self.file(agent, session),
            dir.as_os_str().as_bytes(),
            false,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git_init(dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        let ok = std::process::Command::new("git")
            .args(["init", "-q"])
            .arg(dir)
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }

    #[test]
    fn the_first_source_wins_and_a_cwd_in_another_repository_is_elsewhere() {
        let t = tempfile::tempdir().unwrap();
        let project_dir = t.path().join("project");
        git_init(&project_dir);
        let nested = project_dir.join("nested");
        git_init(&nested);
        std::fs::create_dir_all(project_dir.join("src")).unwrap();
        let plain = project(&Sources {
            reported: Some(&project_dir),
            cwd: Some(&project_dir.join("src")),
            ..Sources::default()
        })
        .unwrap();
        assert_eq!(plain.dir, project_dir);
        assert_eq!(plain.elsewhere, None);
        let away = project(&Sources {
            recorded: Some(project_dir.clone()),
            cwd: Some(&nested),
            ..Sources::default()
        })
        .unwrap();
        assert_eq!(away.dir, project_dir);
        assert_eq!(away.elsewhere, Some(nested.canonicalize().unwrap()));
        // Outside every repository, the cwd is not another project.
        let outside = t.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        let free = project(&Sources {
            named: Some(&project_dir),
            cwd: Some(&outside),
            ..Sources::default()
        })
        .unwrap();
        assert_eq!(free.elsewhere, None);
        assert_eq!(
            project(&Sources {
                cwd: Some(&nested),
                ..Sources::default()
            })
            .unwrap(),
            Project {
                dir: nested.clone(),
                elsewhere: None
            }
        );
    }

    #[test]
    fn records_round_trip_and_planted_ones_are_ignored() {
        let t = tempfile::tempdir().unwrap();
        let records = Records::new(t.path());
        assert_eq!(records.get("codex", "s"), None);
        records.set("codex", "s", t.path()).unwrap();
        assert_eq!(records.get("codex", "s"), Some(t.path().to_path_buf()));
        assert_eq!(records.get("claude-code", "s"), None);
        let file = records.file("codex", "t");
        std::os::unix::fs::symlink("/dev/zero", &file).unwrap();
        assert_eq!(records.get("codex", "t"), None);
    }
}

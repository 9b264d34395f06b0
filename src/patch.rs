//! The working-tree patch, computed once per finish.
//!
//! The diff is working tree vs a base commit (HEAD by default) and includes
//! untracked, non-ignored files, because an agent's new tests are usually
//! untracked. Untracked files are made visible to `git diff` by marking them
//! intent-to-add in a *copy* of the index, so the user's index, objects and files
//! stay untouched (intent-to-add writes no blobs).

use crate::git::{self, GitError};
use critic_sdk::{FileChange, Patch, PatchOrigin};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use std::path::{Path, PathBuf};

/// Why a patch could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    /// The directory is not inside a git work tree.
    #[error("{0}: not a git repository (run `git init` and commit the base, or pass the repository with --workspace)")]
    NotARepo(PathBuf),
    /// The repository has no commit to diff against.
    #[error("{0}: the repository has no commits; commit the base state first so the critic can diff against it")]
    NoCommits(PathBuf),
    /// `--base` names no commit.
    #[error("{dir}: --base {rev:?} is not a commit: {message}")]
    BadBase {
        /// The workspace.
        dir: PathBuf,
        /// The revision given.
        rev: String,
        /// git's words.
        message: String,
    },
    /// git failed.
    #[error(transparent)]
    Git(#[from] GitError),
    /// The diff could not be parsed (or a `--patch` file is not a diff).
    #[error("{source_name}: not a valid git diff at {error}")]
    Parse {
        /// Where the diff came from.
        source_name: String,
        /// Where it broke.
        error: critic_sdk::diff::DiffError,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// A git work tree the critic evaluates.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The work tree's top-level directory.
    pub root: PathBuf,
    /// Its git directory (absolute).
    pub git_dir: PathBuf,
    /// The commit HEAD points at.
    pub head: String,
}

impl Workspace {
    /// Find the work tree containing `dir` and its HEAD commit.
    pub fn open(dir: &Path) -> Result<Workspace, PatchError> {
        if !dir.is_dir() {
            return Err(PatchError::Io {
                path: dir.to_path_buf(),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "workspace is not a directory",
                ),
            });
        }
        // One git process answers all three questions when HEAD exists; only
        // the error path pays for a second one to tell the failures apart.
        let mut cmd = git::command(dir);
        cmd.args([
            "rev-parse",
            "--show-toplevel",
            "--absolute-git-dir",
            "HEAD^{commit}",
        ]);
        let out = match git::run(cmd) {
            Ok(out) => out,
            Err(e) if e.message.contains("not a git repository") => {
                return Err(PatchError::NotARepo(dir.to_path_buf()))
            }
            Err(e) => {
                let mut probe = git::command(dir);
                probe.args(["rev-parse", "--show-toplevel"]);
                return Err(match git::run(probe) {
                    Ok(root) => {
                        PatchError::NoCommits(PathBuf::from(String::from_utf8_lossy(&root).trim()))
                    }
                    Err(_) => PatchError::Git(e),
                });
            }
        };
        let text = String::from_utf8_lossy(&out);
        let mut lines = text.lines();
        let (Some(root), Some(git_dir), Some(head)) = (lines.next(), lines.next(), lines.next())
        else {
            return Err(PatchError::NotARepo(dir.to_path_buf()));
        };
        let root = PathBuf::from(root);
        let head = head.to_string();
        Ok(Workspace {
            root,
            git_dir: PathBuf::from(git_dir),
            head,
        })
    }

    /// The full id of the commit `rev` names.
    pub fn resolve(&self, rev: &str) -> Result<String, PatchError> {
        resolve_commit(&self.root, rev).map_err(|e| PatchError::BadBase {
            dir: self.root.clone(),
            rev: rev.to_string(),
            message: e.message,
        })
    }

    /// The diff from `base` to the working tree, untracked files included.
    pub fn worktree_patch(&self, base: &str, tests: &TestClassifier) -> Result<Patch, PatchError> {
        let index = tempfile::Builder::new()
            .prefix("critic-index-")
            .tempfile()
            .map_err(|source| PatchError::Io {
                path: std::env::temp_dir(),
                source,
            })?;
        let user_index = self.git_dir.join("index");
        // Starting from the user's index keeps git's stat cache, which is what
        // makes the diff fast on large trees.
        if user_index.is_file() {
            std::fs::copy(&user_index, index.path()).map_err(|source| PatchError::Io {
                path: user_index.clone(),
                source,
            })?;
        }
        let mut add = git::command(&self.root);
        add.env("GIT_INDEX_FILE", index.path())
            .args(["add", "--intent-to-add", "--", "."]);
        git::run(add)?;
        let mut diff = git::command(&self.root);
        diff.env("GIT_INDEX_FILE", index.path()).args([
            "diff",
            "--binary",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "-M",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            base,
            "--",
        ]);
        let raw = String::from_utf8_lossy(&git::run(diff)?).into_owned();
        parse_patch(raw, base, PatchOrigin::Worktree, "git diff", tests)
    }
}

fn resolve_commit(dir: &Path, rev: &str) -> Result<String, GitError> {
    let mut cmd = git::command(dir);
    cmd.args(["rev-parse", "--verify", "--quiet", "--end-of-options"])
        .arg(format!("{rev}^{{commit}}"));
    let out = git::run(cmd)?;
    let id = String::from_utf8_lossy(&out).trim().to_string();
    if id.is_empty() {
        return Err(GitError {
            args: format!("rev-parse {rev}"),
            dir: dir.display().to_string(),
            message: "unknown revision".into(),
        });
    }
    Ok(id)
}

/// Parse diff text into a [`Patch`], classifying test files.
pub fn parse_patch(
    raw: String,
    base: &str,
    origin: PatchOrigin,
    source_name: &str,
    tests: &TestClassifier,
) -> Result<Patch, PatchError> {
    let mut files = critic_sdk::diff::parse(&raw).map_err(|error| PatchError::Parse {
        source_name: source_name.to_string(),
        error,
    })?;
    for f in &mut files {
        tests.classify(f);
    }
    Ok(Patch {
        base: base.to_string(),
        origin,
        raw,
        files,
    })
}

/// Decides which patch files are tests, from the skill's `test_patterns`.
#[derive(Debug, Clone)]
pub struct TestClassifier {
    set: GlobSet,
}

impl TestClassifier {
    /// Compile the globs; `**/` prefixes match at any depth, including the root.
    pub fn new(patterns: &[String]) -> Result<TestClassifier, globset::Error> {
        let mut builder = GlobSetBuilder::new();
        for p in patterns {
            builder.add(GlobBuilder::new(p).literal_separator(true).build()?);
        }
        Ok(TestClassifier {
            set: builder.build()?,
        })
    }

    /// Whether `path` (workspace-relative, `/`-separated) is a test file.
    pub fn is_test(&self, path: &str) -> bool {
        self.set.is_match(path)
    }

    fn classify(&self, file: &mut FileChange) {
        file.is_test = self.is_test(&file.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::DEFAULT_TEST_PATTERNS;

    fn defaults() -> TestClassifier {
        let p: Vec<String> = DEFAULT_TEST_PATTERNS
            .iter()
            .map(|s| s.to_string())
            .collect();
        TestClassifier::new(&p).unwrap()
    }

    #[test]
    fn default_patterns_classify_common_layouts() {
        let c = defaults();
        for t in [
            "tests/test_calc.py",
            "test_calc.py",
            "pkg/tests/helpers.py",
            "calc_test.py",
            "reproduction.py",
            "web/src/app.test.ts",
            "conftest.py",
        ] {
            assert!(c.is_test(t), "{t} should be a test");
        }
        for s in [
            "src/calc.py",
            "testing.py",
            "pkg/contest.py",
            "lib/reproduction.py",
        ] {
            assert!(!c.is_test(s), "{s} should be source");
        }
    }
}

//! The working-tree patch, computed once per finish.
//!
//! The diff is working tree vs a base commit (HEAD by default) and includes
//! untracked, non-ignored files, because an agent's new tests are usually
//! untracked. Untracked files are made visible to `git diff` by marking them
//! intent-to-add in a *copy* of the index, so the user's index, objects and files
//! stay untouched (intent-to-add writes no blobs).

pub mod apply;
pub(crate) mod git;
#[doc(hidden)] // public for the fuzz tests only
pub mod new_file_diff;
mod own_git_dir;

mod patch_error;
use own_git_dir::own_git_dir_required;
pub use own_git_dir::{check_own_git_dir, OWN_GIT_DIR_VAR};
pub use patch_error::PatchError;
use patch_error::NO_FILES;

use crate::sys::bounded_read::read_regular_file;
use critic_sdk::diff::DiffError;
use critic_sdk::{FileChange, Patch, PatchOrigin};
use git::GitError;
use globset::GlobBuilder;
use std::io::Write;
use std::path::{Path, PathBuf};

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
        if own_git_dir_required() {
            check_own_git_dir(dir)?;
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
        let inside = dir
            .canonicalize()
            .is_ok_and(|d| root.canonicalize().is_ok_and(|r| d.starts_with(r)));
        if !inside {
            return Err(PatchError::WorkTreeElsewhere {
                dir: dir.to_path_buf(),
                configured: root,
            });
        }
        // git skips a `.git` it finds unusable (no HEAD, say) and looks
        // above: the runner reads the repository it made or none.
        if own_git_dir_required()
            && (root.canonicalize().ok() != dir.canonicalize().ok()
                || Path::new(git_dir).canonicalize().ok() != dir.join(".git").canonicalize().ok())
        {
            return Err(PatchError::ForeignGitDir {
                path: root,
                what: "git found this repository, not the workspace's own".into(),
            });
        }
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
        let raw = worktree_diff(&self.root, &self.git_dir, base)?;
        RawDiff::worktree(base, raw).parse(tests)
    }

    /// Open the work tree containing `dir` and diff it against `base` (HEAD
    /// when `None`); parse the result with `RawDiff::parse`.
    pub fn open_with_diff(
        dir: &Path,
        base: Option<&str>,
    ) -> Result<(Workspace, RawDiff), PatchError> {
        Workspace::start_diff(dir, base)?.finish()
    }

    /// [`Workspace::open_with_diff`] in two steps: this one starts git, whose
    /// processes then run on their own until `PendingDiff::finish`.
    ///
    /// The common case costs two git processes: the work tree, git directory
    /// and HEAD commit are found the way git finds them (the nearest `.git`,
    /// its `HEAD` and refs) without running git. Anything unusual (a named
    /// `--base`, a linked worktree, an unreadable ref) or any failure takes
    /// the path through `git rev-parse`, which also produces the error
    /// messages, so the result is always what [`Workspace::open`] plus
    /// [`Workspace::worktree_patch`] give.
    pub fn start_diff(dir: &Path, base: Option<&str>) -> Result<PendingDiff, PatchError> {
        if own_git_dir_required() {
            check_own_git_dir(dir)?;
        }
        if base.is_none() {
            if let Some(ws) = Workspace::find(dir) {
                if let Ok(run) = DiffRun::start(&ws.root, &ws.git_dir, &ws.head) {
                    return Ok(PendingDiff {
                        dir: dir.to_path_buf(),
                        ws,
                        run,
                        retry: true,
                    });
                }
            }
        }
        Workspace::start_diff_through_git(dir, base)
    }

    /// [`Workspace::start_diff`] with the work tree and base found by git.
    fn start_diff_through_git(dir: &Path, base: Option<&str>) -> Result<PendingDiff, PatchError> {
        let ws = Workspace::open(dir)?;
        let base = match base {
            Some(rev) => ws.resolve(rev)?,
            None => ws.head.clone(),
        };
        let run = DiffRun::start(&ws.root, &ws.git_dir, &base)?;
        Ok(PendingDiff {
            dir: dir.to_path_buf(),
            ws,
            run,
            retry: false,
        })
    }
}

/// A diff whose git processes are running; see [`Workspace::start_diff`].
pub struct PendingDiff {
    dir: PathBuf,
    ws: Workspace,
    run: DiffRun,
    /// Found without asking git: on failure, go the way that asks it.
    retry: bool,
}

impl PendingDiff {
    /// Wait for git; the workspace and the diff.
    pub fn finish(self) -> Result<(Workspace, RawDiff), PatchError> {
        let base = self.run.rev.clone();
        match self.run.finish(true) {
            Ok(raw) => Ok((self.ws, RawDiff::worktree(&base, raw))),
            Err(_) if self.retry => Workspace::start_diff_through_git(&self.dir, None)?.finish(),
            Err(e) => Err(e),
        }
    }
}

/// Diff text not parsed yet, so it can be produced before the test patterns
/// that classify its files are known.
#[derive(Debug, Clone)]
pub struct RawDiff {
    /// The commit it is against.
    pub base: String,
    /// The diff text.
    pub raw: String,
    /// Where it came from.
    pub origin: PatchOrigin,
    /// Its name in parse errors (`git diff` or the patch file).
    pub source_name: String,
}

impl RawDiff {
    fn worktree(base: &str, raw: String) -> RawDiff {
        RawDiff {
            base: base.to_string(),
            raw,
            origin: PatchOrigin::Worktree,
            source_name: "git diff".into(),
        }
    }

    /// Parse it, classifying test files with `tests`.
    pub fn parse(self, tests: &TestClassifier) -> Result<Patch, PatchError> {
        parse_patch(self.raw, &self.base, self.origin, &self.source_name, tests)
    }
}

impl Workspace {
    /// The work tree containing `dir` (its root canonical), found as git
    /// finds it by default (the nearest `.git` directory above it, its
    /// `HEAD`, loose or packed refs), without running git; `None` whenever
    /// that is not plain (the caller then asks git, as [`Workspace::open`]
    /// does).
    pub fn find(dir: &Path) -> Option<Workspace> {
        let start = dir.canonicalize().ok()?;
        let root = start.ancestors().find(|d| d.join(".git").exists())?;
        let git_dir = root.join(".git");
        // Linked worktrees and submodules keep refs elsewhere: leave them to git.
        if !git_dir.is_dir() || git_dir.join("commondir").exists() {
            return None;
        }
        let head = read_text(&git_dir.join("HEAD"), 4096)?;
        let head = head.trim_end();
        let commit = match head.strip_prefix("ref: ") {
            Some(name) => resolve_ref(&git_dir, name)?,
            None => head.to_string(),
        };
        is_object_id(&commit).then(|| Workspace {
            root: root.to_path_buf(),
            git_dir,
            head: commit,
        })
    }
}

/// The work tree's root as a check finds it, without git (whose state may
/// be broken): the nearest directory holding `.git`, else `dir` itself;
/// canonical where it exists. The critic's state and files must lie
/// outside it.
pub fn nearest_root(dir: &Path) -> PathBuf {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map_or(dir.clone(), Path::to_path_buf)
}

/// A branch's commit from its loose ref file or `packed-refs`.
fn resolve_ref(git_dir: &Path, name: &str) -> Option<String> {
    if !name.starts_with("refs/") || name.split('/').any(|p| p.is_empty() || p == "..") {
        return None;
    }
    if let Some(text) = read_text(&git_dir.join(name), 4096) {
        return Some(text.trim_end().to_string());
    }
    let packed = read_text(&git_dir.join("packed-refs"), 1 << 30)?;
    packed.lines().find_map(|line| {
        let (id, refname) = line.split_once(' ')?;
        (refname == name).then(|| id.to_string())
    })
}

/// A small text file of the git directory, never blocking on a FIFO the
/// agent planted there (see [`read_regular_file`]); `None` when it cannot
/// be had, which sends the caller the way through git.
fn read_text(path: &Path, max: u64) -> Option<String> {
    read_regular_file(path, max)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
}

/// A full SHA-1 or SHA-256 object id in lowercase hex.
fn is_object_id(s: &str) -> bool {
    matches!(s.len(), 40 | 64) && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `git diff <rev>` of the work tree at `root`, untracked files included.
///
/// Runs on a copy of the user's index (git may refresh the index it diffs
/// with, and the user's must stay untouched). The listing of untracked files
/// and the diff of tracked ones run side by side; the untracked files'
/// sections are then written by [`new_file_diff`]. When that cannot match
/// git byte for byte (a deletion that git could pair with a new file as a
/// rename, a binary or executable file, attributes that may filter content),
/// the untracked files are marked intent-to-add and git writes everything.
fn worktree_diff(root: &Path, git_dir: &Path, rev: &str) -> Result<String, PatchError> {
    diff_with(root, git_dir, rev, true)
}

/// [`worktree_diff`]; `native: false` always lets git write the untracked
/// files' sections (the reference the native ones are tested against).
fn diff_with(root: &Path, git_dir: &Path, rev: &str, native: bool) -> Result<String, PatchError> {
    DiffRun::start(root, git_dir, rev)?.finish(native)
}

/// The listing of untracked files and the diff of tracked ones, running at
/// once.
struct DiffRun {
    tree: WorkTree,
    rev: String,
    listing: git::Running,
    tracked: git::Running,
}

/// What every git command of a diff shares.
struct WorkTree {
    root: PathBuf,
    /// The git directory they use, with its private index and configuration.
    private: git::PrivateGitDir,
}

impl WorkTree {
    /// A git command on this work tree. Its git directory and work tree are
    /// named outright: `core.worktree` in the agent's `.git/config` would
    /// otherwise have the host diff a directory outside the workspace.
    fn git(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = git::command(&self.root);
        cmd.env("GIT_WORK_TREE", &self.root).args(args);
        self.private.apply(&mut cmd);
        cmd
    }
}

impl DiffRun {
    fn start(root: &Path, git_dir: &Path, rev: &str) -> Result<DiffRun, PatchError> {
        let tree = WorkTree {
            root: root.to_path_buf(),
            private: git::PrivateGitDir::new(root, git_dir)?,
        };
        let listing = git::spawn(tree.git(&["ls-files", "-z", "--others", "--exclude-standard"]))?;
        let tracked = match git::spawn(tree.git(&diff_args(rev))) {
            Ok(running) => running,
            Err(e) => {
                // Reaped, not left a zombie of a long-running host.
                let _ = listing.wait();
                return Err(e.into());
            }
        };
        Ok(DiffRun {
            tree,
            rev: rev.to_string(),
            listing,
            tracked,
        })
    }

    fn finish(self, native: bool) -> Result<String, PatchError> {
        let text = |out: Vec<u8>| String::from_utf8_lossy(&out).into_owned();
        let tree = &self.tree;
        let tracked = self.tracked.wait().map(text);
        let untracked = self.listing.wait().map(text);
        let (tracked, untracked) = (tracked?, untracked?);
        let untracked: Vec<&str> = untracked.split('\0').filter(|p| !p.is_empty()).collect();
        if untracked.is_empty() {
            return Ok(tracked);
        }
        if native {
            if let Some(merged) = with_new_files(&tree.root, &tracked, &untracked) {
                return Ok(merged);
            }
        }
        // Only the untracked files: `add` on `.` would also ask each
        // submodule for its status, under the submodule's own configuration.
        let listed = (|| {
            let mut list = tempfile::NamedTempFile::new()?;
            for path in &untracked {
                list.write_all(path.as_bytes())?;
                list.write_all(b"\0")?;
            }
            list.flush().map(|()| list)
        })()
        .map_err(|source| PatchError::Io {
            path: std::env::temp_dir(),
            source,
        })?;
        let mut add = tree.git(&["add", "--intent-to-add", "--pathspec-file-nul"]);
        add.arg("--pathspec-from-file")
            .arg(listed.path())
            .env("GIT_LITERAL_PATHSPECS", "1");
        git::run(add)?;
        Ok(git::run(tree.git(&diff_args(&self.rev))).map(text)?)
    }
}

fn diff_args(rev: &str) -> [&str; 14] {
    [
        "diff",
        "--binary",
        "--full-index",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        // Whether a submodule is dirty is `git status` inside it, under its
        // own configuration (filters, fsmonitor); its commit still counts.
        "--ignore-submodules=dirty",
        // `diff.submodule=diff` would start a `git diff` inside each
        // submodule, under the submodule's configuration.
        "--submodule=short",
        "-M",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        "--end-of-options",
        rev,
        "--",
    ]
}

/// The tracked diff with the untracked files' sections in git's order, or
/// `None` when git must write them (see [`worktree_diff`]).
fn with_new_files(root: &Path, tracked: &str, untracked: &[&str]) -> Option<String> {
    let attributes = root.join(".gitattributes").exists()
        || untracked.iter().any(|p| {
            Path::new(p)
                .ancestors()
                .skip(1)
                .any(|d| root.join(d).join(".gitattributes").exists())
        });
    if attributes {
        return None;
    }
    let mut sections: Vec<(&str, String)> = Vec::new();
    for section in new_file_diff::split_sections(tracked) {
        let path = new_file_diff::section_path(section)?;
        // A deleted file could pair with a new one as a rename.
        if section.contains("\ndeleted file mode ") {
            return None;
        }
        sections.push((path, section.to_string()));
    }
    for path in untracked {
        sections.push((path, new_file_diff::section(root, path)?));
    }
    // git orders files by path, bytewise (index order).
    sections.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    Some(sections.into_iter().map(|(_, s)| s).collect())
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
            host: false,
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
    // Text with no file's section in it is not an empty patch.
    if files.is_empty() && !raw.trim().is_empty() {
        return Err(PatchError::Parse {
            source_name: source_name.to_string(),
            error: DiffError {
                line: 1,
                message: NO_FILES.into(),
            },
        });
    }
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

/// Test-file globs used when a manifest gives none.
pub const DEFAULT_TEST_PATTERNS: &[&str] = &[
    "**/test_*.py",
    "**/*_test.py",
    "**/tests/**",
    "**/test/**",
    "**/conftest.py",
    "reproduction.py",
    "**/*_test.go",
    "**/*.test.*",
    "**/*.spec.*",
    "**/__tests__/**",
];

/// Decides which patch files are tests, from the skill's `test_patterns`.
///
/// The globs are translated by `globset` (so they mean exactly what the
/// manifest check accepted) and matched as one multi-pattern regex. A
/// `GlobSet` would compile that regex into a full DFA up front, about 1 ms per
/// check for a dozen patterns; a check classifies a handful of paths, which the
/// lazy DFA does in microseconds.
#[derive(Debug, Clone)]
pub struct TestClassifier {
    regex: Option<regex_automata::meta::Regex>,
}

/// Why `test_patterns` could not be compiled.
#[derive(Debug, thiserror::Error)]
pub enum PatternError {
    /// Not a glob.
    #[error(transparent)]
    Glob(#[from] globset::Error),
    /// Globs whose regex cannot be built (too big).
    #[error("the patterns compile to too large a matcher: {0}")]
    Regex(String),
}

impl TestClassifier {
    /// Compile the globs; `**/` prefixes match at any depth, including the root.
    pub fn new(patterns: &[String]) -> Result<TestClassifier, PatternError> {
        use regex_automata::{meta, util::syntax};
        let regexes = patterns
            .iter()
            .map(|p| {
                let glob = GlobBuilder::new(p).literal_separator(true).build()?;
                Ok(glob.regex().to_string())
            })
            .collect::<Result<Vec<_>, globset::Error>>()?;
        if regexes.is_empty() {
            return Ok(TestClassifier { regex: None });
        }
        // The same syntax options globset uses for its own regexes.
        let regex = meta::Builder::new()
            .syntax(syntax::Config::new().utf8(false).dot_matches_new_line(true))
            .configure(
                meta::Config::new()
                    .utf8_empty(false)
                    .dfa(false)
                    .onepass(false),
            )
            .build_many(&regexes)
            .map_err(|e| PatternError::Regex(e.to_string()))?;
        Ok(TestClassifier { regex: Some(regex) })
    }

    /// Whether `path` (workspace-relative, `/`-separated) is a test file.
    pub fn is_test(&self, path: &str) -> bool {
        self.regex
            .as_ref()
            .is_some_and(|r| r.is_match(path.as_bytes()))
    }

    fn classify(&self, file: &mut FileChange) {
        file.is_test = self.is_test(&file.path);
    }
}

#[cfg(test)]
mod tests;

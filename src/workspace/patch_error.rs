//! [`PatchError`]: why a work tree's patch could not be computed, in words
//! that quote nothing of the text.

use super::git::GitError;
use critic_sdk::diff::DiffError;
use std::path::PathBuf;

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
    /// The repository's configuration moves its work tree elsewhere.
    #[error(
        "{dir}: the repository's configuration (core.worktree) puts its work tree at \
         {configured}, which does not contain it; refusing to diff another directory \
         (remove the setting with `git config --unset core.worktree`)"
    )]
    WorkTreeElsewhere {
        /// The workspace asked for.
        dir: PathBuf,
        /// Where git would look.
        configured: PathBuf,
    },
    /// The work tree's git directory is not the plain directory the runner
    /// made (see `check_own_git_dir`).
    #[error(
        "{path}: {what}; this run's repository is the `.git` directory the runner made, and \
         the critic reads no other (restore it: `git init` cannot, so undo what replaced it)"
    )]
    ForeignGitDir {
        /// What was found.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
    /// git failed.
    #[error(transparent)]
    Git(#[from] GitError),
    /// The diff could not be parsed (or a `--patch` file is not a diff).
    /// Every such error is about a line that does not begin as the format
    /// wants, so the place is its column 1. The message says what was
    /// expected there, never what was found: a patch file a request names
    /// may be some secret (see `expected`).
    #[error("{source_name}:{}:1: not a valid git diff: {}", error.line, expected(error))]
    Parse {
        /// Where the diff came from.
        source_name: String,
        /// Where it broke.
        error: DiffError,
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

/// The parse error of text in which no file's section begins.
pub(super) const NO_FILES: &str = "no file's section in the text";

/// What the diff parser expected where it stopped, in words that quote
/// nothing of the text. The parser's own message quotes the line it met
/// (it also serves detectors, which parse diffs of their own), so only its
/// fixed beginning is read here; a unit test holds every form to its words.
fn expected(e: &DiffError) -> &'static str {
    let m = e.message.as_str();
    if m == NO_FILES {
        "expected a `diff --git a/<path> b/<path>` line (or `--- a/<path>` and `+++ b/<path>`)"
    } else if m.starts_with("patch fragment without header") {
        "a hunk with no file's header before it"
    } else if m.starts_with("cannot read the paths") {
        "cannot tell the two paths of this `diff --git` line apart"
    } else if m.starts_with("malformed hunk header") {
        "malformed hunk header (expected `@@ -<line>,<count> +<line>,<count> @@`)"
    } else if m.starts_with("hunk header ") {
        "the hunk header names lines past 4294967295"
    } else if m.starts_with("hunk \"") {
        "this line is none of those its hunk still owes (each begins with ' ', '-' or '+')"
    } else if m == "diff ends inside a hunk" {
        "the diff ends inside a hunk"
    } else {
        "not git's diff format"
    }
}

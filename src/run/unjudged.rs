//! A finish the critic could not judge because of something the agent can
//! cause: its work tree or git state (a broken `.git/config`, HEAD naming a
//! missing branch, the repository deleted) or its transcript (edited,
//! truncated, replaced). Letting the agent stop then would let it switch
//! the critic off, so such a finish is counted as a rejection whose
//! follow-up names the problem and how to fix it, spent from the same
//! budget as every other rejection: the loop still ends, and the agent is
//! never trapped. Failures on the user's side (the skill, the command line,
//! the state directory, the host itself) stay errors, which hooks answer by
//! letting the agent stop, loudly.

use crate::evaluate::scorer::{unjudged_verdict, Standing};
use crate::evaluate::state::{default_root, StateStore};
use crate::evaluate::verdict::Verdict;
use crate::run::{CheckRequest, EventsSource};
use crate::skill::Skill;
use crate::workspace::PatchError;
use crate::Error;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Which of the agent's inputs a failure is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    /// The work tree or its git state.
    Workspace,
    /// The transcript (events) the agent's program keeps.
    Transcript,
}

/// The agent's input `error` is about, when it is one the agent can cause
/// (`None`: the user's side or the host's).
pub(crate) fn cause(error: &Error, request: &CheckRequest) -> Option<Cause> {
    let named_by_user = |path: &Path| request.patch.as_deref() == Some(path);
    match error {
        // A `--base` or `--patch` of the user's is their command line.
        Error::Patch(PatchError::BadBase { .. }) => None,
        Error::Patch(PatchError::Io { path, .. }) if named_by_user(path) => None,
        Error::Patch(PatchError::Parse { .. }) if request.patch.is_some() => None,
        Error::Patch(_) => Some(Cause::Workspace),
        // Events sent in the request body are the client's own.
        Error::Events(_) => match request.events_source() {
            Ok(EventsSource::Path(_)) => Some(Cause::Transcript),
            _ => None,
        },
        _ => None,
    }
}

/// `error` of `request` as a verdict when the agent can cause it (see the
/// module's documentation), else `error` itself. `skill` loads the
/// request's skill, which must load for the finish to be counted: a skill
/// that does not is the user's failure, reported instead. The wait for the
/// session's lock ends by `deadline`, the end of the check's time.
pub(crate) fn or_error(
    request: &CheckRequest,
    deadline: Option<Instant>,
    error: Error,
    skill: impl FnOnce() -> Result<std::sync::Arc<Skill>, Error>,
) -> Result<Verdict, Error> {
    let Some(cause) = cause(&error, request) else {
        return Err(error);
    };
    let skill = skill()?;
    let root = root_guess(&request.workspace);
    let state = state_root(request, &root)?;
    let problem = error.to_string();
    tracing::warn!(
        "{}: the finish could not be judged ({problem}); counted as a rejection",
        request.session
    );
    unjudged_verdict(
        Standing::from(&*skill),
        &StateStore::new(state),
        request,
        deadline,
        &format!("unjudged@{}", root.display()),
        &problem,
        followup(cause, &problem),
    )
}

/// The state directory of `request`, whose work tree's root is (or would
/// be) `root`: the request's own, else the user's default; made private.
fn state_root(request: &CheckRequest, root: &Path) -> Result<PathBuf, Error> {
    let state = match &request.state_dir {
        Some(dir) => dir.clone(),
        None => default_root(root).ok_or_else(|| {
            Error::Usage(
                "no place for the critic's state: set XDG_STATE_HOME or HOME, or pass --state-dir"
                    .into(),
            )
        })?,
    };
    crate::sys::private_dir::ensure(&state)
        .map_err(|e| Error::Usage(format!("state directory {e}")))?;
    Ok(state)
}

/// What the agent is told.
fn followup(cause: Cause, problem: &str) -> String {
    match cause {
        Cause::Workspace => format!(
            "The critic could not read your changes, so your work was not checked: {problem}\n\n\
             Put the repository back in working order without rewriting its history: \
             `git status` and `git diff HEAD` must succeed in the work tree, `.git/config` must \
             parse, and HEAD must name an existing commit. Then finish again."
        ),
        Cause::Transcript => format!(
            "The critic could not read this session's transcript, so your work was not \
             checked: {problem}\n\n\
             The transcript is the agent program's own record of the session: do not edit, \
             move or delete it. Finish again; if this persists, tell the user."
        ),
    }
}

/// The work tree's root as the check would have found it: the nearest
/// directory holding `.git`, else `dir` itself; canonical where it exists.
/// The state of the session's earlier finishes is kept there.
fn root_guess(dir: &Path) -> PathBuf {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map_or(dir.clone(), Path::to_path_buf)
}

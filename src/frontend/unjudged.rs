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
//!
//! So is a finish whose session state something replaced (a link, a FIFO,
//! a hard link where the critic keeps its files: see
//! [`crate::evaluate::state`]), once it is set aside.
//!
//! Two more finishes a hook cannot judge are counted the same way, since
//! letting the agent stop on them would hand it a way to stop unchecked:
//! one whose session another check still holds ([`locked`]), and one whose
//! critic keeps its files within the agent's reach ([`misplaced`]).

use crate::evaluate::error::Error;
use crate::evaluate::request::{CheckRequest, EventsSource};
use crate::evaluate::scorer::{unjudged_verdict, Standing, Unjudged};
use crate::evaluate::state::{self, default_root, StateError, StateStore};
use crate::evaluate::verdict::Verdict;
use crate::skill::Skill;
use crate::sys::real_path::within;
use crate::workspace::PatchError;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Which of the agent's inputs a failure is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    /// The work tree or its git state.
    Workspace,
    /// The transcript (events) the agent's program keeps.
    Transcript,
    /// The critic's own state, which something replaced.
    State,
}

impl Cause {
    /// The cause as a verdict's `metadata.cause` names it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Cause::Workspace => "workspace",
            Cause::Transcript => "transcript",
            Cause::State => "state",
        }
    }
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
        // git missing, or the host's own files: nothing of the agent's.
        Error::Patch(PatchError::Git(git)) if git.host => None,
        Error::Patch(_) => Some(Cause::Workspace),
        // Events sent in the request body are the client's own.
        Error::Events(_) => match request.events_source() {
            Ok(EventsSource::Path(_)) => Some(Cause::Transcript),
            _ => None,
        },
        // The state lies outside the workspace, but within reach of an
        // agent running as the user; what was found there is set aside.
        Error::State(StateError::Tampered { .. }) => Some(Cause::State),
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
    let root = crate::workspace::nearest_root(&request.workspace);
    let state = state_root(request, &root)?;
    let problem = error.to_string();
    tracing::warn!(
        "{}: the finish could not be judged ({problem}); counted as a rejection",
        request.session
    );
    let standing = Standing::from(&*skill);
    let counted = unjudged_verdict(
        standing,
        &StateStore::new(state),
        request,
        deadline,
        &format!("unjudged@{}", root.display()),
        Unjudged {
            cause: cause.name(),
            problem: &problem,
            followup: followup(cause, &problem),
        },
    );
    match counted {
        // State the agent keeps replacing (or made unusable) cannot hold
        // the count: the finish is still no free stop.
        Err(Error::State(again @ StateError::Tampered { .. })) => {
            let problem = format!("{problem}; then {again}");
            tracing::warn!("{}: {problem}; rejected, uncounted", request.session);
            Ok(uncounted(
                standing,
                request,
                &problem,
                followup(Cause::State, &problem),
            ))
        }
        other => other,
    }
}

/// A rejection of a finish that could not be counted: the session's state
/// could not be opened. Nothing is recorded.
fn uncounted(
    skill: Standing<'_>,
    request: &CheckRequest,
    problem: &str,
    followup: String,
) -> Verdict {
    Verdict {
        accepted: false,
        score: 0.0,
        threshold: skill.threshold,
        message: format!("rejected, uncounted: the finish could not be judged: {problem}"),
        followup: Some(followup),
        iteration: 0,
        max_iterations: request
            .max_rejections
            .map_or(skill.max_iterations, |cap| cap.min(skill.max_iterations)),
        budget_exhausted: false,
        skill: skill.info(),
        session: request.session.clone(),
        signals: Vec::new(),
        warnings: Vec::new(),
        metadata: serde_json::json!({"unjudged": problem, "cause": Cause::State.name()}),
    }
}

/// The state directory of `request`, whose work tree's root is (or would
/// be) `root`: the request's own, else the user's default; made private.
pub(crate) fn state_root(request: &CheckRequest, root: &Path) -> Result<PathBuf, Error> {
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

/// The name a [`misplaced`] finish is counted under: not the skill's, which
/// its manifest within the agent's reach says.
const MISPLACED: &str = "misplaced-critic";

/// The verdict on a finish whose critic keeps its skill or state directory
/// within the agent's reach (`problem` says which, and where): the agent
/// could rewrite the manifest to accept anything, break it to be let stop,
/// or reset its own count, so its work is not judged. Stopping it
/// would let an agent that can move its workspace over the critic's files
/// (its `cwd`) stop unchecked, so the finish is a rejection counted like
/// [`or_error`]'s, under a name of its own and the request's cap only (the
/// manifest's `max_iterations` is the agent's to change), in a state
/// directory outside the work tree at `root` if the request's is not.
pub(crate) fn misplaced(
    request: &CheckRequest,
    deadline: Option<Instant>,
    root: &Path,
    problem: &str,
) -> Result<Verdict, Error> {
    let mut trusted = request.clone();
    if request
        .state_dir
        .as_deref()
        .is_some_and(|dir| within(dir, root))
    {
        trusted.state_dir = None;
    }
    let state = state_root(&trusted, root)?;
    unjudged_verdict(
        Standing {
            name: MISPLACED,
            version: "",
            threshold: 1.0,
            max_iterations: u32::MAX,
        },
        &StateStore::new(state),
        request,
        deadline,
        &format!("{MISPLACED}@{}", root.display()),
        Unjudged {
            cause: "misplaced",
            problem,
            followup: "The finish critic did not check your work: its own files lie inside your workspace, \
         where your edits could change how you are judged, and only the user can move them. \
         Do not edit them. Tell the user in your final answer, then finish again."
                .into(),
        },
    )
}

/// The verdict on a finish whose agent's working directory `cwd` lies in
/// another git repository, `other`, than the project `request` names (see
/// [`crate::frontend::project`]): judging that tree would let an agent that made
/// a clean repository of its own and `cd`'ed into it stop unchecked, so the
/// finish is a rejection that says why, counted like [`or_error`]'s in the
/// project's session.
pub(crate) fn elsewhere(
    request: &CheckRequest,
    deadline: Option<Instant>,
    cwd: &Path,
    other: &Path,
) -> Result<Verdict, Error> {
    let skill = crate::skill::load(&request.skill)?;
    let root = crate::workspace::nearest_root(&request.workspace);
    let state = state_root(request, &root)?;
    let problem = format!(
        "the agent's working directory {} lies in another git repository ({}) than its \
         project, {}",
        cwd.display(),
        other.display(),
        root.display()
    );
    tracing::warn!("{}: {problem}; counted as a rejection", request.session);
    unjudged_verdict(
        Standing::from(&skill),
        &StateStore::new(state),
        request,
        deadline,
        &format!("unjudged@{}", root.display()),
        Unjudged {
            cause: "elsewhere",
            problem: &problem,
            followup: format!(
                "The critic judges your project, {root}, but your shell is in {cwd}, inside \
                 another git repository ({other}), so your work was not checked. Make your \
                 changes in the project itself, not in a repository of your own inside or \
                 beside it: `cd {root}`. Then finish again.",
                root = root.display(),
                cwd = cwd.display(),
                other = other.display()
            ),
        },
    )
}

/// The verdict on a finish whose session another check holds (`error`, the
/// wait for its lock that ran out): a check the server gave up on, still
/// running, say. Stopping here would let an agent whose code keeps checks
/// busy stop unchecked; waiting longer would outlast the agent's patience.
/// So it is a rejection telling the agent to finish again, counted without
/// the lock (see [`state::count_locked_rejection`]) toward the request's
/// `max_rejections`; once the session's rejections reach it, the agent is
/// let stop, unchecked. Without a cap to keep, `error` itself.
pub(crate) fn locked(request: &CheckRequest, error: Error) -> Result<Verdict, Error> {
    let (Some(cap), Error::State(StateError::Locked { lock, .. })) =
        (request.max_rejections, &error)
    else {
        return Err(error);
    };
    let Some(dir) = lock.parent() else {
        return Err(error);
    };
    let skill = crate::skill::load(&request.skill)?;
    let skill = Standing::from(&skill);
    // Read and counted without the lock, which another check holds: hooks
    // racing here may count past the cap by a few, which only ends the
    // loop sooner and never traps the agent.
    let tampered = |e: StateError| {
        let problem = e.to_string();
        Ok(uncounted(
            skill,
            request,
            &problem,
            followup(Cause::State, &problem),
        ))
    };
    let (recorded, locked) = match state::peek(dir) {
        Err(e @ StateError::Tampered { .. }) => return tampered(e),
        other => other?,
    };
    let spent = recorded.session_rejections.saturating_add(locked);
    let problem = "another check of this session was still running";
    let exhausted = spent >= cap;
    if !exhausted {
        match state::count_locked_rejection(dir) {
            Err(e @ StateError::Tampered { .. }) => return tampered(e),
            other => other?,
        }
    }
    tracing::warn!(
        "{}: {problem} ({error}); {}",
        request.session,
        if exhausted {
            "the rejection budget is spent: the agent may stop"
        } else {
            "counted as a rejection"
        }
    );
    Ok(Verdict {
        accepted: exhausted,
        score: 0.0,
        threshold: skill.threshold,
        message: if exhausted {
            format!(
                "accepted UNCHECKED because the rejection budget ran out ({cap} rejections); \
                 {problem}"
            )
        } else {
            format!("rejected: {problem}")
        },
        followup: (!exhausted).then(|| {
            "The critic is still busy with an earlier check of this session, so this finish \
             was not checked. If you left tests or other commands running, end them. Then \
             finish again."
                .to_string()
        }),
        // This finish, which is not counted among the session's iterations.
        iteration: recorded.iteration.saturating_add(1),
        max_iterations: cap,
        budget_exhausted: exhausted,
        skill: skill.info(),
        session: request.session.clone(),
        signals: Vec::new(),
        warnings: Vec::new(),
        metadata: serde_json::json!({
            "unjudged": problem,
            "rejections": spent.saturating_add(u32::from(!exhausted)),
        }),
    })
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
        Cause::State => format!(
            "The critic's own records of this session had been replaced, so your work was not \
             checked: {problem}\n\n\
             The critic's state directory is not yours: do not create, link, move or edit \
             anything in it. Finish again."
        ),
    }
}

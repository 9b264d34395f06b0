//! One check in a process that starts cold and exits after it (`critic
//! check`, a hook): load the skill, the events and the patch, evaluate.
//!
//! The three inputs are independent, so they are prepared in parallel: git
//! computes the patch while the detectors are loaded and the events parsed.
//! The start-up tricks that buy this path its speed live here and only here.

use crate::detector::wasm::Runtime;
use crate::evaluate::error::Error;
use crate::evaluate::request::CheckRequest;
use crate::evaluate::scorer::{load_detectors, wait_within, CountedFinish, SkillCritic};
use crate::evaluate::state::StateStore;
use crate::evaluate::verdict::Verdict;
use crate::evaluate::{instance_key, with_followup, Critic, Finish};
use crate::frontend::inputs::{
    load_events, patch_file_diff, state_root, test_classifier, workspace_root,
};
use crate::skill;
use crate::workspace::{PendingDiff, RawDiff, Workspace};
use std::time::Instant;

/// A check with its inputs loaded: the skill's critic and the finish to judge.
struct Prepared {
    critic: SkillCritic,
    finish: Finish,
    /// The finish, when it was counted while git ran.
    counted: Option<CountedFinish>,
}

impl Prepared {
    /// Judge the finish, as [`crate::evaluate::decide`] does.
    fn decide(&mut self) -> Result<Verdict, Error> {
        let verdict = match self.counted.take() {
            Some(counted) => self.critic.evaluate_counted(&self.finish, counted)?,
            None => self.critic.evaluate(&self.finish)?,
        };
        Ok(with_followup(&self.critic, verdict))
    }
}

/// Run one check, from a cold start, in a process that exits after it. A
/// finish the agent made unreadable (its work tree, its transcript) is a
/// counted rejection, not an error (see [`crate::frontend::unjudged`]). The
/// request's `time_limit` counts from this call.
///
/// The loaded skill, its runtime and the finish are left to the process's
/// exit instead of being torn down here: unmapping the detectors' code and
/// memory cost the check 0.5 ms of its 9 (`benches/loop.py`), and the kernel
/// does it at exit at no cost to the answer. Each call therefore keeps what
/// it loaded; a program that checks many finishes uses
/// [`crate::Service`].
pub fn check(request: &CheckRequest) -> Result<Verdict, Error> {
    let started = Instant::now();
    let deadline = request.deadline(started);
    let mut prepared = match prepare(request, deadline) {
        Ok(prepared) => prepared,
        Err(e) => {
            return crate::frontend::unjudged::or_error(request, deadline, e, || {
                Ok(skill::load(&request.skill)?.into())
            })
        }
    };
    let verdict = prepared.decide();
    std::mem::forget(prepared);
    tracing::debug!(ms = ms(started), "evaluated");
    verdict
}

/// Load the skill, the events and the patch of one check, all at once.
///
/// git is started first, since it takes longest and needs only the
/// workspace; the detectors load while it runs, and the test patterns that
/// classify the patch's files compile meanwhile on the calling thread, which
/// also reads the events and then counts the finish (see
/// [`SkillCritic::count_ahead`]); a check that fails before
/// [`Prepared::decide`] takes the count back, while a `Prepared` dropped
/// undecided leaves it counted. The check's time ends at `deadline`.
fn prepare(request: &CheckRequest, deadline: Option<Instant>) -> Result<Prepared, Error> {
    let started = Instant::now();
    let ((root, patch, critic, events), counted) = std::thread::scope(|s| {
        // The thread only starts git's processes (or, for a patch file,
        // checks the workspace); this thread collects their output later.
        let git = s.spawn(|| -> Result<Git, Error> {
            Ok(match &request.patch {
                Some(file) => {
                    let (ws, diff) = patch_file_diff(request, file)?;
                    Git::Done(ws, diff)
                }
                None => Git::Running(Box::new(Workspace::start_diff(
                    &request.workspace,
                    request.base.as_deref(),
                )?)),
            })
        });
        // The memo lets a manifest skip its schema check: only from a cache
        // directory this user alone can write.
        let memo = request
            .host
            .cache_dir
            .as_ref()
            .filter(|d| crate::sys::private_dir::ensure(d).is_ok())
            .map(|d| d.join("manifests"));
        let skill = skill::load_with_memo(&request.skill, memo.as_deref())?;
        tracing::debug!(ms = ms(started), "manifest loaded and validated");
        // The loader takes the skill; the patterns stay here for the classifier.
        let patterns = skill.manifest.test_patterns.clone();
        let skill_name = skill.manifest.name.clone();
        let manifest_path = skill.manifest_path.clone();
        let loader = s.spawn(move || -> Result<_, Error> {
            let runtime = Runtime::short_lived(request.host.cache_dir.as_deref())
                .map_err(|e| Error::Internal(e.to_string()))?;
            tracing::debug!(ms = ms(started), "engine ready");
            let detectors = load_detectors(&skill, &runtime, request.host.allow_native)?;
            tracing::debug!(ms = ms(started), "detectors loaded");
            Ok((skill, detectors))
        });
        // The finish is counted while git runs: the durable write then waits
        // on the disk beside git instead of after the detectors. Only the
        // plain case is counted ahead, with the work tree and HEAD found the
        // way `Workspace::start_diff` finds them.
        let ahead = (request.patch.is_none() && request.base.is_none())
            .then(|| Workspace::find(&request.workspace))
            .flatten();
        let counted = match &ahead {
            Some(ws) => count_ahead(request, deadline, &skill_name, ws, &ws.head)?,
            None => None,
        };
        let classifier = test_classifier(&patterns, &manifest_path);
        let events = load_events(request);
        tracing::debug!(ms = ms(started), "events loaded");
        // Everything that can fail from here on takes the count back.
        let rest = || {
            let (ws, diff) = match join(git)? {
                Git::Done(ws, diff) => (ws, diff),
                Git::Running(pending) => pending.finish()?,
            };
            tracing::debug!(ms = ms(started), "diff computed");
            let patch = diff.parse(&classifier?)?;
            let (skill, detectors) = join(loader)?;
            let state = StateStore::new(state_root(request, &ws)?);
            let critic = SkillCritic::with_detectors(
                skill.into(),
                detectors.into(),
                state,
                request,
                &request.host,
            )
            .until(deadline);
            let root = workspace_root(&ws)?;
            Ok::<_, Error>((root, patch, critic, events?))
        };
        match rest() {
            Ok(loaded) => Ok((loaded, counted)),
            Err(e) => {
                if let Some(counted) = counted {
                    counted.take_back();
                }
                Err(e)
            }
        }
    })?;
    let finish = Finish {
        events: events.events.into(),
        transcript: events.raw_file,
        patch,
        workspace: root,
        session: request.session.clone(),
    };
    Ok(Prepared {
        critic,
        finish,
        counted,
    })
}

/// Count the finish on `ws` (found by [`Workspace::find`], so its root is
/// canonical, as a finish's is) against `base`, if the session's state is
/// theirs (see [`SkillCritic::count_ahead`]), waiting for the session's
/// lock until `deadline` at most.
fn count_ahead(
    request: &CheckRequest,
    deadline: Option<Instant>,
    skill: &str,
    ws: &Workspace,
    base: &str,
) -> Result<Option<CountedFinish>, Error> {
    SkillCritic::count_ahead(
        &StateStore::new(state_root(request, ws)?),
        skill,
        &request.session,
        &instance_key(base, &ws.root),
        wait_within(request.lock_timeout, deadline),
    )
}

/// What the git thread of [`prepare`] hands back.
enum Git {
    /// git's processes, still running.
    Running(Box<PendingDiff>),
    /// A patch file's diff, its workspace checked.
    Done(Workspace, RawDiff),
}

/// Milliseconds since `t`, for phase timings in the debug log.
fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn join<T>(handle: std::thread::ScopedJoinHandle<'_, Result<T, Error>>) -> Result<T, Error> {
    handle
        .join()
        .map_err(|_| Error::Internal("a worker thread panicked".into()))?
}

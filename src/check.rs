//! One `critic check`: load the skill, the events and the patch, evaluate.
//!
//! The three inputs are independent, so they are prepared in parallel: git
//! computes the patch while the detectors are loaded and the events parsed.

use crate::capabilities::Capability;
use crate::critic::{instance_key, with_followup, Critic, Finish};
use crate::events::{self, EventsFormat};
use crate::harness::{load_detectors, CountedFinish, HarnessOptions, SkillCritic};
use crate::manifest;
use crate::patch::{self, PendingDiff, RawDiff, TestClassifier, Workspace};
use crate::runtime::Runtime;
use crate::state::StateStore;
use crate::verdict::Verdict;
use crate::Error;
use critic_sdk::PatchOrigin;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Session id used when none is given.
pub const DEFAULT_SESSION: &str = "default";

/// Inputs of one check.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// Skill directory.
    pub skill: PathBuf,
    /// The agent's working tree.
    pub workspace: PathBuf,
    /// The agent's event stream.
    pub events: PathBuf,
    /// Force an event format.
    pub events_format: Option<EventsFormat>,
    /// Session id (state is per session).
    pub session: String,
    /// Diff against this revision instead of HEAD.
    pub base: Option<String>,
    /// Use this diff instead of the working tree's (workspace must be at base).
    pub patch_file: Option<PathBuf>,
    /// State directory (default: the user's state directory, keyed by the
    /// workspace; see [`crate::state::default_root`]).
    pub state_dir: Option<PathBuf>,
    /// Compiled-component cache (`None`: no cache).
    pub cache_dir: Option<PathBuf>,
    /// Capabilities to deny.
    pub deny: Vec<Capability>,
    /// Allow native detectors.
    pub allow_native: bool,
    /// Wait this long for a concurrent check on the same session.
    pub lock_timeout: Duration,
    /// Commands the `run` capabilities run at once (`None`: one per core).
    pub jobs: Option<usize>,
    /// Run `run`/`run-matrix` commands unconfined (see [`crate::confine`]).
    pub unconfined_runs: bool,
    /// The model for `llm-complete`.
    pub llm: Option<crate::capabilities::llm::LlmConfig>,
}

/// A check with its inputs loaded: the skill's critic and the finish to judge.
pub struct Prepared {
    /// The skill, its detectors loaded.
    pub critic: SkillCritic,
    /// The events, the patch and the session.
    pub finish: Finish,
    /// The finish, when it was counted while git ran.
    counted: Option<CountedFinish>,
}

impl Prepared {
    /// Judge the finish, as [`crate::critic::decide`] does.
    pub fn decide(&mut self) -> Result<Verdict, Error> {
        let verdict = match self.counted.take() {
            Some(counted) => self.critic.evaluate_counted(&self.finish, counted)?,
            None => self.critic.evaluate(&self.finish)?,
        };
        Ok(with_followup(&self.critic, verdict))
    }
}

/// Run one check.
pub fn run(opts: &CheckOptions) -> Result<Verdict, Error> {
    let started = Instant::now();
    let verdict = prepare(opts)?.decide();
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
/// undecided leaves it counted.
pub fn prepare(opts: &CheckOptions) -> Result<Prepared, Error> {
    let started = Instant::now();
    let ((root, patch, critic, events), counted) = std::thread::scope(|s| {
        // The thread only starts git's processes (or, for a patch file,
        // checks the workspace); this thread collects their output later.
        let git = s.spawn(|| -> Result<Git, Error> {
            Ok(match &opts.patch_file {
                Some(file) => {
                    let ws = Workspace::open(&opts.workspace)?;
                    let base = match &opts.base {
                        Some(rev) => ws.resolve(rev)?,
                        None => ws.head.clone(),
                    };
                    let diff = read_patch_file(file, base)?;
                    Git::Done(ws, diff)
                }
                None => Git::Running(Box::new(Workspace::start_diff(
                    &opts.workspace,
                    opts.base.as_deref(),
                )?)),
            })
        });
        // The memo lets a manifest skip its schema check: only from a cache
        // directory this user alone can write.
        let memo = opts
            .cache_dir
            .as_ref()
            .filter(|d| crate::private_dir::ensure(d).is_ok())
            .map(|d| d.join("manifests"));
        let skill = manifest::load_with_memo(&opts.skill, memo.as_deref())?;
        tracing::debug!(ms = ms(started), "manifest loaded and validated");
        // The loader takes the skill; the patterns stay here for the classifier.
        let patterns = skill.manifest.test_patterns.clone();
        let skill_name = skill.manifest.name.clone();
        let manifest_path = skill.manifest_path.clone();
        let loader = s.spawn(move || -> Result<_, Error> {
            let runtime = Runtime::short_lived(opts.cache_dir.as_deref())
                .map_err(|e| Error::Internal(e.to_string()))?;
            tracing::debug!(ms = ms(started), "engine ready");
            let detectors = load_detectors(&skill, &runtime, opts.allow_native)?;
            tracing::debug!(ms = ms(started), "detectors loaded");
            Ok((skill, detectors))
        });
        // The finish is counted while git runs: the durable write then waits
        // on the disk beside git instead of after the detectors. Only the
        // plain case is counted ahead, with the work tree and HEAD found the
        // way `Workspace::start_diff` finds them.
        let ahead = (opts.patch_file.is_none() && opts.base.is_none())
            .then(|| Workspace::find(&opts.workspace))
            .flatten();
        let counted = match &ahead {
            Some(ws) => count_ahead(opts, &skill_name, ws, &ws.head)?,
            None => None,
        };
        let classifier = TestClassifier::new(&patterns)
            .map_err(|e| Error::Usage(format!("{}: test_patterns: {e}", manifest_path.display())));
        let events = events::load(&opts.events, opts.events_format);
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
            let options = HarnessOptions {
                deny: opts.deny.clone(),
                allow_native: opts.allow_native,
                lock_timeout: opts.lock_timeout,
                jobs: opts.jobs,
                llm: opts.llm.clone(),
                unconfined_runs: opts.unconfined_runs,
            };
            let state = StateStore::new(state_root(opts, &ws)?);
            let critic = SkillCritic::with_detectors(skill, detectors, state, &options);
            let root = ws
                .root
                .canonicalize()
                .map_err(|source| patch::PatchError::Io {
                    path: ws.root.clone(),
                    source,
                })?;
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
        events: events.into(),
        patch,
        workspace: root,
        session: opts.session.clone(),
    };
    Ok(Prepared {
        critic,
        finish,
        counted,
    })
}

/// Where the state of a check on `ws` lives: `--state-dir`, else the user's
/// state directory keyed by the workspace (outside it, where the agent,
/// confined to its workspace, cannot rewrite the count).
fn state_root(opts: &CheckOptions, ws: &Workspace) -> Result<PathBuf, Error> {
    let root = match &opts.state_dir {
        Some(dir) => dir.clone(),
        None => crate::state::default_root(&ws.root).ok_or_else(|| {
            Error::Usage(
                "no place for the critic's state: set XDG_STATE_HOME or HOME, or pass --state-dir"
                    .into(),
            )
        })?,
    };
    crate::private_dir::ensure(&root).map_err(|e| Error::Usage(format!("state directory {e}")))?;
    Ok(root)
}

/// Count the finish on `ws` (found by [`Workspace::find`], so its root is
/// canonical, as a finish's is) against `base`, if the session's state is
/// theirs (see [`SkillCritic::count_ahead`]).
fn count_ahead(
    opts: &CheckOptions,
    skill: &str,
    ws: &Workspace,
    base: &str,
) -> Result<Option<CountedFinish>, Error> {
    SkillCritic::count_ahead(
        &StateStore::new(state_root(opts, ws)?),
        skill,
        &opts.session,
        &instance_key(base, &ws.root),
        opts.lock_timeout,
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

fn read_patch_file(path: &Path, base: String) -> Result<RawDiff, Error> {
    let raw = std::fs::read_to_string(path).map_err(|source| patch::PatchError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(RawDiff {
        base,
        raw,
        origin: PatchOrigin::File,
        source_name: path.display().to_string(),
    })
}

//! Skill mode: runs a skill's signals on a finish and scores them.
//!
//! Hard gates run in manifest order and the first one that fires ends the
//! evaluation (score 0, later signals are not run). Otherwise the score is
//! `1 - fired soft weight / total soft weight`, and the finish is accepted iff
//! `score >= threshold`. Rejections are counted per session; once the skill's
//! `max_iterations` rejections are spent, the next finish is accepted with
//! `budget_exhausted`, so the agent loop always ends.
//!
//! A request's `time_limit` bounds the whole evaluation: each signal's
//! deadline is its own `timeout` or the end of the check's time, whichever
//! comes first, and a signal still running at the end of the check's time
//! has failed (`on_error` decides), whatever it was about to return.

mod budget;
mod compose;

use budget::spend_rejection;
pub(crate) use budget::wait_within;
use compose::{message, redacted, score, skipped};
pub(crate) use compose::{unjudged_verdict, Standing, Unjudged};

use crate::detector::feed::EventFeed;
use crate::detector::wasm::{CallContext, CallLimits, DetectorError, Runtime};
use crate::detector::Detector;
use crate::evaluate::critic::{Critic, Finish, GENERIC_FOLLOWUP};
use crate::evaluate::error::Error;
use crate::evaluate::redact;
use crate::evaluate::request::{CheckRequest, HostSettings};
use crate::evaluate::state::{Session, StateStore};
use crate::evaluate::verdict::{SignalResult, SignalStatus, Verdict};
use crate::host::artifacts;
use crate::host::llm::{LlmClient, LlmConfig};
use crate::host::run::Runner;
use crate::host::{self, log::LogLine, Capability, Grants};
use crate::skill::{OnError, Signal, SignalKind, Skill};
use critic_sdk::{DetectorOutput, SkillInfo, API_VERSION};
use serde::Serialize;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A skill with its detectors loaded, ready to evaluate finishes.
pub struct SkillCritic {
    skill: Arc<Skill>,
    detectors: Arc<[Detector]>,
    grants: Grants,
    state: StateStore,
    lock_timeout: Duration,
    jobs: Option<usize>,
    llm: Option<LlmConfig>,
    unconfined_runs: bool,
    /// The request's `max_rejections`, which may lower the skill's budget.
    max_rejections: Option<u32>,
    /// The request's `time_limit`, counted from each evaluation's start
    /// unless [`SkillCritic::until`] fixed the end.
    time_limit: Option<Duration>,
    /// When the check's time is up, if a front-end started counting before
    /// the evaluation (see [`SkillCritic::until`]).
    deadline: Option<Instant>,
}

/// The part of a detector's input shared by all signals, serialized once.
/// WebAssembly detectors fetch events through a host function instead
/// (`events: None`); native ones, which cannot call the host, get them inline.
#[derive(Serialize)]
struct SharedInput<'a> {
    api_version: &'a str,
    skill: &'a SkillInfo,
    iteration: u32,
    session: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    events: Option<&'a [critic_sdk::Event]>,
    patch: &'a critic_sdk::Patch,
}

#[derive(Serialize)]
struct SignalInput<'a> {
    signal: &'a str,
    config: &'a Value,
    state: &'a Value,
}

impl SkillCritic {
    /// Load every detector of `skill`; errors name the signal and file. Of
    /// `request`, the critic uses what applies to every finish it judges:
    /// the denied capabilities, the lock timeout and the host's settings.
    pub fn new(
        skill: Skill,
        runtime: &Runtime,
        state: StateStore,
        request: &CheckRequest,
    ) -> Result<SkillCritic, Error> {
        let detectors = load_detectors(&skill, runtime, request.host.allow_native)?;
        Ok(SkillCritic::with_detectors(
            Arc::new(skill),
            detectors.into(),
            state,
            request,
            &request.host,
        ))
    }

    /// A critic from detectors already loaded with [`load_detectors`] (which
    /// lets a caller load them while it prepares other inputs, or share them
    /// between the critics of many requests), under the host settings
    /// `host` (a server's own, whatever the request's).
    pub(crate) fn with_detectors(
        skill: Arc<Skill>,
        detectors: Arc<[Detector]>,
        state: StateStore,
        request: &CheckRequest,
        host: &HostSettings,
    ) -> SkillCritic {
        let grants = Grants::new(&skill.manifest.capabilities, &request.deny);
        SkillCritic {
            skill,
            detectors,
            grants,
            state,
            lock_timeout: request.lock_timeout,
            jobs: host.jobs,
            llm: host.llm.clone(),
            unconfined_runs: host.unconfined_runs,
            max_rejections: request.max_rejections,
            time_limit: request.time_limit,
            deadline: None,
        }
    }

    /// The critic with its check's time ending at `deadline` (the request's
    /// `time_limit` after the check started, work before the evaluation
    /// included), instead of `time_limit` after the evaluation starts.
    pub(crate) fn until(mut self, deadline: Option<Instant>) -> SkillCritic {
        self.deadline = deadline;
        self
    }

    /// When the check's time is up, for an evaluation that started at
    /// `start`.
    fn deadline(&self, start: Instant) -> Option<Instant> {
        self.deadline
            .or_else(|| self.time_limit.map(|limit| start + limit))
    }

    /// How many rejections a session may have: the skill's
    /// `max_iterations` (per round), or the request's `max_rejections` (for
    /// the whole session) if lower.
    pub fn rejection_budget(&self) -> u32 {
        let skill = self.skill.manifest.max_iterations;
        self.max_rejections.map_or(skill, |cap| cap.min(skill))
    }

    /// The loaded skill.
    pub fn skill(&self) -> &Skill {
        &self.skill
    }

    fn info(&self) -> SkillInfo {
        SkillInfo {
            name: self.skill.manifest.name.clone(),
            version: self.skill.manifest.version.clone(),
        }
    }

    /// [`SkillCritic::config_problems`] of the skill in `dir`, loaded on
    /// `runtime` (native detectors only with `allow_native`).
    pub fn config_problems_of(
        dir: &std::path::Path,
        runtime: &Runtime,
        allow_native: bool,
    ) -> Result<Vec<(String, String)>, Error> {
        let skill = crate::skill::load(dir)?;
        let state = tempfile::tempdir()
            .map_err(|e| Error::Internal(format!("cannot make a directory: {e}")))?;
        let mut request = CheckRequest::new(dir, state.path());
        request.host.allow_native = allow_native;
        SkillCritic::new(skill, runtime, StateStore::new(state.path()), &request)?.config_problems()
    }

    /// Every signal's configuration as its detector reads it: each detector
    /// is called once on an empty finish with every capability denied (so
    /// nothing runs, reads or calls a model), and an error it reports about
    /// its `config` is returned as `(signal, message)`. The SDKs' config
    /// readers word those errors `invalid config ...` (`config_as`) or
    /// `config.<key>: ...` (`arms::config`); a detector that reads its
    /// config only on some finishes is checked only as far as an empty one
    /// gets.
    pub fn config_problems(&self) -> Result<Vec<(String, String)>, Error> {
        let workspace = tempfile::tempdir()
            .map_err(|e| Error::Internal(format!("cannot make a directory: {e}")))?;
        let finish = Finish {
            events: Arc::from(Vec::new()),
            patch: critic_sdk::Patch::default(),
            workspace: workspace.path().to_path_buf(),
            session: "config-check".into(),
            transcript: None,
        };
        let states = vec![Value::Null; self.detectors.len()];
        let inputs = self.inputs(&states, &finish, &self.info(), 1)?;
        let m = &self.skill.manifest;
        let mut problems = Vec::new();
        for (i, (signal, detector)) in m.signals.iter().zip(self.detectors.iter()).enumerate() {
            let ctx = CallContext {
                skill: m.name.clone(),
                signal: signal.name.clone(),
                grants: Grants::new(&[], &[]),
                workspace: finish.workspace.clone(),
                events: Arc::new(EventFeed::with_transcript(finish.events.clone(), None)),
                logs: Default::default(),
                runner: Arc::new(Runner::new(
                    finish.workspace.clone(),
                    String::new(),
                    Some(1),
                    true,
                )),
                llm: Arc::new(LlmClient::new(None)),
                deadline: Instant::now() + signal.timeout,
            };
            if let Err(DetectorError::Reported(message)) =
                detector.call(&inputs[i], &self.limits(signal), &ctx)
            {
                let config = message.starts_with("invalid config")
                    || message.starts_with("config.")
                    || message.starts_with("config:");
                if config {
                    problems.push((signal.name.clone(), message));
                }
            }
        }
        Ok(problems)
    }

    /// Whether signals may run ahead of the gates before them, all at once:
    /// only when every detector is a sandboxed component and the skill holds
    /// no capability with effects outside the call. The harness still walks
    /// the results in manifest order, so a signal after a fired gate is
    /// reported skipped and its state, output and log lines are discarded:
    /// the verdict is the one a sequential run gives, only sooner.
    fn speculative(&self) -> bool {
        self.detectors.len() > 1
            && !self.detectors.iter().any(Detector::is_native)
            && self.grants.effective().iter().all(|c| c.is_pure())
    }

    /// Each signal's input JSON: the shared part (encoded once) with the
    /// signal's name, config and state spliced in before its closing brace.
    fn inputs(
        &self,
        states: &[Value],
        finish: &Finish,
        info: &SkillInfo,
        iteration: u32,
    ) -> Result<Vec<String>, Error> {
        let m = &self.skill.manifest;
        let shared = |events| {
            serde_json::to_string(&SharedInput {
                api_version: API_VERSION,
                skill: info,
                iteration,
                session: &finish.session,
                events,
                patch: &finish.patch,
            })
            .map_err(|e| Error::Internal(format!("cannot encode detector input: {e}")))
        };
        let wasm_shared = shared(None)?;
        let native_shared = if self.detectors.iter().any(Detector::is_native) {
            shared(Some(&finish.events))?
        } else {
            String::new()
        };
        let mut inputs = Vec::with_capacity(m.signals.len());
        for ((signal, detector), state) in m.signals.iter().zip(self.detectors.iter()).zip(states) {
            let tail = serde_json::to_string(&SignalInput {
                signal: &signal.name,
                config: &signal.config,
                state,
            })
            .map_err(|e| Error::Internal(format!("cannot encode detector input: {e}")))?;
            let shared = if detector.is_native() {
                &native_shared
            } else {
                &wasm_shared
            };
            inputs.push(format!("{},{}", &shared[..shared.len() - 1], &tail[1..]));
        }
        Ok(inputs)
    }

    /// Call the detectors (all at once when [`SkillCritic::speculative`]) and
    /// walk their outcomes in manifest order, writing the artifacts of the
    /// calls that count. `beside`, if any, runs meanwhile: on this thread
    /// while speculative calls run on their own, else on a thread of its own.
    fn run_signals<U: Send>(
        &self,
        finish: &Finish,
        inputs: &[String],
        deadline: Option<Instant>,
        beside: Option<impl FnOnce() -> U + Send>,
    ) -> (Ran, Option<U>) {
        let m = &self.skill.manifest;
        let feed = Arc::new(EventFeed::with_transcript(
            finish.events.clone(),
            finish.transcript.clone(),
        ));
        let runner = Arc::new(Runner::new(
            finish.workspace.clone(),
            finish.patch.base.clone(),
            self.jobs,
            !self.unconfined_runs,
        ));
        let llm = Arc::new(LlmClient::new(self.llm.clone()));
        let call = |i: usize| -> Call {
            let (signal, detector) = (&m.signals[i], &self.detectors[i]);
            let own = Instant::now() + signal.timeout;
            // The check's end bounds the call: its clock, its epoch limit
            // and whatever it waits for in the host.
            let (call_deadline, check_ends_it) = match deadline {
                Some(end) if end < own => (end, true),
                _ => (own, false),
            };
            let ctx = CallContext {
                skill: m.name.clone(),
                signal: signal.name.clone(),
                grants: self.grants.clone(),
                workspace: finish.workspace.clone(),
                events: feed.clone(),
                logs: Default::default(),
                runner: runner.clone(),
                llm: llm.clone(),
                deadline: call_deadline,
            };
            let call_started = Instant::now();
            let mut limits = self.limits(signal);
            if check_ends_it {
                limits.timeout = call_deadline.saturating_duration_since(call_started);
            }
            let outcome = detector
                .call(&inputs[i], &limits, &ctx)
                .and_then(|(json, _report)| {
                    serde_json::from_str::<DetectorOutput>(&json)
                        .map_err(|e| DetectorError::BadOutput(e.to_string()))
                });
            // A call the check's end stopped failed, even if it went on to
            // answer: a run or a model call cut short at the deadline hands
            // the detector a result that says nothing of the code.
            let out_of_time = check_ends_it
                && (matches!(outcome, Err(DetectorError::Timeout(_)))
                    || Instant::now() >= call_deadline);
            let outcome = if out_of_time {
                Err(DetectorError::OutOfTime(
                    self.time_limit.unwrap_or_default(),
                ))
            } else {
                outcome
            };
            Call {
                outcome: Some(outcome),
                duration_ms: call_started.elapsed().as_secs_f64() * 1000.0,
                logs: ctx.take_logs(),
            }
        };
        // Speculative calls get one thread per signal: the calls are short,
        // and a skill has few.
        let n = m.signals.len();
        match (self.speculative(), beside) {
            (true, Some(beside)) => {
                let (calls, beside) = crate::sys::parallel::map_beside(n, n, call, beside);
                (self.walk(finish, calls, call), Some(beside))
            }
            (true, None) => {
                let calls = crate::sys::parallel::map(n, n, call);
                (self.walk(finish, calls, call), None)
            }
            (false, Some(beside)) => std::thread::scope(|s| {
                let beside = s.spawn(beside);
                let ran = self.walk(finish, Vec::new(), call);
                let beside = beside
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (ran, Some(beside))
            }),
            (false, None) => (self.walk(finish, Vec::new(), call), None),
        }
    }

    /// The signals' outcomes in manifest order: `calls` holds those made
    /// already, `call` makes the rest as they are reached; a fired hard
    /// gate ends the walk.
    fn walk(&self, finish: &Finish, mut calls: Vec<Call>, call: impl Fn(usize) -> Call) -> Ran {
        let m = &self.skill.manifest;
        let mut results = Vec::with_capacity(m.signals.len());
        let mut new_states = Vec::new();
        let mut redactions = Vec::new();
        let mut gate_fired = false;
        for (i, (signal, detector)) in m.signals.iter().zip(self.detectors.iter()).enumerate() {
            if gate_fired {
                results.push(skipped(signal));
                continue;
            }
            let done = match calls.get_mut(i) {
                Some(done) => std::mem::take(done),
                None => call(i),
            };
            for line in &done.logs {
                host::log::emit(&m.name, &signal.name, line.level, &line.message);
            }
            let duration_ms = done.duration_ms;
            let outcome = done
                .outcome
                .unwrap_or_else(|| Err(DetectorError::Reported("the detector was not run".into())));
            // What the agent gets loses its secrets: a detector quotes what
            // runs printed, and a run may have printed a key.
            let mut hidden = 0;
            // Only a call that counts gets its files written.
            let outcome = outcome.and_then(|mut out| {
                for a in &mut out.artifacts {
                    a.content = redacted(std::mem::take(&mut a.content), &mut hidden);
                }
                artifacts::write(&finish.workspace, &m.name, &signal.name, &out.artifacts)
                    .map(|paths| (out, paths))
                    .map_err(|e| DetectorError::BadOutput(e.to_string()))
            });
            let result = match outcome {
                Ok((out, artifacts)) => {
                    if let Some(s) = out.state {
                        new_states.push((signal.name.clone(), s));
                    }
                    SignalResult {
                        artifacts,
                        followup_text: out
                            .followup_text
                            .filter(|_| out.triggered)
                            .map(|text| redacted(text, &mut hidden)),
                        metadata: out.metadata,
                        duration_ms,
                        compile_cache: detector.cache_outcome(),
                        ..SignalResult::new(
                            &signal.name,
                            signal.kind,
                            signal.weight,
                            if out.triggered {
                                SignalStatus::Triggered
                            } else {
                                SignalStatus::Passed
                            },
                        )
                    }
                }
                Err(e) => {
                    let error = format!("signal {:?} ({}): {e}", signal.name, signal.detector);
                    tracing::warn!("{}", crate::sys::terminal_text::one_line(&error));
                    // Out of the check's time while running the agent's code,
                    // the code may be what was slow: a pass then would let
                    // slow code through, whatever `on_error` says.
                    let slow_code = matches!(e, DetectorError::OutOfTime(_)) && self.runs_code();
                    let triggered = signal.on_error == OnError::FailClosed || slow_code;
                    let followup = || match &e {
                        DetectorError::OutOfTime(_) => {
                            out_of_time_followup(&signal.name, self.runs_code())
                        }
                        _ => error_followup(&signal.name, &e.for_agent()),
                    };
                    SignalResult {
                        triggered,
                        followup_text: triggered.then(|| redacted(followup(), &mut hidden)),
                        error: Some(error),
                        duration_ms,
                        compile_cache: detector.cache_outcome(),
                        ..SignalResult::new(
                            &signal.name,
                            signal.kind,
                            signal.weight,
                            SignalStatus::Error,
                        )
                    }
                }
            };
            if hidden > 0 {
                redactions.push(format!(
                    "signal {:?}: {hidden} key-shaped strings replaced with [REDACTED] markers \
                     in what the agent gets (follow-up text, feedback files)",
                    signal.name
                ));
            }
            gate_fired = result.triggered && signal.kind == SignalKind::HardGate;
            results.push(result);
        }

        Ran {
            results,
            new_states,
            gate_fired,
            redactions,
        }
    }

    /// Whether the skill may run commands on the agent's code.
    fn runs_code(&self) -> bool {
        self.grants
            .effective()
            .iter()
            .any(|c| matches!(c, Capability::Run | Capability::RunMatrix))
    }

    fn limits(&self, signal: &Signal) -> CallLimits {
        let l = self.skill.manifest.limits;
        CallLimits {
            timeout: signal.timeout,
            memory_bytes: signal.memory_bytes,
            output_bytes: l.output_bytes,
            stdio_bytes: l.stdio_bytes,
        }
    }
}

/// One detector call's outcome, kept until the harness walks the signals in
/// manifest order. `outcome` is `None` only after it was taken.
#[derive(Default)]
struct Call {
    outcome: Option<Result<DetectorOutput, DetectorError>>,
    duration_ms: f64,
    logs: Vec<LogLine>,
}

/// What running a finish's signals gave, in manifest order.
struct Ran {
    results: Vec<SignalResult>,
    /// States the detectors returned, by signal.
    new_states: Vec<(String, Value)>,
    /// Whether a hard gate fired (later signals are skipped).
    gate_fired: bool,
    /// A warning for each signal whose texts for the agent had secrets
    /// replaced.
    redactions: Vec<String>,
}

/// Load the detector of every signal of `skill`; results in manifest order,
/// errors naming the signal and its line.
///
/// A component in the compile cache loads in a fraction of a millisecond, so
/// the calling thread takes all of those, leaving the other cores to whatever
/// runs beside (git, in a check): one thread each made warm loads slower.
/// Only compiling, hundreds of milliseconds per component, gets a thread per
/// detector.
pub(crate) fn load_detectors(
    skill: &Skill,
    runtime: &Runtime,
    allow_native: bool,
) -> Result<Vec<Detector>, Error> {
    let signals = &skill.manifest.signals;
    let path = |i: usize| &signals[i].detector_path;
    let mut loaded: Vec<Option<Result<Detector, DetectorError>>> = (0..signals.len())
        .map(|i| Detector::load_cached(runtime, path(i), allow_native).transpose())
        .collect();
    let misses: Vec<usize> = (0..signals.len())
        .filter(|&i| loaded[i].is_none())
        .collect();
    let compiled = crate::sys::parallel::map(misses.len(), misses.len(), |j| {
        Detector::load(runtime, path(misses[j]), allow_native)
    });
    for (i, detector) in misses.into_iter().zip(compiled) {
        loaded[i] = Some(detector);
    }
    loaded
        .into_iter()
        .zip(signals)
        .map(|(detector, s)| {
            detector
                .expect("every signal was loaded from the cache or compiled")
                .map_err(|source| Error::Detector {
                    manifest: skill.manifest_path.clone(),
                    line: s.position.line,
                    signal: s.name.clone(),
                    source,
                })
        })
        .collect()
}

/// Error text shown to the agent when a fail-closed signal could not run.
fn error_followup(signal: &str, error: &str) -> String {
    format!(
        "The critic's check `{signal}` could not run ({error}), and this skill treats that as a \
         failure. If your work is complete, finish again; if the problem persists, tell the user."
    )
}

/// The follow-up of a signal the check's time limit stopped: what ran out
/// and, when the skill runs the agent's code, the likely cause. No figure:
/// what was left of the limit when the check started says nothing useful.
fn out_of_time_followup(signal: &str, runs_code: bool) -> String {
    if runs_code {
        format!(
            "The critic's check `{signal}` ran out of time: it runs your code (tests, builds) \
             within the check's time limit. Make your code and its tests finish quickly, with \
             nothing left waiting or hanging, then finish again."
        )
    } else {
        format!(
            "The critic's check `{signal}` ran out of time (the check has a time limit). \
             Finish again; if this persists, tell the user."
        )
    }
}

/// A finish counted before its evaluation: its session is locked and the
/// new iteration is on disk. See [`SkillCritic::count_ahead`].
#[derive(Debug)]
pub(crate) struct CountedFinish(Session);

impl CountedFinish {
    /// Take the count back, for a check that failed before its evaluation.
    pub(crate) fn undo(mut self) -> Result<(), Error> {
        self.0.harness.iteration = self.0.harness.iteration.saturating_sub(1);
        Ok(self.0.save_harness()?)
    }

    /// [`CountedFinish::undo`] on the way out of a failed check, whose own
    /// error is the one to report: a failure to undo is only logged.
    pub(crate) fn take_back(self) {
        if let Err(e) = self.undo() {
            tracing::warn!("cannot take back the count of a failed check: {e}");
        }
    }
}

impl Critic for SkillCritic {
    fn evaluate(&self, finish: &Finish) -> Result<Verdict, Error> {
        let m = &self.skill.manifest;
        let deadline = self.deadline(Instant::now());
        let session = self.state.open(
            &m.name,
            &finish.session,
            &finish.instance_key(),
            wait_within(self.lock_timeout, deadline),
        )?;
        self.evaluate_in(session, false, finish, deadline)
    }
}

impl SkillCritic {
    /// Count a finish of `skill` in `session` on `instance` (see
    /// [`Finish::instance_key`]) before its events, patch and detectors are
    /// ready, so the durable write overlaps what the caller waits for (git's
    /// processes, in `critic check`); [`SkillCritic::evaluate_counted`]
    /// evaluates it. `None` when the session's state belongs to another
    /// instance: the count then waits for the evaluation, which resets it.
    pub(crate) fn count_ahead(
        state: &StateStore,
        skill: &str,
        session: &str,
        instance: &str,
        lock_timeout: Duration,
    ) -> Result<Option<CountedFinish>, Error> {
        let Some(mut session) = state.open_same_instance(skill, session, instance, lock_timeout)?
        else {
            return Ok(None);
        };
        session.harness.iteration = session.harness.iteration.saturating_add(1);
        session.save_harness()?;
        Ok(Some(CountedFinish(session)))
    }

    /// [`Critic::evaluate`] for a finish counted by
    /// [`SkillCritic::count_ahead`]. A count made for another skill, session,
    /// state directory or instance than the finish's is taken back and the
    /// finish evaluated as `evaluate` would.
    pub(crate) fn evaluate_counted(
        &self,
        finish: &Finish,
        counted: CountedFinish,
    ) -> Result<Verdict, Error> {
        let m = &self.skill.manifest;
        let session = &counted.0;
        if session.dir() == self.state.session_dir(&m.name, &finish.session)
            && session.instance() == finish.instance_key()
        {
            let deadline = self.deadline(Instant::now());
            return self.evaluate_in(counted.0, true, finish, deadline);
        }
        counted.undo()?;
        self.evaluate(finish)
    }

    /// Evaluate `finish` in its open `session`, counting it unless
    /// `counted`; its signals end by `deadline`.
    fn evaluate_in(
        &self,
        mut session: Session,
        counted: bool,
        finish: &Finish,
        deadline: Option<Instant>,
    ) -> Result<Verdict, Error> {
        let started = Instant::now();
        let m = &self.skill.manifest;
        let info = self.info();
        if !counted {
            session.harness.iteration = session.harness.iteration.saturating_add(1);
        }
        let iteration = session.harness.iteration;
        let inputs = m
            .signals
            .iter()
            .map(|signal| session.signal_state(&signal.name))
            .collect::<Result<Vec<_>, _>>()
            .map_err(Error::from)
            .and_then(|states| self.inputs(&states, finish, &info, iteration));
        let inputs = match inputs {
            Ok(inputs) => inputs,
            // A finish whose detectors could not be given their input is not
            // counted; one counted ahead is taken back.
            Err(e) => {
                if counted {
                    CountedFinish(session).take_back();
                }
                return Err(e);
            }
        };
        // The finish is counted as the detectors run (unless it was already):
        // the write waits on the disk while they use the CPU. A rejection is
        // recorded at the end, once known.
        let count = (!counted).then_some(|| session.save_harness());
        let (ran, recorded) = self.run_signals(finish, &inputs, deadline, count);
        recorded.transpose()?;
        let Ran {
            results,
            new_states,
            gate_fired,
            redactions,
        } = ran;

        let score = score(&results, gate_fired);
        let mut accepted = score >= m.threshold;
        let mut budget_exhausted = false;
        if !accepted {
            let locked = session.locked_rejections();
            if spend_rejection(
                &mut session.harness,
                m.max_iterations,
                self.max_rejections,
                locked,
            ) {
                session.save_harness()?;
            } else {
                accepted = true;
                budget_exhausted = true;
            }
        }
        for (name, state) in new_states {
            session.save_signal(&name, state)?;
        }

        let message = message(
            &results,
            score,
            m.threshold,
            accepted,
            budget_exhausted,
            self.rejection_budget(),
        );
        let followup = (!accepted).then(|| self.compose_followup(&results, !redactions.is_empty()));
        let mut metadata = json!({
            "patch": {
                "base": finish.patch.base,
                "files": finish.patch.files.len(),
                "test_files": finish.patch.test_files().count(),
                "source_files": finish.patch.source_files().count(),
            },
            "events": finish.events.len(),
            "rejections": session.harness.rejections,
            "capabilities": self.grants.effective().iter().map(|c| c.name()).collect::<Vec<_>>(),
        });
        metadata["evaluate_ms"] = json!(started.elapsed().as_secs_f64() * 1000.0);
        Ok(Verdict {
            accepted,
            score,
            threshold: m.threshold,
            message,
            followup,
            iteration,
            max_iterations: self.rejection_budget(),
            budget_exhausted,
            skill: info,
            session: finish.session.clone(),
            signals: results,
            warnings: std::mem::take(&mut session.warnings)
                .into_iter()
                .chain(redactions)
                .collect(),
            metadata,
        })
    }
}

impl SkillCritic {
    /// The default follow-up: the fired signals' texts in manifest order,
    /// framed by the manifest's header and footer; then, if secrets were
    /// replaced in what the agent gets, a note saying so.
    fn compose_followup(&self, results: &[SignalResult], redacted: bool) -> String {
        let style = &self.skill.manifest.followup;
        let sep = style.separator.as_deref().unwrap_or("\n\n");
        let mut parts: Vec<&str> = Vec::new();
        if let Some(h) = &style.header {
            parts.push(h);
        }
        let texts: Vec<&str> = results
            .iter()
            .filter(|r| r.triggered)
            .filter_map(|r| r.followup_text.as_deref())
            .collect();
        if texts.is_empty() {
            parts.push(GENERIC_FOLLOWUP);
        }
        parts.extend(texts);
        if let Some(f) = &style.footer {
            parts.push(f);
        }
        if redacted {
            parts.push(redact::NOTICE);
        }
        parts.join(sep)
    }
}

#[cfg(test)]
mod tests;

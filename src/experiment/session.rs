//! One run: a fresh workspace, the arm's task prompt, then turns of the
//! agent, each ended by the critic's check at its finish, until the skill
//! accepts or a budget ends; then the final patch (with the arm's declared
//! outcome applied) and its grade. Everything the run saw is kept under its
//! directory; its result is returned for the database.

use crate::experiment::adapters::confined::Reach;
use crate::experiment::adapters::{self, Turn, TurnEnd};
use crate::experiment::arm;
use crate::experiment::db::{Round, Run, RunKey, Status};
use crate::experiment::file::{Adapter, Experiment};
use crate::experiment::finish_grading;
use crate::experiment::grade::{Graded, Grader};
use crate::experiment::model_proxy::{self, ModelProxy, Serving, Stop};
use crate::grading::dataset::Instance;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The most bytes of a verdict read from `critic check`.
pub(crate) const MAX_VERDICT_BYTES: usize = 16 << 20;

/// How long the runner waits for one `critic check`: far more than any
/// skill's checks take, so that only a check that hangs reaches it.
const CHECK_TIME_LIMIT: Duration = Duration::from_secs(30 * 60);

/// What every run of an experiment shares.
pub struct Context<'a> {
    /// The experiment.
    pub experiment: &'a Experiment,
    /// The `critic` binary the finish boundary calls.
    pub critic: &'a Path,
    /// Flags every check gets (cache, confinement).
    pub check_flags: &'a [String],
    /// Where workspaces are made.
    pub work_dir: &'a Path,
    /// The output directory, which holds every run's directory.
    pub out: &'a Path,
    /// Whether agents' turns run confined (see [`adapters::confined`]).
    pub confine_agents: bool,
    /// What the experiment has spent, and its cap.
    pub spending: Arc<model_proxy::Spending>,
    /// An earlier output directory whose recordings answer the model calls.
    pub replay: Option<&'a Path>,
    /// Past a replay's departure, go on against the model.
    pub replay_then_live: bool,
}

impl Context<'_> {
    /// The confinement of `job`'s turns (`None`: unconfined), with the
    /// judge at `judge_socket` for a hooked agent and the run's model proxy.
    fn reach(
        &self,
        job: &Job,
        judge_socket: Option<&Path>,
        model: Option<&ModelWay>,
    ) -> Result<Option<Reach>, Failed> {
        if !self.confine_agents {
            return Ok(None);
        }
        // What the agent must not read: every run's files (the gold
        // control's patch among them), the user's clones, the instances
        // with their golden patches, critic's cache (the pre-flights' logs
        // quote the golden tests; its environment is shown again, below).
        let mut covered = vec![
            self.out.to_path_buf(),
            self.experiment.repos.clone(),
            job.repo.clone(),
            self.experiment.instances.clone(),
        ];
        covered.extend(
            crate::sys::private_dir::cache_root()
                .filter(|p| !crate::sandbox::confine::in_private_dir(p)),
        );
        // Where grading's scratch copies are (a gold control's among them),
        // unless the turn gets that place empty and its own anyway.
        let scratch = [
            crate::sandbox::scratch::scratch_root(),
            std::env::temp_dir(),
        ];
        covered.extend(
            scratch
                .into_iter()
                .filter(|p| !crate::sandbox::confine::in_private_dir(p)),
        );
        // The interpreter (its environment lies in critic's cache, or
        // under the output directory) and `critic`, which a Stop hook runs.
        let seen = vec![job.python.clone(), self.critic.to_path_buf()];
        Reach::new(
            &job.dir,
            covered,
            seen,
            model.map(|m| m.proxy.clone()),
            &self.experiment.agent.network,
            judge_socket,
        )
        .map(|r| {
            let limits = &self.experiment.agent.limits;
            Some(r.with_limits(limits.tmp_bytes, limits.memory_bytes))
        })
        .map_err(|e| infra("confinement", e))
    }
}

/// One run to make.
pub struct Job<'a> {
    /// Which.
    pub key: RunKey,
    /// Its instance.
    pub instance: &'a Instance,
    /// Its arm.
    pub arm: &'a arm::Prepared,
    /// Its directory (emptied first).
    pub dir: PathBuf,
    /// The interpreter.
    pub python: PathBuf,
    /// The user's clone it starts from.
    pub repo: PathBuf,
    /// The grader's copy, which holds `base`.
    pub copy: PathBuf,
    /// The commit the run starts from and its patch is taken against (the
    /// instance's base commit, or its environment commit).
    pub base: String,
    /// This attempt's number, 1-based.
    pub attempt: u32,
}

/// A run's failure before it could be graded.
struct Failed {
    status: Status,
    class: &'static str,
    message: String,
}

fn infra(class: &'static str, message: impl Into<String>) -> Failed {
    Failed {
        status: Status::InfraError,
        class,
        message: message.into(),
    }
}

/// How a run's agent reaches its model: the run's proxy (see
/// [`model_proxy`]), listening in each confined turn, or on the host's
/// loopback for the whole run when turns are unconfined.
struct ModelWay {
    proxy: Arc<ModelProxy>,
    /// The path of the model's `base_url`, after the proxy's address.
    base_path: String,
    /// The unconfined run's listener.
    loopback: Option<Serving>,
}

impl ModelWay {
    /// The run's proxy: live against the experiment's model with the real
    /// key, answering from `ctx.replay`'s recording of the same run first.
    fn new(
        ctx: &Context,
        job: &Job,
        workspace: &Path,
        model: &crate::experiment::file::Model,
        hooked: bool,
    ) -> Result<ModelWay, Failed> {
        let exp = ctx.experiment;
        let (origin, base_path) =
            model_proxy::split_base_url(&model.base_url).map_err(|e| infra("model", e))?;
        // Requests name the run's places; another output directory's run
        // names its own, which compare equal.
        let places = |run: &Path, out: &Path| {
            let work = out.join("work");
            let mut paths = Vec::new();
            for (path, name) in [
                (run.to_path_buf(), "$RUN"),
                (
                    work.join(workspace.file_name().unwrap_or_default()),
                    "$WORKSPACE",
                ),
                (work, "$WORK"),
                (out.to_path_buf(), "$OUT"),
            ] {
                let mut spellings = vec![path.to_string_lossy().into_owned()];
                spellings.extend(
                    path.canonicalize()
                        .map(|p| p.to_string_lossy().into_owned()),
                );
                for spelling in spellings {
                    // As Claude Code names a project after it, too.
                    let slug: String = spelling
                        .chars()
                        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                        .collect();
                    paths.push((slug, name));
                    paths.push((spelling, name));
                }
            }
            model_proxy::replay::Normalizer::new(paths)
        };
        let replay = match ctx.replay {
            None => None,
            Some(old) => {
                let old_run = crate::experiment::run_dir(old, &job.key);
                let file = old_run.join(model_proxy::RECORD_FILE);
                if file.is_file() {
                    let exchanges =
                        model_proxy::exchange::read_all(&file).map_err(|e| infra("replay", e))?;
                    Some(model_proxy::replay::Recording::new(
                        exchanges,
                        places(&old_run, old),
                    ))
                } else if ctx.replay_then_live {
                    None
                } else {
                    return Err(Failed {
                        status: Status::ReplayDiverged,
                        class: "replay_diverged",
                        message: format!("{}: no recording of this run to replay", file.display()),
                    });
                }
            }
        };
        let upstream =
            (ctx.replay.is_none() || ctx.replay_then_live).then(|| model_proxy::Upstream {
                origin,
                key: model
                    .api_key_env
                    .as_ref()
                    .and_then(|v| std::env::var(v).ok()),
            });
        let record = job.dir.join(model_proxy::RECORD_FILE);
        put(&record, "").map_err(|e| infra("output", e))?;
        let proxy = ModelProxy::new(model_proxy::Settings {
            upstream,
            replay,
            record,
            price: model.price,
            max_tokens: exp.budget.tokens,
            max_cost: exp.budget.cost,
            spending: ctx.spending.clone(),
            normalizer: places(&job.dir, ctx.out),
            verdict_log: hooked.then(|| adapters::hooked::verdict_log(&job.dir)),
        })
        .map_err(|e| infra("model", format!("a token for the run: {e}")))?;
        let loopback = if ctx.confine_agents {
            None
        } else {
            Some(
                proxy
                    .serve_on_loopback()
                    .map_err(|e| infra("model", format!("the model proxy: {e}")))?,
            )
        };
        Ok(ModelWay {
            proxy,
            base_path,
            loopback,
        })
    }

    /// The base URL the agent is given.
    fn url(&self, reach: Option<&Reach>) -> String {
        match (&self.loopback, reach) {
            (Some(serving), _) => format!("http://{}{}", serving.addr, self.base_path),
            (None, Some(reach)) => reach.model_url(&self.base_path).unwrap_or_default(),
            (None, None) => String::new(),
        }
    }
}

/// The run's turns so far.
#[derive(Default)]
struct Turns {
    rounds: Vec<Round>,
    finishes: u32,
    budget_exhausted: bool,
    last_verdict: Option<Value>,
    /// Why the agent's side ended the run, when it did.
    agent_fail: Option<(&'static str, String)>,
}

/// Make the run; its result and rounds. Grading goes through `grader`;
/// with `finishes`, each finish's judged patch is graded too (golden tests
/// only), for the critic's own accuracy.
pub fn run(
    ctx: &Context,
    job: &Job,
    grader: &Grader,
    finishes: Option<&Grader>,
) -> (Run, Vec<Round>) {
    let started = Instant::now();
    let mut turns = Turns::default();
    // Named by a digest of the key too: `slug(id)__arm__sample` alone could
    // be the same for two keys (an id ending in `__x`, an arm named `x__y`).
    let digest = Sha256::digest(
        format!(
            "{}\0{}\0{}",
            job.key.instance_id, job.key.arm, job.key.sample
        )
        .as_bytes(),
    );
    let workspace = ctx.work_dir.join(format!(
        "{}__{}__{}-{}",
        crate::sys::path_name::slug(&job.key.instance_id),
        job.key.arm,
        job.key.sample,
        hex::encode(&digest[..4])
    ));
    let mut way: Option<ModelWay> = None;
    // Rejected finishes are graded while the agent goes on, in threads
    // joined before the run's own grade.
    let mut early = Vec::new();
    let outcome = std::thread::scope(|scope| {
        let mut started = finishes.map(|g| finish_grading::Started::new(scope, g, ctx.work_dir));
        let outcome = (|| -> Result<(String, Option<String>), Failed> {
            if let Some(link) = link_on_the_way(ctx.out, &job.dir) {
                return Err(infra(
                    "output",
                    format!(
                        "{}: a symbolic link in the output directory; remove it",
                        link.display()
                    ),
                ));
            }
            reset_dir(&job.dir).map_err(|e| infra("output", e))?;
            crate::experiment::workspace_clone::make_workspace(
                &job.repo, &job.copy, &job.base, &workspace,
            )
            .map_err(|e| infra("workspace", e))?;
            crate::sys::interrupt::remember_dir(&workspace);
            let adapter = ctx.experiment.agent.adapter;
            if let Some(model) = &ctx.experiment.model {
                way = Some(ModelWay::new(
                    ctx,
                    job,
                    &workspace,
                    model,
                    adapter != Adapter::Command,
                )?);
            }
            match adapter {
                Adapter::Command => drive(
                    ctx,
                    job,
                    &workspace,
                    way.as_ref(),
                    &mut turns,
                    started.as_mut(),
                )?,
                agent => drive_hooked(ctx, job, &workspace, agent, way.as_ref(), &mut turns)?,
            }
            // What the proxy ended the run for is why it ended, whatever the
            // agent did once refused.
            match way.as_ref().and_then(|w| w.proxy.seen().stop) {
                Some(Stop::Diverged(why)) => {
                    return Err(Failed {
                        status: Status::ReplayDiverged,
                        class: "replay_diverged",
                        message: why,
                    })
                }
                Some(Stop::Budget(why)) => turns.agent_fail = Some(("budget", why)),
                None => {}
            }
            // The agent may have planted links for the runner to write through.
            if let Some(link) = link_on_the_way(ctx.out, &job.dir).or_else(|| link_within(&job.dir))
            {
                return Err(Failed {
                    status: Status::AgentFail,
                    class: "planted_links",
                    message: format!(
                        "{}: a link, FIFO or device where the runner writes the run's files",
                        link.display()
                    ),
                });
            }
            if let Some(over) = ctx
                .experiment
                .agent
                .limits
                .over_disk(&workspace, &job.dir.join("agent"))
            {
                return Err(Failed {
                    status: Status::AgentFail,
                    class: "disk_limit",
                    message: over,
                });
            }
            final_patch(job, &workspace, turns.last_verdict.as_ref())
        })();
        early = started
            .map(finish_grading::Started::join)
            .unwrap_or_default();
        outcome
    });
    if workspace.exists() {
        let _ = crate::sys::remove_tree::remove_tree(&workspace);
    }
    crate::sys::interrupt::forget_dir(&workspace);
    let mut run = Run {
        key: job.key.clone(),
        status: Status::Ok,
        error_class: None,
        error: None,
        resolved: None,
        f2p: None,
        grade_problem: None,
        finishes: turns.finishes,
        rounds: turns.rounds.len() as u32,
        budget_exhausted: turns.budget_exhausted,
        outcome_test: None,
        tokens: None,
        cost: None,
        usage_source: None,
        model_calls: None,
        duration_s: 0.0,
        attempts: job.attempt,
        model_patch: String::new(),
    };
    match outcome {
        Err(f) => {
            // An agent that broke what the run needs did not resolve it.
            if f.status == Status::AgentFail {
                run.resolved = Some(false);
            }
            run.status = f.status;
            run.error_class = Some(f.class.to_string());
            run.error = Some(f.message);
        }
        Ok((patch, outcome_test)) => {
            let _ = put(&job.dir.join("final.patch"), &patch);
            let generation = Generation {
                status: if turns.agent_fail.is_some() {
                    Status::AgentFail
                } else {
                    Status::Ok
                },
                error_class: turns.agent_fail.as_ref().map(|(c, _)| c.to_string()),
                error: turns.agent_fail.take().map(|(_, m)| m),
            };
            let _ = put(
                &job.dir.join(GENERATION_FILE),
                serde_json::to_vec_pretty(&generation).unwrap_or_default(),
            );
            apply_grade(&mut run, &generation, &grader(&patch, &job.dir));
            if let (Some(finishes), Some(resolved)) = (finishes, run.resolved) {
                let rounds = &mut turns.rounds;
                finish_grading::grade_finishes(
                    rounds,
                    (&patch, resolved),
                    &job.dir,
                    finishes,
                    early,
                );
            }
            run.outcome_test = outcome_test;
            run.model_patch = patch;
        }
    }
    match &way {
        // The runner's own count of the model's answers.
        Some(way) => {
            let seen = way.proxy.seen();
            run.tokens = Some(seen.tokens.total());
            run.cost = seen.cost;
            run.model_calls = Some(seen.calls);
            run.usage_source = Some("proxy".into());
        }
        // No proxy in the path: what the agent's transcript says.
        None => {
            (run.tokens, run.cost) = spent(ctx.experiment, &job.dir);
            run.usage_source = run.tokens.map(|_| "transcript".into());
        }
    }
    run.duration_s = started.elapsed().as_secs_f64();
    // Nothing is written through a link the agent planted.
    if run.error_class.as_deref() != Some("planted_links") {
        let _ = put(
            &job.dir.join("run.json"),
            serde_json::to_vec_pretty(&json!({"run": run, "rounds": turns.rounds}))
                .unwrap_or_default(),
        );
    }
    (run, turns.rounds)
}

/// Where a run's transcript may be, under its directory, as the runner
/// kept it (copied from the agent's directory with no link followed).
const TRANSCRIPTS: [&str; 4] = [
    "transcript.jsonl",
    "transcript.json",
    "transcript",
    adapters::openhands::STATE_FILE,
];

/// The most of a `command` agent's transcript the runner copies.
const MAX_TRANSCRIPT_BYTES: u64 = 256 << 20;

/// Tokens and cost of the run so far, from the agent's transcript (the
/// `claude-code`/`codex` adapters keep it as `transcript.jsonl`,
/// `mini-swe-agent` as `transcript.json`; a `command` agent may write one to
/// `transcript`): the cost reported, or
/// priced by the model's `price`.
fn spent(exp: &Experiment, dir: &Path) -> (Option<u64>, Option<f64>) {
    let file = TRANSCRIPTS
        .iter()
        .map(|f| dir.join(f))
        .find(|f| f.is_file());
    let Some(file) = file else {
        return (None, None);
    };
    let u = crate::experiment::usage::of_file(&file);
    let priced = exp
        .model
        .as_ref()
        .and_then(|m| m.price)
        .filter(|_| u.found)
        .map(|p| (u.input as f64 * p.input_per_mtok + u.output as f64 * p.output_per_mtok) / 1e6);
    // A cost of 0 beside tokens used is an agent that could not price its
    // model (mini-swe-agent with an unknown one), not a free run.
    let reported = u
        .cost
        .filter(|c| *c > 0.0 || !u.found || u.input + u.output == 0);
    (u.tokens(), reported.or(priced).or(u.cost))
}

/// Which per-run budget `spent` breaks, if any.
fn over_budget(
    exp: &Experiment,
    spent: (Option<u64>, Option<f64>),
) -> Option<(&'static str, String)> {
    if let (Some(max), Some(t)) = (exp.budget.tokens, spent.0) {
        if t > max {
            return Some((
                "token_budget",
                format!("{t} tokens, over budget.tokens {max}"),
            ));
        }
    }
    if let (Some(max), Some(c)) = (exp.budget.cost, spent.1) {
        if c > max {
            return Some(("cost_budget", format!("${c:.4}, over budget.cost ${max}")));
        }
    }
    None
}

/// The file in a run's directory that keeps how generation ended, so a
/// regrade can tell a run's own status from its grading's.
pub const GENERATION_FILE: &str = "generation.json";

/// How a run's generation (the agent's turns) ended, before grading.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Generation {
    /// `ok` or `agent_fail`.
    pub status: Status,
    /// The agent's failure class.
    pub error_class: Option<String>,
    /// The agent's failure.
    pub error: Option<String>,
}

/// Set `run`'s status and grade from its generation and `graded`: a grade
/// that could not be made is an infrastructure error, whatever the agent did.
pub fn apply_grade(run: &mut Run, generation: &Generation, graded: &Graded) {
    match &graded.infra {
        Some(e) => {
            run.status = Status::InfraError;
            run.error_class = Some("grade".into());
            run.error = Some(e.clone());
            run.resolved = None;
            run.f2p = None;
            run.grade_problem = None;
        }
        None => {
            run.status = generation.status;
            run.error_class = generation.error_class.clone();
            run.error = generation.error.clone();
            run.resolved = graded.resolved;
            run.f2p = graded.f2p;
            run.grade_problem = graded.problem.clone();
        }
    }
}

/// A control run: `control`'s patch for `instance`, graded with no agent.
pub fn control(
    key: &RunKey,
    instance: &Instance,
    control: crate::experiment::Control,
    dir: &Path,
    attempt: u32,
    grader: &Grader,
) -> (Run, Vec<Round>) {
    let started = Instant::now();
    let patch = match control {
        crate::experiment::Control::Gold => instance.patch.clone(),
        crate::experiment::Control::Empty => String::new(),
    };
    let generation = Generation {
        status: Status::Ok,
        error_class: None,
        error: None,
    };
    let mut run = Run {
        key: key.clone(),
        status: Status::Ok,
        error_class: None,
        error: None,
        resolved: None,
        f2p: None,
        grade_problem: None,
        finishes: 0,
        rounds: 0,
        budget_exhausted: false,
        outcome_test: None,
        tokens: None,
        cost: None,
        usage_source: None,
        model_calls: None,
        duration_s: 0.0,
        attempts: attempt,
        model_patch: patch.clone(),
    };
    let written = reset_dir(dir).and_then(|()| {
        for (file, bytes) in [
            ("final.patch", patch.clone().into_bytes()),
            (
                GENERATION_FILE,
                serde_json::to_vec_pretty(&generation).unwrap_or_default(),
            ),
        ] {
            put(&dir.join(file), bytes)?;
        }
        Ok(())
    });
    match written {
        Ok(()) => apply_grade(&mut run, &generation, &grader(&patch, dir)),
        Err(e) => {
            run.status = Status::InfraError;
            run.error_class = Some("output".into());
            run.error = Some(e);
        }
    }
    run.duration_s = started.elapsed().as_secs_f64();
    (run, Vec::new())
}

/// The first symbolic link among the components of `dir` below `root`.
fn link_on_the_way(root: &Path, dir: &Path) -> Option<PathBuf> {
    let rel = dir.strip_prefix(root).ok()?;
    let mut at = root.to_path_buf();
    for part in rel.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return Some(at),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

/// The first thing under `dir` the runner did not make and might write or
/// read through: a symbolic link, a file with other hard links (another
/// file of the user's, linked in), a FIFO, socket or device. The
/// workspace's are the agent's own business and are not looked at: they
/// are never written through.
fn link_within(dir: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((d, depth)) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_symlink() => return Some(path),
                Ok(t) if t.is_file() => {
                    if entry.metadata().is_ok_and(|m| m.nlink() > 1) {
                        return Some(path);
                    }
                }
                // The agent's own directory is its to shape, and so is the
                // critic's state when the agent runs unconfined.
                Ok(t) if t.is_dir() && depth < 4 => {
                    let name = entry.file_name();
                    if !["agent", "state"].iter().any(|n| name == *n) {
                        stack.push((path, depth + 1));
                    }
                }
                Ok(t) if t.is_dir() => {}
                _ => return Some(path),
            }
        }
    }
    None
}

/// Empty `dir` (an earlier attempt's files go).
fn reset_dir(dir: &Path) -> Result<(), String> {
    if dir.exists() {
        crate::sys::remove_tree::remove_tree(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// The turns: prompt, agent, check; until accepted or a budget ends.
fn drive(
    ctx: &Context,
    job: &Job,
    workspace: &Path,
    model: Option<&ModelWay>,
    turns: &mut Turns,
    mut grading: Option<&mut finish_grading::Started>,
) -> Result<(), Failed> {
    let exp = ctx.experiment;
    let session = format!("{}-{}-{}", job.key.arm, job.key.sample, job.attempt);
    let state = job.dir.join("state");
    let agent_dir = job.dir.join("agent");
    let events_file = agent_dir.join("transcript");
    let record = job.dir.join("events.jsonl");
    for d in [agent_dir.join("home"), agent_dir.join("tmp")] {
        std::fs::create_dir_all(&d)
            .map_err(|e| infra("output", format!("{}: {e}", d.display())))?;
    }
    let reach = ctx.reach(job, None, model)?;
    let mut prompt = job
        .arm
        .render(job.instance, workspace)
        .map_err(|e| infra("prompt", e))?;
    let python_dir = job.python.parent().map(Path::to_path_buf);
    let started = Instant::now();
    for round in 1..=exp.budget.turns {
        if let Some(over) = (round > 1)
            .then(|| {
                exp.agent
                    .limits
                    .over_disk(workspace, &job.dir.join("agent"))
            })
            .flatten()
        {
            turns.agent_fail = Some(("disk_limit", over));
            return Ok(());
        }
        // Nothing the last turn planted is written through.
        if let Some(link) = link_within(&job.dir) {
            turns.agent_fail = Some((
                "planted_links",
                format!(
                    "{}: a link, FIFO or device where the runner writes",
                    link.display()
                ),
            ));
            return Ok(());
        }
        let dir = job.dir.join(format!("round-{round}"));
        // The runner made the run's directory empty and wrote its first
        // round there; once the agent has run, what blocks a write there is
        // what the agent put in the way.
        let blocked = |what: String| {
            if round == 1 {
                infra("output", what)
            } else {
                Failed {
                    status: Status::AgentFail,
                    class: "planted_files",
                    message: format!("{what}: the agent put something where the runner writes"),
                }
            }
        };
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(Failed {
                    status: Status::AgentFail,
                    class: "planted_files",
                    message: format!(
                        "{}: already there before the runner made it: the agent put it there",
                        dir.display()
                    ),
                })
            }
            Err(e) => return Err(blocked(format!("{}: {e}", dir.display()))),
        }
        put(&dir.join("prompt.md"), &prompt).map_err(blocked)?;
        // The agent's copy, where it can read it.
        let prompt_file = agent_dir.join("prompt.md");
        put(&prompt_file, &prompt).map_err(|e| Failed {
            status: Status::AgentFail,
            class: "planted_files",
            message: format!("{e}: the agent put something where the runner writes"),
        })?;
        let mut timeout = exp.agent.timeout;
        if let Some(wall) = exp.budget.wall_time {
            let left = wall.saturating_sub(started.elapsed());
            if left.is_zero() {
                turns.agent_fail = Some(("wall_time", format!("the run's {wall:?} ran out")));
                return Ok(());
            }
            timeout = timeout.min(left);
        }
        let mut env: Vec<(String, String)> = exp.agent.env.clone().into_iter().collect();
        env.push(("CRITIC_SEED".into(), exp.seed.to_string()));
        env.push(("CRITIC_SAMPLE".into(), job.key.sample.to_string()));
        env.push(("PYTHONHASHSEED".into(), "0".into()));
        env.push(("TZ".into(), "UTC".into()));
        env.push(("LC_ALL".into(), "C.UTF-8".into()));
        if let (Some(m), Some(way)) = (&exp.model, model) {
            env.push(("CRITIC_MODEL_BASE_URL".into(), way.url(reach.as_ref())));
            env.push(("CRITIC_MODEL_API_KEY".into(), way.proxy.token().to_string()));
            env.push(("CRITIC_MODEL".into(), m.model.clone()));
            way.proxy.set_round(round);
        }
        if reach.is_some() {
            // The user's home is covered; the agent gets its own.
            for (key, sub) in [("HOME", "home"), ("TMPDIR", "tmp")] {
                env.push((
                    key.into(),
                    agent_dir.join(sub).to_string_lossy().into_owned(),
                ));
            }
        }
        let turn = Turn {
            prompt_file: prompt_file.clone(),
            round,
            session: session.clone(),
            workspace: workspace.to_path_buf(),
            events_file: events_file.clone(),
            log_file: dir.join("agent.log"),
            timeout,
            path_prefix: python_dir.iter().cloned().collect(),
            env,
            clean_env: false,
            hidden_env: exp
                .model
                .iter()
                .filter_map(|m| m.api_key_env.clone())
                .collect(),
            confine: reach.clone(),
            stop: model.map(|m| m.proxy.stop_flag()),
        };
        let result = adapters::command::run(&exp.agent.command, &turn);
        let mut row = Round {
            round,
            turn_exit: None,
            turn_s: result.duration.as_secs_f64(),
            verdict: "none".into(),
            budget_exhausted: false,
            followup: None,
            critic_error: None,
            resolved: None,
        };
        match &result.end {
            TurnEnd::NotStarted(why) => {
                turns.rounds.push(row);
                return Err(infra("agent_start", why.clone()));
            }
            TurnEnd::TimedOut => {
                turns.rounds.push(row);
                turns.agent_fail = Some((
                    "turn_timeout",
                    format!("round {round}: the agent ran past {timeout:?} and was killed"),
                ));
                return Ok(());
            }
            TurnEnd::MemoryLimit => {
                turns.rounds.push(row);
                turns.agent_fail = Some(("memory_limit", exp.agent.limits.memory_killed()));
                return Ok(());
            }
            // The proxy's reason is the run's (see [`run`]).
            TurnEnd::Stopped => {
                turns.rounds.push(row);
                return Ok(());
            }
            TurnEnd::Exited(code) => row.turn_exit = *code,
        }
        // Refused before the agent's exit was seen: ended all the same.
        if model.is_some_and(|m| m.proxy.seen().stop.is_some()) {
            turns.rounds.push(row);
            return Ok(());
        }
        append_record(&record, &prompt, &result.output_tail, row.turn_exit).map_err(|e| {
            Failed {
                status: Status::AgentFail,
                class: "planted_files",
                message: format!("{e}: the agent put something where the runner writes"),
            }
        })?;
        // The check reads the runner's copy of the agent's transcript, read
        // with no link followed (the agent could point it at a file of
        // the user's), else the runner's own record.
        let transcript = job.dir.join("transcript");
        let copied = crate::sys::bounded_read::read_regular_file_nofollow(
            &events_file,
            MAX_TRANSCRIPT_BYTES,
        )
        .ok()
        .filter(|b| !b.is_empty())
        .is_some_and(|bytes| put(&transcript, bytes).is_ok());
        let events = if copied { &transcript } else { &record };
        let verdict = check(ctx, job, workspace, events, &session, &state, &dir);
        let verdict = match verdict {
            Ok(v) => v,
            Err(e) => {
                turns.rounds.push(row);
                return Err(e);
            }
        };
        // A detector that failed on the agent's finish is the critic's
        // error on this round; the verdict followed the skill's `on_error`
        // (a skill that fails on a benign finish was refused before any run).
        row.critic_error = detector_error(&verdict);
        turns.finishes += 1;
        if let Some(why) = state_tampered(&verdict) {
            turns.rounds.push(row);
            turns.agent_fail = Some(("state_changed", why));
            return Ok(());
        }
        // The critic's count is in its state, which the agent can reach:
        // one that disagrees with the runner's own count was tampered with.
        if verdict["iteration"].as_u64() != Some(u64::from(turns.finishes)) {
            turns.rounds.push(row);
            turns.agent_fail = Some((
                "state_changed",
                format!(
                    "finish {} came back as the critic's iteration {}: its state was changed",
                    turns.finishes, verdict["iteration"]
                ),
            ));
            return Ok(());
        }
        let accepted = verdict["accepted"].as_bool().unwrap_or(false);
        row.budget_exhausted = verdict["budget_exhausted"].as_bool().unwrap_or(false);
        row.verdict = if accepted { "accepted" } else { "rejected" }.into();
        row.followup = verdict["followup"].as_str().map(str::to_string);
        let _ = save_patch(workspace, &job.base, &dir.join("patch.diff"));
        turns.budget_exhausted = row.budget_exhausted;
        turns.last_verdict = Some(verdict);
        let followup = row.followup.clone();
        turns.rounds.push(row);
        if accepted {
            return Ok(());
        }
        // Without a proxy counting as calls happen, the transcript's count.
        if let Some(over) = model
            .is_none()
            .then(|| over_budget(exp, spent(exp, &job.dir)))
            .flatten()
        {
            turns.agent_fail = Some(over);
            return Ok(());
        }
        // Graded during the next turn when the agent's next finish is
        // judged again. Otherwise (the last turn, or the skill's rejections
        // spent so the next finish is accepted as it is) this patch may well
        // be the final one, graded once after the run.
        let judged_again = turns.last_verdict.as_ref().is_some_and(|v| {
            v["iteration"].as_u64() < v["max_iterations"].as_u64() && round < exp.budget.turns
        });
        if let Some(grading) = grading.as_deref_mut().filter(|_| judged_again) {
            grading.start(round, &dir);
        }
        prompt = followup.unwrap_or_else(|| "Your finish was rejected; continue.".into());
    }
    turns.agent_fail = Some((
        "turn_budget",
        format!(
            "the critic still rejected after {} turns (budget.turns)",
            exp.budget.turns
        ),
    ));
    Ok(())
}

/// The session of an agent whose own Stop hook is the finish boundary:
/// one run of the program, its rounds read from the hook's verdict log.
fn drive_hooked(
    ctx: &Context,
    job: &Job,
    workspace: &Path,
    agent: Adapter,
    way: Option<&ModelWay>,
    turns: &mut Turns,
) -> Result<(), Failed> {
    let exp = ctx.experiment;
    let (Some(model), Some(way)) = (exp.model.as_ref(), way) else {
        return Err(infra(
            "model",
            format!(
                "the {} adapter needs the experiment's `model`",
                agent.name()
            ),
        ));
    };
    let prompt = job
        .arm
        .render(job.instance, workspace)
        .map_err(|e| infra("prompt", e))?;
    let round1 = job.dir.join("round-1");
    std::fs::create_dir_all(&round1)
        .map_err(|e| infra("output", format!("{}: {e}", round1.display())))?;
    let _ = put(&round1.join("prompt.md"), &prompt);
    let agent_dir = job.dir.join("agent");
    std::fs::create_dir_all(&agent_dir)
        .map_err(|e| infra("output", format!("{}: {e}", agent_dir.display())))?;
    put(&agent_dir.join("prompt.md"), &prompt).map_err(|e| infra("output", e))?;
    // The judge's socket, in a directory of the runner's own: a socket's
    // path must be short, and the agent's /tmp is not this one.
    let judge_dir = if ctx.confine_agents {
        let dir = tempfile::Builder::new()
            .prefix("critic-judge-")
            .tempdir()
            .map_err(|e| infra("confinement", format!("a directory for the judge: {e}")))?;
        Some(dir)
    } else {
        None
    };
    let judge_socket = judge_dir.as_ref().map(|d| d.path().join("s"));
    let confine = ctx
        .reach(job, judge_socket.as_deref(), Some(way))?
        .zip(judge_socket);
    let base_url = way.url(confine.as_ref().map(|(r, _)| r));
    let mut env: Vec<(String, String)> = exp.agent.env.clone().into_iter().collect();
    env.extend([
        ("CRITIC_SEED".to_string(), exp.seed.to_string()),
        ("PYTHONHASHSEED".into(), "0".into()),
        ("TZ".into(), "UTC".into()),
        ("LC_ALL".into(), "C.UTF-8".into()),
    ]);
    let timeout = exp
        .budget
        .wall_time
        .map_or(exp.agent.timeout, |w| w.min(exp.agent.timeout));
    let base = adapters::hooked::Session {
        agent: (agent != Adapter::MiniSweAgent).then(|| agent.name()),
        argv: Vec::new(),
        env,
        hook_file: PathBuf::new(),
        install_env: Vec::new(),
        hook_args: Vec::new(),
        dir: &job.dir,
        workspace,
        skill: &job.arm.skill,
        critic: ctx.critic,
        check_flags: ctx.check_flags,
        max_rejections: exp.budget.turns.saturating_sub(1),
        timeout,
        path_prefix: job
            .python
            .parent()
            .map(Path::to_path_buf)
            .into_iter()
            .collect(),
        agent_dir,
        confine,
        hidden_env: model.api_key_env.iter().cloned().collect(),
        stop: Some(way.proxy.stop_flag()),
    };
    let params = adapters::claude_code::Params {
        program: exp.agent.program.as_deref(),
        prompt: &prompt,
        model,
        base_url: &base_url,
        api_key: Some(way.proxy.token().to_string()),
    };
    let outcome = match agent {
        Adapter::ClaudeCode => adapters::claude_code::run(&params, base),
        Adapter::Codex => adapters::codex::run(&params, base),
        Adapter::MiniSweAgent => adapters::mini_swe_agent::run(&params, base),
        Adapter::Openhands => adapters::openhands::run(&params, base),
        Adapter::Command => unreachable!("the command adapter has its own loop"),
    }
    .map_err(|e| infra("hook_install", e))?;
    if let Some(link) = link_within(&job.dir) {
        turns.agent_fail = Some((
            "planted_links",
            format!(
                "{}: a link, FIFO or device where the runner writes",
                link.display()
            ),
        ));
        return Ok(());
    }
    let last = outcome.verdicts.len();
    for (i, v) in outcome.verdicts.iter().enumerate() {
        let accepted = v["accepted"].as_bool().unwrap_or(false);
        // Beside the patch the hook saved for this finish.
        let round = job.dir.join(format!("round-{}", i + 1));
        let _ = std::fs::create_dir_all(&round);
        let _ = put(
            &round.join("verdict.json"),
            serde_json::to_vec_pretty(v).unwrap_or_default(),
        );
        turns.rounds.push(Round {
            round: i as u32 + 1,
            turn_exit: None,
            turn_s: 0.0,
            verdict: if accepted { "accepted" } else { "rejected" }.into(),
            budget_exhausted: v["budget_exhausted"].as_bool().unwrap_or(false),
            followup: v["followup"].as_str().map(str::to_string),
            critic_error: detector_error(v),
            resolved: None,
        });
    }
    turns.finishes = last as u32;
    turns.last_verdict = outcome.verdicts.last().cloned();
    turns.budget_exhausted = turns.rounds.last().is_some_and(|r| r.budget_exhausted);
    let tail = outcome
        .turn
        .output_tail
        .chars()
        .rev()
        .take(2000)
        .collect::<String>();
    let tail: String = tail.chars().rev().collect();
    let code = match &outcome.turn.end {
        TurnEnd::NotStarted(why) => return Err(infra("agent_start", why.clone())),
        TurnEnd::TimedOut => {
            turns.agent_fail = Some((
                "turn_timeout",
                format!("the agent ran past {timeout:?} and was killed"),
            ));
            return Ok(());
        }
        TurnEnd::MemoryLimit => {
            turns.agent_fail = Some(("memory_limit", exp.agent.limits.memory_killed()));
            return Ok(());
        }
        // The proxy's reason is the run's (see [`run`]).
        TurnEnd::Stopped => return Ok(()),
        TurnEnd::Exited(code) => *code,
    };
    if let Some(r) = turns.rounds.last_mut() {
        r.turn_exit = code;
        r.turn_s = outcome.turn.duration.as_secs_f64();
    }
    let seen = way.proxy.seen();
    let counted = outcome
        .verdicts
        .iter()
        .enumerate()
        .all(|(i, v)| v["iteration"].as_u64() == Some(i as u64 + 1));
    if let Some(why) = outcome.verdicts.iter().find_map(state_tampered) {
        turns.agent_fail = Some(("state_changed", why));
    } else if !counted {
        turns.agent_fail = Some((
            "state_changed",
            "the critic's iterations are not 1, 2, ... in the verdict log: its state or the \
             log was changed"
                .into(),
        ));
    } else if outcome.hook_changed {
        turns.agent_fail = Some((
            "hook_changed",
            "the agent changed its hook configuration: the critic may not have judged its finish"
                .into(),
        ));
    } else if seen.stop.is_some() {
        // Refused by the proxy before the agent's exit: see [`run`].
    } else if last == 0 && code != Some(0) && !killed(code) && !seen.answered {
        // No finish judged and no answer of the model through the proxy:
        // the model was out of reach, or the agent never got as far as
        // calling it (a bad flag): nothing the model said moved it.
        return Err(match seen.unreachable {
            Some(why) => infra(
                "model_unreachable",
                format!("{why} (see model.jsonl); the agent exited with {code:?}"),
            ),
            None => infra(
                "agent_exit",
                format!(
                    "the agent exited with {code:?} before its model answered ({} calls in model.jsonl): {tail}",
                    seen.calls
                ),
            ),
        });
    } else if code != Some(0) && turns.rounds.last().is_none_or(|r| r.verdict != "accepted") {
        // It had started (its model answered, a finish was judged), or
        // something it ran killed it (the runner kills only at the time
        // limit): how it ended is its own doing.
        turns.agent_fail = Some((
            "agent_exit",
            format!("the agent exited with {code:?} without a finish the critic accepted: {tail}"),
        ));
    } else if turns.rounds.last().is_none_or(|r| r.verdict != "accepted") {
        turns.agent_fail = Some((
            "unchecked_stop",
            "the agent stopped without a finish the critic accepted".into(),
        ));
    }
    Ok(())
}

/// Whether an exit status is a death by a signal: none at all, or a
/// launcher's `128 + signal`.
fn killed(code: Option<i32>) -> bool {
    code.is_none_or(|c| c > 128)
}

/// What the critic found in place of its state, when `verdict` is a finish
/// it could not judge for that (a link, a FIFO, a hard link: see
/// [`crate::evaluate::state`]).
fn state_tampered(verdict: &Value) -> Option<String> {
    let meta = &verdict["metadata"];
    (meta["cause"] == "state").then(|| {
        format!(
            "the critic's state was replaced: {}",
            meta["unjudged"].as_str().unwrap_or("?")
        )
    })
}

/// The first signal of `verdict` whose detector failed, and why.
fn detector_error(verdict: &Value) -> Option<String> {
    verdict["signals"].as_array()?.iter().find_map(|s| {
        (s["status"] == "error").then(|| {
            format!(
                "signal `{}`: {}",
                s["name"].as_str().unwrap_or("?"),
                s["error"].as_str().unwrap_or("failed")
            )
        })
    })
}

/// Add the turn to the runner's own record of the session, in the host's
/// normalized event format: the prompt as the user's message, the agent's
/// exit (and the end of its output) as its finish.
fn append_record(path: &Path, prompt: &str, tail: &str, exit: Option<i32>) -> Result<(), String> {
    let user = json!({"index": 0, "kind": "message", "source": "user", "text": prompt});
    let mut finish = json!({"index": 0, "kind": "finish", "source": "agent", "text": tail});
    if let Some(code) = exit {
        finish["exit_code"] = json!(code);
    }
    crate::sys::atomic_file::append(path, format!("{user}\n{finish}\n").as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Write one of the run's files, through nothing the agent may have
/// planted at its name (see [`crate::sys::atomic_file`]).
fn put(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), String> {
    crate::sys::atomic_file::write(path, bytes.as_ref(), false)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The critic's check of this finish, as the `critic` binary gives it.
fn check(
    ctx: &Context,
    job: &Job,
    workspace: &Path,
    events: &Path,
    session: &str,
    state: &Path,
    dir: &Path,
) -> Result<Value, Failed> {
    let mut cmd = Command::new(ctx.critic);
    cmd.arg("check")
        .arg("--skill")
        .arg(&job.arm.skill)
        .arg("--workspace")
        .arg(workspace)
        .arg("--events")
        .arg(events)
        .args(["--session", session])
        .arg("--state-dir")
        .arg(state)
        .args(ctx.check_flags)
        .env(crate::workspace::OWN_GIT_DIR_VAR, "1")
        .env(
            "PATH",
            adapters::command::path_with(
                &job.python
                    .parent()
                    .map(Path::to_path_buf)
                    .into_iter()
                    .collect::<Vec<_>>(),
            ),
        )
        .stdin(std::process::Stdio::null());
    let out =
        crate::sys::output_within::output_within(&mut cmd, CHECK_TIME_LIMIT, MAX_VERDICT_BYTES)
            .map_err(|e| {
                infra(
                    "critic",
                    format!("cannot start {}: {e}", ctx.critic.display()),
                )
            })?;
    let _ = put(&dir.join("check.stderr"), &out.stderr);
    let stdout = &out.stdout;
    let _ = put(&dir.join("verdict.json"), stdout);
    let Some(status) = out.status else {
        return Err(infra(
            "critic",
            format!("critic check gave no answer within {CHECK_TIME_LIMIT:?} and was killed"),
        ));
    };
    match status.code() {
        Some(0 | 1) => serde_json::from_slice(stdout)
            .map_err(|e| infra("critic", format!("critic check printed no verdict: {e}"))),
        code => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let tail: String = stderr
                .trim()
                .chars()
                .rev()
                .take(2000)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            Err(infra(
                "critic",
                format!("critic check exited with {code:?}: {tail}"),
            ))
        }
    }
}

/// Check `job`'s skill on a benign finish (the instance's base, no change,
/// a transcript of one finish) before any agent runs: `Err` names the
/// detector that failed there, which is the harness's problem (a skill
/// that cannot run in this environment), not any agent's. The check's files
/// are kept in `job.dir`.
pub fn benign_finish(ctx: &Context, job: &Job) -> Result<(), String> {
    let _ = crate::sys::remove_tree::remove_tree(&job.dir);
    std::fs::create_dir_all(&job.dir).map_err(|e| format!("{}: {e}", job.dir.display()))?;
    let workspace = job.dir.join("workspace");
    crate::experiment::workspace_clone::make_workspace(
        &job.repo, &job.copy, &job.base, &workspace,
    )?;
    let events = job.dir.join("events.jsonl");
    put(
        &events,
        "{\"index\": 0, \"kind\": \"finish\", \"source\": \"agent\", \"text\": \"Done.\"}\n",
    )?;
    let verdict = check(
        ctx,
        job,
        &workspace,
        &events,
        "preflight",
        &job.dir.join("state"),
        &job.dir,
    );
    let _ = crate::sys::remove_tree::remove_tree(&workspace);
    let verdict = verdict.map_err(|f| f.message)?;
    match detector_error(&verdict) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The workspace's diff against `base`, untracked files included.
fn diff(workspace: &Path, base: &str) -> Result<String, String> {
    // The runner reads the agent's workspace unconfined: only through the
    // git directory it made.
    crate::workspace::check_own_git_dir(workspace).map_err(|e| e.to_string())?;
    let (_, raw) = crate::workspace::Workspace::open_with_diff(workspace, Some(base))
        .map_err(|e| e.to_string())?;
    Ok(raw.raw)
}

fn save_patch(workspace: &Path, base: &str, to: &Path) -> Result<(), String> {
    put(to, diff(workspace, base)?)
}

/// The final patch: the workspace's diff, with the arm's declared outcome
/// applied first (CoHarden's t0: the Round 0 test it saved, checked
/// against the digest its verdict gives); and which test it carries.
fn final_patch(
    job: &Job,
    workspace: &Path,
    verdict: Option<&Value>,
) -> Result<(String, Option<String>), Failed> {
    let outcome = verdict.and_then(|v| {
        v["signals"]
            .as_array()?
            .iter()
            .find_map(|s| s["metadata"].get("outcome").cloned())
    });
    let mut test = None;
    if let Some(outcome) = outcome {
        test = outcome["test"].as_str().map(str::to_string);
        if test.as_deref() == Some("t0") {
            let skill_name = verdict
                .and_then(|v| v["skill"]["name"].as_str())
                .unwrap_or_default();
            restore_t0(workspace, skill_name, &outcome).map_err(|e| Failed {
                status: Status::AgentFail,
                class: "outcome",
                message: e,
            })?;
        }
    }
    // The workspace was whole when the run began: a diff that fails now is
    // the agent's doing (its `.git` removed or broken), not the harness's.
    let patch = diff(workspace, &job.base).map_err(|e| Failed {
        status: Status::AgentFail,
        class: "workspace_broken",
        message: e,
    })?;
    Ok((patch, test))
}

/// Put the Round 0 test the skill saved back over the workspace's.
fn restore_t0(workspace: &Path, skill: &str, outcome: &Value) -> Result<(), String> {
    let file = outcome["test_file"].as_str().unwrap_or_default();
    let rel = Path::new(file);
    let plain = !file.is_empty()
        && rel
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(n) if n != ".git"));
    if !plain || skill.is_empty() || skill.contains('/') {
        return Err(format!(
            "the verdict's outcome names {file:?}, not a plain relative path"
        ));
    }
    // Read and written from the workspace's root down, no link of the
    // agent's followed on the way.
    let root = crate::sandbox::beneath::Beneath::open(workspace)
        .map_err(|e| format!("{}: {e}", workspace.display()))?;
    let saved = Path::new(crate::host::artifacts::FEEDBACK_DIR)
        .join(skill)
        .join("final-test")
        .join(rel);
    let bytes = root
        .read(&saved, 64 << 20)
        .map_err(|e| format!("{}: the saved t0 cannot be read: {e}", saved.display()))?;
    let digest = hex::encode(Sha256::digest(&bytes));
    if Some(digest.as_str()) != outcome["test_sha256"].as_str() {
        return Err(format!(
            "{}: its SHA-256 is not the verdict's test_sha256 (changed after the check)",
            saved.display()
        ));
    }
    root.write_atomic(rel, &bytes)
        .map_err(|e| format!("{}: {e}", workspace.join(rel).display()))
}

#[cfg(test)]
mod tests;

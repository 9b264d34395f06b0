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
use crate::experiment::model_proxy::{self, ModelProxy, Serving, Stop};
use crate::experiment::run_grade::{Graded, Grader};
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
mod command_turns;
mod hooked_turns;
mod model_way;

use command_turns::{check, drive};
use hooked_turns::drive_hooked;
use model_way::ModelWay;

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

/// Write one of the run's files, through nothing the agent may have
/// planted at its name (see [`crate::sys::atomic_file`]).
fn put(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), String> {
    crate::sys::atomic_file::write(path, bytes.as_ref(), false)
        .map_err(|e| format!("{}: {e}", path.display()))
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

//! One run: a fresh workspace, the arm's task prompt, then turns of the
//! agent, each ended by the critic's check at its finish, until the skill
//! accepts or a budget ends; then the final patch (with the arm's declared
//! outcome applied) and its grade. Everything the run saw is kept under its
//! directory; its result is returned for the database.

use crate::experiment::db::{Round, Run, RunKey, Status};
use crate::experiment::file::Adapter;
use crate::experiment::finish_grading;
use crate::experiment::model_proxy::Stop;
use crate::experiment::run_grade::{Graded, Grader};
use crate::grading::dataset::Instance;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Instant;

mod command_turns;
mod context;
mod hooked_turns;
mod model_way;

use command_turns::{check, drive};
pub(crate) use context::MAX_VERDICT_BYTES;
use context::{detector_error, diff, infra, link_within, put, spent, Failed, Turns};
pub use context::{Context, Job};
use hooked_turns::drive_hooked;
use model_way::ModelWay;

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
    control: crate::experiment::options::Control,
    dir: &Path,
    attempt: u32,
    grader: &Grader,
) -> (Run, Vec<Round>) {
    let started = Instant::now();
    let patch = match control {
        crate::experiment::options::Control::Gold => instance.patch.clone(),
        crate::experiment::options::Control::Empty => String::new(),
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

/// Empty `dir` (an earlier attempt's files go).
fn reset_dir(dir: &Path) -> Result<(), String> {
    if dir.exists() {
        crate::sys::remove_tree::remove_tree(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
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

//! A `command` agent's session: the runner drives each turn (prompt,
//! agent, check) until the critic accepts or a budget ends.

use super::context::{
    detector_error, infra, over_budget, planted_in, put, save_patch, spent, state_tampered,
    Context, Failed, Job, Turns, CHECK_TIME_LIMIT, MAX_TRANSCRIPT_BYTES, MAX_VERDICT_BYTES,
};
use super::model_way::ModelWay;
use crate::experiment::adapters::{self, Turn, TurnEnd};
use crate::experiment::db::{Round, Status};
use crate::experiment::finish_grading;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// The turns: prompt, agent, check; until accepted or a budget ends.
pub(super) fn drive(
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
    let reach = ctx.reach(job, None, model.map(|m| &m.proxy))?;
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
        if let Some(planted) = planted_in(&job.dir) {
            turns.agent_fail = Some(planted);
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
            let (done, allowed) = (v["iteration"].as_u64(), v["max_iterations"].as_u64());
            done.zip(allowed).is_some_and(|(d, a)| d < a) && round < exp.budget.turns
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
/// Add the turn to the runner's own record of the session, in the host's
/// normalized event format: the prompt as the user's message, the agent's
/// exit (and the end of its output) as its finish.
pub(super) fn append_record(
    path: &Path,
    prompt: &str,
    tail: &str,
    exit: Option<i32>,
) -> Result<(), String> {
    let user = json!({"index": 0, "kind": "message", "source": "user", "text": prompt});
    let mut finish = json!({"index": 0, "kind": "finish", "source": "agent", "text": tail});
    if let Some(code) = exit {
        finish["exit_code"] = json!(code);
    }
    crate::sys::atomic_file::append(path, format!("{user}\n{finish}\n").as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))
}
/// The critic's check of this finish, as the `critic` binary gives it.
pub(super) fn check(
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
            adapters::confined::path_with(
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

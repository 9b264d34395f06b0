//! The session of an agent whose own Stop hook is the finish boundary
//! (Claude Code, Codex, mini-swe-agent, OpenHands): one run of the
//! program, its rounds read from the hook's verdict log.

use super::context::{
    detector_error, infra, killed, planted_in, put, state_tampered, Context, Failed, Job, Turns,
};
use super::model_way::ModelWay;
use crate::experiment::adapters::{self, TurnEnd};
use crate::experiment::db::Round;
use crate::experiment::file::Adapter;
use std::path::{Path, PathBuf};

/// The session of an agent whose own Stop hook is the finish boundary:
/// one run of the program, its rounds read from the hook's verdict log.
pub(super) fn drive_hooked(
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
        .reach(job, judge_socket.as_deref(), Some(&way.proxy))?
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
    if let Some(planted) = planted_in(&job.dir) {
        turns.agent_fail = Some(planted);
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

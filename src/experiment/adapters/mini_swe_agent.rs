//! The `mini-swe-agent` adapter: mini-swe-agent's `mini` with the
//! `pluggable_critic.minisweagent.CriticAgent` agent class (the Python
//! package in `examples/openhands/`, installed beside mini-swe-agent), which
//! runs `critic check` when the model submits and hands a rejection's
//! follow-up back as the next user message. mini-swe-agent has no hooks, so
//! this is its finish boundary. Its model is the experiment's, through
//! litellm's OpenAI-compatible client; its trajectory is kept as the run's
//! transcript.

use super::claude_code::Params;
use super::hooked::{self, Outcome};

/// Run `mini` for one session; see [`hooked::run`].
pub fn run(p: &Params, base: hooked::Session) -> Result<Outcome, String> {
    let home = base.agent_dir.join("home");
    std::fs::create_dir_all(&home).map_err(|e| format!("{}: {e}", home.display()))?;
    let program = p
        .program
        .map_or("mini".to_string(), |p| p.to_string_lossy().into_owned());
    let set = |key: &str, value: &str| ["-c".to_string(), format!("{key}={value}")];
    let mut argv = vec![
        program,
        "-y".into(),
        "--exit-immediately".into(),
        "-m".into(),
        format!("openai/{}", p.model.model),
        "-c".into(),
        "mini.yaml".into(),
        "--agent-class".into(),
        "pluggable_critic.minisweagent.CriticAgent".into(),
    ];
    let api_base = format!("{}/v1", p.base_url.trim_end_matches('/'));
    argv.extend(set("model.model_kwargs.api_base", &api_base));
    argv.extend(set("agent.critic_skill", &base.skill.to_string_lossy()));
    argv.extend(set("agent.critic_bin", &base.critic.to_string_lossy()));
    argv.extend(set(
        "agent.critic_max_rejections",
        &base.max_rejections.to_string(),
    ));
    match base.judge_address() {
        // The session's judge keeps the state and writes the log.
        Some(judge) => argv.extend(set("agent.critic_server", &judge)),
        None => {
            argv.extend(set(
                "agent.critic_state_dir",
                &base.dir.join("state").to_string_lossy(),
            ));
            argv.extend(set(
                "agent.critic_verdict_log",
                &hooked::verdict_log(base.dir).to_string_lossy(),
            ));
        }
    }
    argv.extend(["-t".into(), p.prompt.into(), "-o".into()]);
    argv.push(
        base.agent_dir
            .join("transcript.json")
            .to_string_lossy()
            .into_owned(),
    );
    let mut env = vec![
        ("HOME".to_string(), home.to_string_lossy().into_owned()),
        (
            "MSWEA_GLOBAL_CONFIG_DIR".into(),
            home.join("mini-swe-agent").to_string_lossy().into_owned(),
        ),
        ("MSWEA_CONFIGURED".into(), "true".into()),
        // A model litellm has no price for is not an error.
        ("MSWEA_COST_TRACKING".into(), "ignore_errors".into()),
        // litellm's cost map from the package, not fetched.
        ("LITELLM_LOCAL_MODEL_COST_MAP".into(), "True".into()),
        // The key by name, never on the command line.
        (
            "OPENAI_API_KEY".into(),
            p.api_key.clone().unwrap_or_default(),
        ),
    ];
    // The critic's checks run by the agent's process take the runner's
    // confinement choice from the environment.
    if base.check_flags.iter().any(|f| f == "--unconfined-runs") {
        env.push(("CRITIC_UNCONFINED_RUNS".into(), "1".into()));
    }
    env.extend(base.env.iter().cloned());
    let (agent_dir, dir) = (base.agent_dir.clone(), base.dir);
    let outcome = hooked::run(&hooked::Session {
        agent: None,
        argv,
        env,
        ..base
    })?;
    // The trajectory it wrote in its own directory, kept as the run's.
    hooked::keep_newest(&agent_dir, "transcript.json", &dir.join("transcript.json"));
    Ok(outcome)
}

//! The `openhands` adapter: one OpenHands SDK conversation, run headless by
//! `python -m pluggable_critic.run` (the Python package in
//! `examples/openhands/`, installed beside `openhands-sdk` and
//! `openhands-tools`), its Stop hook the critic, installed at user scope in
//! a home of the run's own and pointed at the conversation's persistence
//! directory, its model the experiment's through litellm's OpenAI-compatible
//! client. `agent.program` is that environment's Python.

use super::claude_code::Params;
use super::hooked::{self, Outcome};

/// Run one conversation; see [`hooked::run`].
pub fn run(p: &Params, base: hooked::Session) -> Result<Outcome, String> {
    let home = base.agent_dir.join("home");
    std::fs::create_dir_all(&home).map_err(|e| format!("{}: {e}", home.display()))?;
    let persist = base.agent_dir.join("openhands");
    let python = p
        .program
        .map_or("python3".to_string(), |p| p.to_string_lossy().into_owned());
    let argv = vec![
        python,
        "-m".into(),
        "pluggable_critic.run".into(),
        "--workspace".into(),
        base.workspace.to_string_lossy().into_owned(),
        "--prompt-file".into(),
        base.agent_dir
            .join("prompt.md")
            .to_string_lossy()
            .into_owned(),
        "--model".into(),
        format!("openai/{}", p.model.model),
        "--base-url".into(),
        format!("{}/v1", p.base_url.trim_end_matches('/')),
        "--persist".into(),
        persist.to_string_lossy().into_owned(),
    ];
    let home_s = home.to_string_lossy().into_owned();
    let mut env = vec![
        ("HOME".to_string(), home_s.clone()),
        // The key by name, never on the command line.
        ("LLM_API_KEY".into(), p.api_key.clone().unwrap_or_default()),
    ];
    env.extend(base.env.iter().cloned());
    let dir = base.dir;
    let outcome = hooked::run(&hooked::Session {
        argv,
        env,
        hook_file: home.join(".openhands/hooks.json"),
        install_env: vec![("HOME".into(), home_s)],
        // OpenHands' hook input names no transcript: the hook reads the
        // conversation from its persistence directory.
        hook_args: vec!["--events".into(), persist.to_string_lossy().into_owned()],
        ..base
    })?;
    // The conversation's state holds its model's running usage.
    hooked::keep_newest(&persist, "base_state.json", &dir.join(STATE_FILE));
    Ok(outcome)
}

/// Where the conversation's state (and so its usage) is kept in a run.
pub const STATE_FILE: &str = "openhands-state.json";

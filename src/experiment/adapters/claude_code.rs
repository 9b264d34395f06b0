//! The `claude-code` adapter: Claude Code in print mode (`claude -p`), its
//! Stop hook the critic, its model the experiment's through the run's model
//! proxy (`ANTHROPIC_BASE_URL`, the run's token as its key), in a home of
//! the run's own; the transcript
//! it writes there is kept as the run's.

use super::hooked::{self, Outcome};
use crate::experiment::file::Model;
use std::path::Path;

/// What the run gives the adapter.
pub struct Params<'a> {
    /// The program (`claude` on PATH by default).
    pub program: Option<&'a Path>,
    /// The task prompt.
    pub prompt: &'a str,
    /// The model.
    pub model: &'a Model,
    /// The base URL the agent calls: the run's model proxy.
    pub base_url: &'a str,
    /// The key the agent presents: the run's token at the proxy (the real
    /// key stays with the runner).
    pub api_key: Option<String>,
}

/// Run Claude Code for one session; see [`hooked::run`].
pub fn run(p: &Params, base: hooked::Session) -> Result<Outcome, String> {
    let home = base.agent_dir.join("home");
    let tmp = base.agent_dir.join("tmp");
    for d in [&home, &tmp] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let program = p
        .program
        .map_or("claude".to_string(), |p| p.to_string_lossy().into_owned());
    let tools = "Bash,Edit,Write,Read";
    let argv = vec![
        program,
        "-p".into(),
        p.prompt.into(),
        "--model".into(),
        p.model.model.clone(),
        "--tools".into(),
        tools.into(),
        "--allowedTools".into(),
        tools.into(),
        "--output-format".into(),
        "text".into(),
    ];
    let home_s = home.to_string_lossy().into_owned();
    let mut env = vec![
        ("HOME".to_string(), home_s.clone()),
        ("ANTHROPIC_BASE_URL".into(), p.base_url.to_string()),
        (
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
            "1".into(),
        ),
        ("DISABLE_AUTOUPDATER".into(), "1".into()),
        (
            "CLAUDE_CODE_TMPDIR".into(),
            tmp.to_string_lossy().into_owned(),
        ),
    ];
    if let Some(key) = &p.api_key {
        env.push(("ANTHROPIC_API_KEY".into(), key.clone()));
    }
    env.extend(base.env.iter().cloned());
    let session = hooked::Session {
        argv,
        env,
        hook_file: home.join(".claude/settings.json"),
        install_env: vec![("HOME".into(), home_s)],
        ..base
    };
    let outcome = hooked::run(&session)?;
    hooked::keep_newest(
        &home.join(".claude/projects"),
        ".jsonl",
        &session.dir.join("transcript.jsonl"),
    );
    Ok(outcome)
}

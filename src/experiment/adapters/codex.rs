//! The `codex` adapter: `codex exec` with the critic as its Stop hook, its
//! model provider the experiment's model through the run's model proxy
//! (Responses API, the run's token as its key), in a `CODEX_HOME` of the
//! run's own; the rollout
//! it writes there is kept as the run's transcript.

use super::claude_code::Params;
use super::hooked::{self, Outcome};

/// Run `codex exec` for one session; see [`hooked::run`].
pub fn run(p: &Params, base: hooked::Session) -> Result<Outcome, String> {
    let home = base.agent_dir.join("home");
    let codex_home = base.agent_dir.join("codex-home");
    for d in [&home, &codex_home] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let key_var = "CRITIC_EXPERIMENT_MODEL_KEY";
    let config = format!(
        "model = {model}\nmodel_provider = \"experiment\"\n\n\
         [model_providers.experiment]\nname = \"experiment\"\nbase_url = {url}\n\
         wire_api = \"responses\"\nenv_key = \"{key_var}\"\n\n\
         [analytics]\nenabled = false\n\n[features]\nplugins = false\n",
        model = toml_string(&p.model.model),
        url = toml_string(&format!("{}/v1", p.base_url.trim_end_matches('/'))),
    );
    let config_file = codex_home.join("config.toml");
    std::fs::write(&config_file, config).map_err(|e| format!("{}: {e}", config_file.display()))?;
    let program = p
        .program
        .map_or("codex".to_string(), |p| p.to_string_lossy().into_owned());
    // The hook is ours and the workspace is the run's: both trusted.
    let argv = vec![
        program,
        "exec".into(),
        "--trust".into(),
        "--dangerously-bypass-hook-trust".into(),
        "-s".into(),
        // Its own sandbox (bubblewrap) cannot start inside the runner's
        // confinement, where Landlock refuses new mounts: that
        // confinement takes its place. Unconfined, its own holds.
        match base.confine {
            Some(_) => "danger-full-access".into(),
            None => "workspace-write".into(),
        },
        "-C".into(),
        base.workspace.to_string_lossy().into_owned(),
        p.prompt.into(),
    ];
    let codex_home_s = codex_home.to_string_lossy().into_owned();
    let mut env = vec![
        ("HOME".to_string(), home.to_string_lossy().into_owned()),
        ("CODEX_HOME".into(), codex_home_s.clone()),
        // codex refuses to start without the provider's key variable set.
        (key_var.into(), p.api_key.clone().unwrap_or_default()),
    ];
    env.extend(base.env.iter().cloned());
    let session = hooked::Session {
        argv,
        env,
        hook_file: codex_home.join("hooks.json"),
        install_env: vec![("CODEX_HOME".into(), codex_home_s)],
        ..base
    };
    let outcome = hooked::run(&session)?;
    hooked::keep_newest(
        &codex_home.join("sessions"),
        ".jsonl",
        &session.dir.join("transcript.jsonl"),
    );
    Ok(outcome)
}

/// `s` as a TOML basic string.
fn toml_string(s: &str) -> String {
    // JSON's string escapes are TOML's for basic strings.
    serde_json::to_string(s).expect("a string serializes")
}

#[cfg(test)]
mod tests {
    #[test]
    fn toml_strings_are_escaped() {
        assert_eq!(super::toml_string("a\"b\\c\n"), r#""a\"b\\c\n""#);
    }
}

//! `critic check`: judge one finish and print the verdict.

use crate::{Output, EXIT_ACCEPT, EXIT_REJECT};
use critic_sdk::EventKind;
use pluggable_critic::agents::EventsFormat;
use pluggable_critic::detector::wasm::cache;
use pluggable_critic::evaluate::state::DEFAULT_LOCK_TIMEOUT;
use pluggable_critic::evaluate::verdict::escape_terminal;
use pluggable_critic::frontend::client::{self, ClientError, ServerAddress, SERVER_ENV};
use pluggable_critic::frontend::{oneshot, CheckRequest, HostSettings, DEFAULT_SESSION};
use pluggable_critic::host::llm::LlmConfig;
use pluggable_critic::host::Capability;
use std::path::PathBuf;
use std::time::Duration;

/// What to judge: `critic check`'s flags naming the finish.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// The agent's git working tree.
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// The agent's event stream: a transcript file, or an OpenHands events/ directory.
    #[arg(long)]
    events: PathBuf,
    /// Session id; state and the rejection count are kept per session (default: the id the transcript records, else "default").
    #[arg(long)]
    session: Option<String>,
    #[command(flatten)]
    skill: SkillArgs,
}

/// The skill and how it judges: the flags of every verb that checks a
/// finish (`check`, `hook`).
#[derive(clap::Args)]
pub struct SkillArgs {
    /// Skill directory (holds critic.yaml).
    #[arg(long)]
    skill: PathBuf,
    /// Force the event format instead of detecting it.
    #[arg(long)]
    events_format: Option<EventsFormat>,
    /// Diff against this revision instead of HEAD.
    #[arg(long)]
    base: Option<String>,
    /// Judge this diff instead of the working tree (the workspace must be at the base).
    #[arg(long)]
    patch: Option<PathBuf>,
    /// State directory (default: $XDG_STATE_HOME/pluggable-critic/workspaces/<workspace key>, or ~/.local/state/...).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Deny a capability the skill asks for (repeatable).
    #[arg(long = "deny", value_name = "CAP")]
    deny: Vec<Capability>,
    /// Seconds to wait for another check on the same session.
    #[arg(long, default_value_t = DEFAULT_LOCK_TIMEOUT.as_secs())]
    lock_timeout: u64,
    /// Accept after this many rejections in a session, if the skill allows more (`critic hook`: 8 unless given).
    #[arg(long)]
    pub max_rejections: Option<u32>,
    /// Seconds the whole check may take; signals still running then are stopped and count as failed (`critic hook`: 540 unless given, within the 600 s `hook install` gives it).
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    pub time_limit: Option<Duration>,
    #[command(flatten)]
    host: HostArgs,
}

impl SkillArgs {
    /// The request these flags describe, on `workspace`, `events` and
    /// `session`.
    pub fn request(
        self,
        workspace: PathBuf,
        events: Option<PathBuf>,
        session: String,
    ) -> CheckRequest {
        CheckRequest {
            skill: self.skill,
            workspace,
            events,
            events_inline: None,
            events_format: self.events_format,
            session,
            base: self.base,
            patch: self.patch,
            state_dir: self.state_dir,
            deny: self.deny,
            lock_timeout: Duration::from_secs(self.lock_timeout),
            time_limit: self.time_limit,
            max_rejections: self.max_rejections,
            finish_message: None,
            host: self.host.settings(),
        }
    }
}

/// A number of seconds (fractions allowed) as a time limit.
pub fn seconds(text: &str) -> Result<Duration, String> {
    let max = pluggable_critic::frontend::MAX_TIME_LIMIT;
    text.parse::<f64>()
        .ok()
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
        .filter(|limit| *limit <= max)
        .ok_or_else(|| format!("expected seconds from 0 to {}", max.as_secs()))
}

/// The operator's settings: what a check may do beyond the skill's sandbox.
#[derive(clap::Args)]
pub struct HostArgs {
    /// Compiled-component cache directory (default: CRITIC_CACHE_DIR or ~/.cache/pluggable-critic).
    #[arg(long, conflicts_with = "no_cache")]
    cache_dir: Option<PathBuf>,
    /// Compile detectors afresh and keep nothing.
    #[arg(long)]
    no_cache: bool,
    /// Allow native (cdylib) detectors, which run unsandboxed.
    #[arg(long)]
    allow_native: bool,
    /// Commands the `run` capabilities run at once (default: one per core).
    #[arg(long)]
    jobs: Option<usize>,
    /// Run `run`/`run-matrix` commands unconfined, with your full
    /// privileges (network, your files, your processes); only for skills
    /// and model output you trust, on machines that cannot confine.
    #[arg(long, env = "CRITIC_UNCONFINED_RUNS")]
    unconfined_runs: bool,
    #[command(flatten)]
    llm: LlmArgs,
}

/// Where `llm-complete` finds its model (the key stays in the environment).
#[derive(clap::Args)]
pub struct LlmArgs {
    /// OpenAI-compatible base URL, up to `/v1` (enables `llm-complete`).
    #[arg(long, env = "CRITIC_LLM_BASE_URL")]
    llm_base_url: Option<String>,
    /// Model name.
    #[arg(long, env = "CRITIC_LLM_MODEL", default_value = "gpt-5-mini")]
    llm_model: String,
    /// Environment variable holding the API key.
    #[arg(long, default_value = "OPENAI_API_KEY")]
    llm_api_key_env: String,
    /// Record answers here and replay them for identical requests.
    #[arg(long, env = "CRITIC_LLM_CACHE")]
    llm_cache: Option<PathBuf>,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 8)]
    llm_concurrency: usize,
    /// Seconds per request.
    #[arg(long, default_value_t = 120)]
    llm_timeout: u64,
    /// Attempts per request (retries back off exponentially).
    #[arg(long, default_value_t = 3)]
    llm_attempts: u32,
}

impl LlmArgs {
    /// The model these flags name, if any.
    pub fn config(self) -> Option<LlmConfig> {
        let mut c = LlmConfig::new(self.llm_base_url?, self.llm_model);
        c.api_key_env = self.llm_api_key_env;
        c.cache_dir = self.llm_cache;
        c.concurrency = self.llm_concurrency.max(1);
        c.timeout = Duration::from_secs(self.llm_timeout.max(1));
        c.attempts = self.llm_attempts.max(1);
        Some(c)
    }
}

impl HostArgs {
    /// The settings these flags choose.
    pub fn settings(self) -> HostSettings {
        HostSettings {
            cache_dir: if self.no_cache {
                None
            } else {
                self.cache_dir.or_else(cache::default_dir)
            },
            allow_native: self.allow_native,
            jobs: self.jobs,
            unconfined_runs: self.unconfined_runs,
            llm: self.llm.config(),
        }
    }
}

impl CheckArgs {
    /// The request these flags describe.
    pub fn request(self) -> CheckRequest {
        let session = self.session.unwrap_or_else(|| {
            match pluggable_critic::agents::session_id::of_file(&self.events) {
                Some(id) => {
                    eprintln!(
                        "critic: session {} (the transcript's; --session names another)",
                        escape_terminal(&id, false)
                    );
                    id
                }
                None => DEFAULT_SESSION.to_string(),
            }
        });
        self.skill
            .request(self.workspace, Some(self.events), session)
    }
}

/// `critic check`'s flags.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    check: CheckArgs,
    /// Send the check to a running `critic serve` (a socket path or
    /// http://127.0.0.1:PORT); if none answers, check in process.
    #[arg(long, env = SERVER_ENV)]
    server: Option<ServerAddress>,
    /// Verdict format on stdout.
    #[arg(long, value_enum, default_value = "json")]
    output: Output,
    /// Append the verdict, one JSON line, to this file, and the patch it
    /// judged to round-<iteration>/patch.diff beside it (a runner's record of
    /// the session; `critic experiment` reads it).
    #[arg(long, value_name = "FILE")]
    verdict_log: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let request = args.check.request();
    // The paths on the command line are the user's: one that names nothing
    // is a mistake to fix, not an agent's finish to count.
    if !request.workspace.is_dir() {
        anyhow::bail!(
            "--workspace {}: no such directory; give the agent's work tree",
            request.workspace.display()
        );
    }
    if let Some(events) = request.events.as_ref().filter(|e| !e.exists()) {
        anyhow::bail!(
            "--events {}: no such file or directory; give the agent's transcript",
            events.display()
        );
    }
    // A format forced on another agent's transcript reads nothing but
    // unknown records, which would be judged as a session that did nothing.
    // (Only here, on the user's command line: a hook's transcript is the
    // agent's, and what it makes of it is judged.)
    if let (Some(format), Some(events)) = (request.events_format, &request.events) {
        if let Ok(read) = pluggable_critic::agents::load_transcript(events, Some(format)) {
            if read.events.iter().all(|e| e.kind == EventKind::Other) {
                anyhow::bail!(
                    "--events-format {format}: {} holds no {format} events ({} records, none \
                     of them known to it); is it another agent's transcript? Without \
                     --events-format the format is detected",
                    events.display(),
                    read.events.len()
                );
            }
        }
    }
    let h = &request.host;
    if args.server.is_some()
        && (h.allow_native || h.unconfined_runs || h.jobs.is_some() || h.llm.is_some())
    {
        eprintln!(
            "critic: --allow-native, --unconfined-runs, --jobs and --llm-* apply only if the check runs in process; a server uses its own"
        );
    }
    let verdict = match &args.server {
        Some(server) => match client::check(server, &request) {
            Ok(verdict) => verdict,
            // The server may count the finish yet: not checked twice.
            Err(ClientError::Failed(e) | ClientError::Unfinished(e)) => anyhow::bail!(e),
            Err(ClientError::NoServer(e)) => {
                eprintln!(
                    "critic: no server answers ({}); checking in process",
                    escape_terminal(&e, false)
                );
                oneshot::check(&request)?
            }
        },
        None => oneshot::check(&request)?,
    };
    if let Some(log) = &args.verdict_log {
        let judged = pluggable_critic::frontend::verdict_log::Judged {
            workspace: Some(&request.workspace),
            base: request.base.as_deref(),
            patch: request.patch.as_deref(),
        };
        // The verdict stands whether or not the record could be written.
        if let Err(e) = pluggable_critic::frontend::verdict_log::record(log, &verdict, &judged) {
            eprintln!("critic check: --verdict-log {}: {e}", log.display());
        }
    }
    match args.output {
        Output::Json => println!("{}", serde_json::to_string_pretty(&verdict)?),
        Output::Text => print!("{}", verdict.to_text()),
    }
    Ok(if verdict.accepted {
        EXIT_ACCEPT
    } else {
        EXIT_REJECT
    })
}

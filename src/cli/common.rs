//! What the verbs share: their exit codes, how they print, and the flags of
//! every verb that checks a finish (the skill, the operator's settings, the
//! model of `llm-complete`). Verbs import these from here, never from each
//! other.

use crate::agents::EventsFormat;
use crate::detector::wasm::cache;
use crate::evaluate::state::DEFAULT_LOCK_TIMEOUT;
use crate::frontend::{CheckRequest, HostSettings};
use crate::host::llm::LlmConfig;
use crate::host::Capability;
use clap::ValueEnum;
use std::path::PathBuf;
use std::time::Duration;

/// Exit code for an accepted finish (and for verbs that succeed).
pub const EXIT_ACCEPT: u8 = 0;
/// Exit code for a rejected finish (and for checks that find a fault).
pub const EXIT_REJECT: u8 = 1;
/// Exit code for bad input or a host failure.
pub const EXIT_ERROR: u8 = 2;

/// How a verb prints its result on stdout.
#[derive(Clone, Copy, ValueEnum)]
pub enum Output {
    Json,
    Text,
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
    let max = crate::frontend::MAX_TIME_LIMIT;
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

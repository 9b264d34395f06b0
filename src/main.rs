//! The `critic` command line.

use clap::{Parser, Subcommand, ValueEnum};
use pluggable_critic::capabilities::llm::LlmConfig;
use pluggable_critic::capabilities::Capability;
use pluggable_critic::check::{self, CheckOptions, DEFAULT_SESSION};
use pluggable_critic::events::EventsFormat;
use pluggable_critic::{build, cache, demo, manifest, runtime, scaffold, state};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Exit code for an accepted finish.
const EXIT_ACCEPT: u8 = 0;
/// Exit code for a rejected finish.
const EXIT_REJECT: u8 = 1;
/// Exit code for bad input or a host failure.
const EXIT_ERROR: u8 = 2;

#[derive(Parser)]
#[command(
    name = "critic",
    version,
    about = "Verify-and-feedback critics at a coding agent's finish boundary"
)]
struct Cli {
    /// Log verbosity (-v info, -vv debug, -vvv trace); CRITIC_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum Output {
    Json,
    Text,
}

#[derive(Subcommand)]
enum Command {
    /// Judge one finish: exit 0 accept, 1 reject, 2 error.
    Check {
        /// Skill directory (holds critic.yaml).
        #[arg(long)]
        skill: PathBuf,
        /// The agent's git working tree.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// The agent's event stream: a file, or an OpenHands events/ directory.
        #[arg(long)]
        events: PathBuf,
        /// Force the event format instead of detecting it.
        #[arg(long, value_enum)]
        events_format: Option<EventsFormat>,
        /// Session id; state and the rejection count are kept per session.
        #[arg(long, default_value = DEFAULT_SESSION)]
        session: String,
        /// Diff against this revision instead of HEAD.
        #[arg(long)]
        base: Option<String>,
        /// Judge this diff instead of the working tree (the workspace must be at the base).
        #[arg(long)]
        patch: Option<PathBuf>,
        /// State directory (default: $XDG_STATE_HOME/pluggable-critic/workspaces/<workspace key>, or ~/.local/state/...).
        #[arg(long)]
        state_dir: Option<PathBuf>,
        /// Compiled-component cache directory (default: CRITIC_CACHE_DIR or ~/.cache/pluggable-critic).
        #[arg(long, conflicts_with = "no_cache")]
        cache_dir: Option<PathBuf>,
        /// Compile detectors afresh and keep nothing.
        #[arg(long)]
        no_cache: bool,
        /// Deny a capability the skill asks for (repeatable).
        #[arg(long = "deny", value_name = "CAP")]
        deny: Vec<Capability>,
        /// Allow native (cdylib) detectors, which run unsandboxed.
        #[arg(long)]
        allow_native: bool,
        /// Seconds to wait for another check on the same session.
        #[arg(long, default_value_t = state::DEFAULT_LOCK_TIMEOUT.as_secs())]
        lock_timeout: u64,
        /// Commands the `run` capabilities run at once (default: one per core).
        #[arg(long)]
        jobs: Option<usize>,
        /// Run `run`/`run-matrix` commands unconfined, with your full
        /// privileges (network, your files, your processes); only for skills
        /// and model output you trust, on machines that cannot confine.
        #[arg(long, env = "CRITIC_UNCONFINED_RUNS")]
        unconfined_runs: bool,
        #[command(flatten)]
        llm: Box<LlmArgs>,
        /// Verdict format on stdout.
        #[arg(long, value_enum, default_value = "json")]
        output: Output,
    },
    /// Report which confinement features this machine has for `run` commands.
    Doctor {
        /// Report format on stdout.
        #[arg(long, value_enum, default_value = "text")]
        output: Output,
    },
    /// Check a skill: manifest, detectors (components of a supported version), capabilities.
    Validate {
        /// Skill directory.
        skill: PathBuf,
        /// Also load native detectors.
        #[arg(long)]
        allow_native: bool,
    },
    /// Rebuild a skill's detectors from source (reproducibly) into the skill directory.
    Build {
        /// Skill directory.
        skill: PathBuf,
        /// Build, but only compare with the committed .wasm files; fail if they differ.
        #[arg(long)]
        check: bool,
    },
    /// Scaffold a new skill: manifest, detector crate, README and a test.
    New {
        /// Skill name (lowercase, digits, '-').
        name: String,
        /// Parent directory for the new skill.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// Path to the critic-sdk crate (default: the one this binary was built from).
        #[arg(long)]
        sdk: Option<PathBuf>,
    },
    /// Replay a recorded agent run on the bundled demo repository, offline.
    Demo {
        /// Which recorded run: none for the basic gates, `coharden` for a full
        /// CoHarden session (examples/<name>-run).
        name: Option<String>,
        /// The examples directory (default: the one this binary was built from).
        #[arg(long)]
        examples: Option<PathBuf>,
    },
}

/// Where `llm-complete` finds its model (the key stays in the environment).
#[derive(clap::Args, Debug)]
struct LlmArgs {
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
    fn config(self) -> Option<LlmConfig> {
        let mut c = LlmConfig::new(self.llm_base_url?, self.llm_model);
        c.api_key_env = self.llm_api_key_env;
        c.cache_dir = self.llm_cache;
        c.concurrency = self.llm_concurrency.max(1);
        c.timeout = Duration::from_secs(self.llm_timeout.max(1));
        c.attempts = self.llm_attempts.max(1);
        Some(c)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    pluggable_critic::interrupt::cleanup_on_signals();
    match run(cli.command) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // Every error of this crate already names its cause in its message,
            // which may quote a hostile manifest or git configuration.
            let message = e.to_string();
            eprintln!(
                "error: {}",
                pluggable_critic::verdict::escape_terminal(&message, true)
            );
            ExitCode::from(EXIT_ERROR)
        }
    }
}

fn init_logging(verbose: u8) {
    let level = match verbose {
        0 => tracing::Level::WARN,
        1 => tracing::Level::INFO,
        2 => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    };
    let fmt = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_target(false);
    // A directive filter compiles its directives; only pay for it when asked.
    match std::env::var("CRITIC_LOG") {
        Ok(directives) => fmt
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_new(&directives)
                    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level.as_str())),
            )
            .init(),
        Err(_) => fmt.with_max_level(level).init(),
    }
}

fn run(command: Command) -> anyhow::Result<u8> {
    match command {
        Command::Check {
            skill,
            workspace,
            events,
            events_format,
            session,
            base,
            patch,
            state_dir,
            cache_dir,
            no_cache,
            deny,
            allow_native,
            lock_timeout,
            jobs,
            unconfined_runs,
            llm,
            output,
        } => {
            let opts = CheckOptions {
                skill,
                workspace,
                events,
                events_format,
                session,
                base,
                patch_file: patch,
                state_dir,
                cache_dir: if no_cache {
                    None
                } else {
                    cache_dir.or_else(cache::default_dir)
                },
                deny,
                allow_native,
                lock_timeout: Duration::from_secs(lock_timeout),
                jobs,
                unconfined_runs,
                llm: (*llm).config(),
            };
            let mut prepared = check::prepare(&opts)?;
            let verdict = prepared.decide()?;
            // The process ends next; unmapping the compiled detectors and
            // freeing the events would only delay the answer.
            std::mem::forget(prepared);
            match output {
                Output::Json => println!("{}", serde_json::to_string_pretty(&verdict)?),
                Output::Text => print!("{}", verdict.to_text()),
            }
            Ok(if verdict.accepted {
                EXIT_ACCEPT
            } else {
                EXIT_REJECT
            })
        }
        Command::Doctor { output } => {
            let support = pluggable_critic::confine::support();
            match output {
                Output::Json => println!(
                    "{}",
                    serde_json::to_string_pretty(&pluggable_critic::confine::report(support))?
                ),
                Output::Text => print!("{}", pluggable_critic::confine::report_text(support)),
            }
            Ok(if support.missing().is_none() { 0 } else { 1 })
        }
        Command::Validate {
            skill,
            allow_native,
        } => {
            let skill = manifest::load(&skill)?;
            let rt = runtime::Runtime::new(cache::default_dir().as_deref())?;
            let m = &skill.manifest;
            println!(
                "{}: skill {} {} ({} signals)",
                skill.manifest_path.display(),
                m.name,
                m.version,
                m.signals.len()
            );
            for s in &m.signals {
                let what = if pluggable_critic::native::is_native(&s.detector_path) && !allow_native
                {
                    "native library (loads only with --allow-native)".to_string()
                } else {
                    match pluggable_critic::detector::Detector::load(
                        &rt,
                        &s.detector_path,
                        allow_native,
                    )? {
                        pluggable_critic::detector::Detector::Wasm(d) => {
                            format!("component, critic:detector@{}", d.version())
                        }
                        pluggable_critic::detector::Detector::Native(_) => {
                            "native library, ABI ok".to_string()
                        }
                    }
                };
                let kind = match s.kind {
                    manifest::SignalKind::HardGate => "hard_gate",
                    manifest::SignalKind::Soft => "soft",
                };
                println!("  ok  {:<24} {kind:<9}  {}: {what}", s.name, s.detector);
            }
            let caps: Vec<_> = m.capabilities.iter().map(|c| c.name()).collect();
            println!(
                "  capabilities: {}",
                if caps.is_empty() {
                    "none".to_string()
                } else {
                    caps.join(", ")
                }
            );
            Ok(EXIT_ACCEPT)
        }
        Command::Build { skill, check } => {
            let report = build::build_skill(&skill, check)?;
            for line in &report.lines {
                println!("{line}");
            }
            Ok(if report.differs {
                EXIT_REJECT
            } else {
                EXIT_ACCEPT
            })
        }
        Command::New { name, dir, sdk } => {
            let sdk = match sdk {
                Some(p) => p,
                None => scaffold::bundled_sdk()?,
            };
            let created = scaffold::create(&dir, &name, &sdk)?;
            println!("created skill {} in {}", name, created.display());
            println!(
                "next: critic build {0} && critic validate {0}",
                created.display()
            );
            Ok(EXIT_ACCEPT)
        }
        Command::Demo { name, examples } => {
            let examples = examples.unwrap_or_else(demo::bundled_examples);
            demo::run(&examples, name.as_deref(), &mut std::io::stdout())?;
            Ok(EXIT_ACCEPT)
        }
    }
}

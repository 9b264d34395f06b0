//! `critic hook <agent>`: answer an agent's stop hook; `critic hook install`
//! and `uninstall`: write or remove that hook in the agent's configuration.

use crate::agents::hook::{Answer, HookProtocol};
use crate::agents::install::{self, Change, Scope};
use crate::agents::{hook_protocol, hooked_agents_described};
use crate::cli::common::{seconds, SkillArgs};
use crate::evaluate::verdict::escape_terminal;
use crate::frontend::client::{ServerAddress, SERVER_ENV};
use crate::frontend::hook::{
    hook_time_limit, Hook, DEFAULT_AGENT_TIMEOUT, DEFAULT_MAX_REJECTIONS, DEFAULT_TIME_LIMIT,
    MAX_INPUT_BYTES, MIN_AGENT_TIMEOUT,
};
use clap::Parser;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `critic hook`'s flags: an agent to answer, or an action.
#[derive(clap::Args)]
#[command(
    after_help = "Answering a hook (what `hook install` writes into the agent's configuration):\n  \
                  critic hook <AGENT> --skill DIR [--fail-closed] [--max-rejections N] ...\n\
                  AGENT: claude-code, codex, copilot, gemini, cursor, openhands; \
                  `critic hook <AGENT> --help` lists every flag."
)]
pub struct Args {
    #[command(subcommand)]
    command: HookCommand,
}

#[derive(clap::Subcommand)]
enum HookCommand {
    /// Add the critic's stop hook to an agent's configuration (keeps the rest; replaces an older one of its own).
    Install(InstallArgs),
    /// Remove the critic's stop hook from an agent's configuration, and nothing else.
    Uninstall(UninstallArgs),
    /// `critic hook <agent> --skill DIR [...]`: answer that agent's stop hook
    /// (agents: claude-code, ...; see `critic hook <agent> --help`).
    #[command(external_subcommand)]
    Agent(Vec<String>),
}

/// A hook call's command line, parsed apart so that a bad one still
/// answers the agent (see [`run`]).
#[derive(clap::Parser)]
#[command(name = "critic hook", about = "Answer an agent's stop hook")]
struct Call {
    /// The agent whose stop hook this is.
    #[arg(value_parser = agent)]
    agent: &'static HookProtocol,
    #[command(flatten)]
    run: RunArgs,
}

/// The flags of a hook call.
#[derive(clap::Args)]
struct RunArgs {
    /// The agent's work tree (default: the hook input's cwd).
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// The events to judge (default: the hook input's transcript).
    #[arg(long)]
    events: Option<PathBuf>,
    /// Session id (default: the hook input's).
    #[arg(long)]
    session: Option<String>,
    /// When the critic cannot run, keep the agent working instead of letting it stop.
    #[arg(long)]
    fail_closed: bool,
    /// Ask a running `critic serve` first (a socket path or http://127.0.0.1:PORT).
    #[arg(long, env = SERVER_ENV)]
    server: Option<ServerAddress>,
    /// Append each verdict, one JSON line, to this file, and the patch it
    /// judged to round-<iteration>/patch.diff beside it (a runner's record of
    /// the session; `critic experiment` reads it).
    #[arg(long, value_name = "FILE")]
    verdict_log: Option<PathBuf>,
    #[command(flatten)]
    skill: SkillArgs,
}

#[derive(clap::Args)]
struct InstallArgs {
    /// The agent to hook.
    #[arg(value_parser = agent)]
    agent: &'static HookProtocol,
    /// Skill directory the hook runs.
    #[arg(long)]
    skill: PathBuf,
    /// Write the project's configuration or the user's.
    #[arg(long, value_enum, default_value = "project")]
    scope: ScopeArg,
    /// The project's root (for --scope project).
    #[arg(long, default_value = ".")]
    project: PathBuf,
    /// Seconds the agent gives the hook before it stops waiting; the hook's check gets a time limit a margin below it.
    #[arg(long, default_value_t = DEFAULT_AGENT_TIMEOUT.as_secs() as u32)]
    timeout: u32,
    /// More flags for the hook call, after `--` (e.g. `-- --max-rejections 3 --deny run`).
    #[arg(last = true)]
    hook_args: Vec<String>,
}

#[derive(clap::Args)]
struct UninstallArgs {
    /// The agent to unhook.
    #[arg(value_parser = agent)]
    agent: &'static HookProtocol,
    /// Edit the project's configuration or the user's.
    #[arg(long, value_enum, default_value = "project")]
    scope: ScopeArg,
    /// The project's root (for --scope project).
    #[arg(long, default_value = ".")]
    project: PathBuf,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ScopeArg {
    Project,
    User,
}

impl From<ScopeArg> for Scope {
    fn from(s: ScopeArg) -> Scope {
        match s {
            ScopeArg::Project => Scope::Project,
            ScopeArg::User => Scope::User,
        }
    }
}

fn agent(name: &str) -> Result<&'static HookProtocol, String> {
    hook_protocol(name).ok_or_else(|| {
        format!(
            "unknown agent {name:?}; expected one of:\n{}",
            hooked_agents_described()
        )
    })
}

/// Run `critic hook`. A hook call never fails: whatever goes wrong is its
/// answer to the agent, and a command line it cannot parse is answered as
/// the agent's "stop", never with an exit code the agent reads as "block"
/// (a typo in a hook's configuration must not trap the agent).
pub fn run(args: Args) -> anyhow::Result<u8> {
    let words = match args.command {
        HookCommand::Install(a) => return install(a),
        HookCommand::Uninstall(a) => return uninstall(a),
        HookCommand::Agent(words) => words,
    };
    let call =
        Call::try_parse_from(std::iter::once("critic hook".to_string()).chain(words.clone()));
    Ok(match call {
        Ok(call) => answer(call.agent, call.run),
        Err(e) => refused(e, &words),
    })
}

fn answer(protocol: &'static HookProtocol, args: RunArgs) -> u8 {
    let mut request = args.skill.request(PathBuf::from("."), None, String::new());
    // A hook always has a cap: no skill may keep an agent from stopping.
    request.max_rejections = request.max_rejections.or(Some(DEFAULT_MAX_REJECTIONS));
    // ... and a time limit: an agent that gives up waiting lets its agent stop.
    request.time_limit = request.time_limit.or(Some(DEFAULT_TIME_LIMIT));
    let verdict_log = args.verdict_log;
    let (base, patch) = (request.base.clone(), request.patch.clone());
    let hook = Hook {
        protocol,
        request,
        workspace: args.workspace,
        // An empty or relative value, or one naming no directory, is no
        // root: the project is then found as if none were given.
        reported_project: protocol
            .project_env
            .iter()
            .filter_map(std::env::var_os)
            .map(std::path::PathBuf::from)
            .find(|dir| dir.is_absolute() && dir.is_dir()),
        events: args.events,
        session: args.session,
        fail_closed: args.fail_closed,
        server: args.server,
    };
    let mut stdin = Vec::new();
    if let Err(e) = std::io::stdin()
        .take(MAX_INPUT_BYTES as u64 + 1)
        .read_to_end(&mut stdin)
    {
        return refuse(protocol, &format!("cannot read the hook input: {e}"));
    }
    let outcome = hook.run(&stdin);
    // The answer first; the agent may have closed stderr, and nothing
    // written there may keep the answer from it.
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(outcome.reply.stdout.as_bytes());
    let _ = out.flush();
    let mut err = std::io::stderr().lock();
    for notice in &outcome.notices {
        let _ = writeln!(err, "{}", escape_terminal(notice, true));
    }
    if let (Some(log), Some(verdict)) = (&verdict_log, &outcome.verdict) {
        let judged = crate::frontend::verdict_log::Judged {
            workspace: outcome.workspace.as_deref(),
            base: base.as_deref(),
            patch: patch.as_deref(),
        };
        let logged = crate::frontend::verdict_log::record(log, verdict, &judged);
        if let Err(e) = logged {
            let _ = writeln!(err, "critic hook: --verdict-log {}: {e}", log.display());
        }
    }
    outcome.reply.exit_code
}

/// The answer to a command line clap refused. For a hook call (`critic
/// hook ...`, whatever the order of its words) it is the agent's "stop" if
/// the agent is named, else exit 1: never clap's exit 2, which Claude Code,
/// Codex and the OpenHands SDK read as "block".
pub fn refused_command_line(e: clap::Error) -> u8 {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut words = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(String::as_str);
    let (verb, sub) = (words.next(), words.next());
    // `hook install` and `hook uninstall` are the user's commands, not an
    // agent's hook call: a bad one is an error like any other verb's.
    let users = matches!(sub, Some("install" | "uninstall"));
    if e.use_stderr() && (verb != Some("hook") || users) {
        let _ = e.print();
        return crate::cli::common::EXIT_ERROR;
    }
    refused(e, &args)
}

/// The answer to a hook call clap refused: the agent's "stop" if one of
/// `words` names the agent, else exit 1 (not 2, which some agents read as
/// "block"); help and version go to stdout with exit 0.
fn refused(e: clap::Error, words: &[String]) -> u8 {
    if !e.use_stderr() {
        let _ = e.print();
        return crate::cli::common::EXIT_ACCEPT;
    }
    let message = e.to_string();
    let why = message
        .lines()
        .next()
        .unwrap_or("bad command line")
        .trim_start_matches("error: ");
    match words.iter().find_map(|a| hook_protocol(a)) {
        Some(protocol) => refuse(protocol, why),
        None => {
            let _ = writeln!(
                std::io::stderr(),
                "critic hook: {}",
                escape_terminal(why, true)
            );
            crate::cli::common::EXIT_REJECT
        }
    }
}

/// Let the agent stop, saying why on stderr: the answer to a call the hook
/// cannot even start.
pub fn refuse(protocol: &HookProtocol, why: &str) -> u8 {
    let reply = (protocol.reply)(&Answer::Stop {
        notice: Some(format!("critic: {why}")),
    });
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(reply.stdout.as_bytes());
    let _ = out.flush();
    let _ = writeln!(
        std::io::stderr(),
        "critic hook {}: NOT CHECKED: {}; the agent stops unchecked",
        protocol.agent,
        escape_terminal(why, true)
    );
    reply.exit_code
}

fn install(args: InstallArgs) -> anyhow::Result<u8> {
    let protocol = args.agent;
    let skill = std::path::absolute(&args.skill)?;
    // A hook that cannot load its skill would let every finish through.
    crate::skill::load(&skill)?;
    let project = std::path::absolute(&args.project)?;
    // The agent works in the project: a skill or state it can edit is a
    // critic it can switch off. A user-wide hook has no project to check
    // against; the hook itself refuses such files in each workspace.
    if let ScopeArg::Project = args.scope {
        let state = flag(&args.hook_args, "--state-dir").map(Path::new);
        install::refuse_within_project(&project, &skill, state)?;
    }
    let time_limit = time_limit_for(args.timeout, &args.hook_args)?;
    let critic = std::env::current_exe()?;
    let mut hook_args = vec!["--skill".to_string(), skill.to_string_lossy().into_owned()];
    if let Some(limit) = time_limit {
        hook_args.extend(["--time-limit".to_string(), limit.as_secs().to_string()]);
    }
    hook_args.extend(args.hook_args);
    let command = install::command_line(&critic, protocol.agent, &hook_args);
    let file = protocol.config.file(args.scope.into(), &project)?;
    let change = install::install(
        &protocol.config,
        &file,
        protocol.agent,
        &command,
        args.timeout,
    )?;
    let what = match change {
        Change::Added => "added the critic's stop hook to",
        Change::Replaced => "replaced the critic's stop hook in",
        _ => "the critic's stop hook is already in",
    };
    println!("{what} {}", file.display());
    println!("  {command}");
    // The install's own file is not part of the agent's work.
    if let ScopeArg::Project = args.scope {
        let rel = Path::new(protocol.config.project_file);
        match install::git_exclude::add(&project, rel) {
            Ok(true) => println!(
                "kept {} out of the judged patch (.git/info/exclude)",
                rel.display()
            ),
            Ok(false) => {}
            Err(e) => eprintln!(
                "critic hook install: cannot keep {} out of the judged patch: {e}",
                rel.display()
            ),
        }
    }
    if let Some(note) = protocol.config.note {
        println!("note: {note}");
    }
    Ok(crate::cli::common::EXIT_ACCEPT)
}

/// The `--time-limit` to add to a hook the agent gives `timeout` seconds:
/// what [`hook_time_limit`] leaves, unless `hook_args` set one already
/// (`None`), which must then end before the agent's timeout too.
fn time_limit_for(timeout: u32, hook_args: &[String]) -> anyhow::Result<Option<Duration>> {
    let timeout = Duration::from_secs(timeout.into());
    if timeout < MIN_AGENT_TIMEOUT {
        anyhow::bail!(
            "--timeout {}: at least {} s; the hook's check needs time to run",
            timeout.as_secs(),
            MIN_AGENT_TIMEOUT.as_secs()
        );
    }
    let within = hook_time_limit(timeout);
    let Some(given) = flag(hook_args, "--time-limit") else {
        return Ok(Some(within));
    };
    let limit = seconds(given).map_err(|e| anyhow::anyhow!("--time-limit {given:?}: {e}"))?;
    if limit > within {
        anyhow::bail!(
            "--time-limit {given}: the agent gives the hook {} s (--timeout), and the check must \
             answer a margin before that, or the agent stops unchecked when it gives up; give \
             at most {} s, or raise --timeout",
            timeout.as_secs(),
            within.as_secs()
        );
    }
    Ok(None)
}

/// The value of the flag `name` among `args` (`name VALUE` or `name=VALUE`).
fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().enumerate().find_map(|(i, arg)| {
        if arg == name {
            args.get(i + 1).map(String::as_str)
        } else {
            arg.strip_prefix(name)?.strip_prefix('=')
        }
    })
}

fn uninstall(args: UninstallArgs) -> anyhow::Result<u8> {
    let protocol = args.agent;
    let file = protocol
        .config
        .file(args.scope.into(), &std::path::absolute(&args.project)?)?;
    match install::uninstall(&protocol.config, &file, protocol.agent)? {
        Change::Removed(0) => println!("no stop hook of the critic's in {}", file.display()),
        Change::Removed(n) => println!(
            "removed {n} stop hook(s) of the critic's from {}",
            file.display()
        ),
        _ => {}
    }
    if let ScopeArg::Project = args.scope {
        let project = std::path::absolute(&args.project)?;
        let rel = Path::new(protocol.config.project_file);
        for gone in install::remove_if_empty(&protocol.config, protocol.agent, &project, rel) {
            println!("removed {} (nothing else was in it)", gone.display());
        }
        if install::git_exclude::remove(&project, rel)? {
            println!("removed {} from .git/info/exclude", rel.display());
        }
    }
    Ok(crate::cli::common::EXIT_ACCEPT)
}

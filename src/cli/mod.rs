//! The `critic` command line: clap's definitions and one file per verb.

mod build;
mod check;
mod common;
mod demo;
mod doctor;
mod eliminate;
mod events;
mod experiment;
mod hook;
mod mpe;
mod new;
mod serve;
mod state;
mod validate;

use clap::{Parser, Subcommand};
use common::EXIT_ERROR;
use std::process::ExitCode;

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

#[derive(Subcommand)]
enum Command {
    /// Judge one finish: exit 0 accept, 1 reject, 2 error.
    Check(Box<check::Args>),
    /// Report which confinement features this machine has for `run` commands.
    Doctor(doctor::Args),
    /// Check a skill: manifest, detectors (components of a supported version), capabilities.
    Validate(validate::Args),
    /// Rebuild a skill's detectors from source (reproducibly) into the skill directory.
    Build(build::Args),
    /// Scaffold a new skill: manifest, a detector (a Rust crate, or Python with --lang python), README and a test.
    New(new::Args),
    /// Replay a recorded agent run on the bundled demo repository, offline.
    Demo(demo::Args),
    /// Keep skills warm and judge finishes sent over HTTP (a Unix socket or loopback TCP).
    Serve(Box<serve::Args>),
    /// Answer an agent's stop hook (claude-code, codex, ...); `hook install` / `uninstall` set it up.
    Hook(Box<hook::Args>),
    /// Print an agent transcript's events as detectors see them.
    Events(events::Args),
    /// List, show or reset the sessions (finish counts, round state) kept for a workspace.
    State(state::Args),
    /// Reduce a Python function to what its uncovered lines need (covered-code elimination).
    Eliminate(eliminate::Args),
    /// Class generated tests Rigorous, Lax or Misaligned against a pool of wrong fixes (MPE).
    Mpe(Box<mpe::Args>),
    /// Run arms x instances x samples with an agent, one critic per arm, and grade the patches.
    Experiment(experiment::Args),
}

/// Run the command line of the `critic` binary.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return ExitCode::from(hook::refused_command_line(e)),
    };
    init_logging(cli.verbose);
    // A server handles its signals itself: it lets checks in flight finish.
    if !matches!(cli.command, Command::Serve(_)) {
        crate::sys::interrupt::cleanup_on_signals();
    }
    let result = match cli.command {
        Command::Check(args) => check::run(*args),
        Command::Doctor(args) => doctor::run(args),
        Command::Validate(args) => validate::run(args),
        Command::Build(args) => build::run(args),
        Command::New(args) => new::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Serve(args) => serve::run(*args),
        Command::Hook(args) => hook::run(*args),
        Command::Events(args) => events::run(args),
        Command::State(args) => state::run(args),
        Command::Eliminate(args) => eliminate::run(args),
        Command::Mpe(args) => mpe::run(*args),
        Command::Experiment(args) => experiment::run(args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // Every error of the library names its cause in its message,
            // which may quote a hostile manifest or git configuration.
            eprintln!(
                "error: {}",
                crate::evaluate::verdict::escape_terminal(&e.to_string(), true)
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
        .with_writer(|| EscapedStderr)
        .with_ansi(false)
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

/// stderr for log lines, their control characters escaped: a field may
/// quote a transcript's path or a detector's words, which must not drive the
/// user's terminal.
struct EscapedStderr;

impl std::io::Write for EscapedStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let escaped = crate::evaluate::verdict::escape_terminal(&text, true);
        // A closed stderr loses the log, never the answer.
        let _ = std::io::stderr().write_all(escaped.as_bytes());
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let _ = std::io::stderr().flush();
        Ok(())
    }
}

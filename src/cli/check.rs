//! `critic check`: judge one finish and print the verdict.

use crate::cli::common::{Output, SkillArgs, EXIT_ACCEPT, EXIT_REJECT};
use crate::evaluate::verdict::escape_terminal;
use crate::frontend::client::{self, ClientError, ServerAddress, SERVER_ENV};
use crate::frontend::{oneshot, CheckRequest, DEFAULT_SESSION};
use critic_sdk::EventKind;
use std::path::PathBuf;

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

impl CheckArgs {
    /// The request these flags describe.
    pub fn request(self) -> CheckRequest {
        let session = self.session.unwrap_or_else(|| {
            match crate::agents::session_id::of_file(&self.events) {
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
        if let Ok(read) = crate::agents::load_transcript(events, Some(format)) {
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
        let judged = crate::frontend::verdict_log::Judged {
            workspace: Some(&request.workspace),
            base: request.base.as_deref(),
            patch: request.patch.as_deref(),
        };
        // The verdict stands whether or not the record could be written.
        if let Err(e) = crate::frontend::verdict_log::record(log, &verdict, &judged) {
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

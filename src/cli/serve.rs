//! `critic serve`: a warm host answering checks over HTTP.

use crate::cli::common::HostArgs;
use crate::frontend::pinned::Pin;
use crate::frontend::server::{self, ServerConfig};
use crate::frontend::service::Service;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// `critic serve`'s flags.
#[derive(clap::Args)]
pub struct Args {
    /// Listen on this Unix socket (created mode 0600: only you can connect).
    #[arg(long)]
    socket: Option<PathBuf>,
    /// Listen on this loopback address too (e.g. 127.0.0.1:7878); clients
    /// must send the token in CRITIC_SERVER_TOKEN.
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Checks running at once (default: two per core).
    #[arg(long)]
    concurrency: Option<usize>,
    /// Checks waiting for a slot; more are refused with 503.
    #[arg(long, default_value_t = 64)]
    queue: usize,
    /// Largest request body, in MiB.
    #[arg(long, default_value_t = 64)]
    max_body_mib: usize,
    /// Seconds a check may take before its client gets 504; each check's time limit is this less a tenth (1 s to 60 s), so it answers with a verdict first.
    #[arg(long, default_value_t = 600)]
    check_timeout: u64,
    #[command(flatten)]
    pin: PinArgs,
    #[command(flatten)]
    host: HostArgs,
}

/// Pinning the server to one session (how `critic experiment` serves an
/// agent's confined turn): requests naming another skill or workspace, a
/// base, a patch, another state directory, or events outside the named
/// directories are refused (403).
#[derive(clap::Args)]
struct PinArgs {
    /// Judge only this skill.
    #[arg(long, value_name = "DIR", requires_all = ["pin_workspace", "pin_state_dir"])]
    pin_skill: Option<PathBuf>,
    /// Judge only this workspace (or a directory in it).
    #[arg(long, value_name = "DIR", requires = "pin_skill")]
    pin_workspace: Option<PathBuf>,
    /// Keep every request's state here.
    #[arg(long, value_name = "DIR", requires = "pin_skill")]
    pin_state_dir: Option<PathBuf>,
    /// At most this many rejections per session.
    #[arg(long, value_name = "N", default_value_t = crate::frontend::hook::DEFAULT_MAX_REJECTIONS, requires = "pin_skill")]
    pin_max_rejections: u32,
    /// Read events files only in this directory (repeatable; none: events inline only).
    #[arg(long, value_name = "DIR", requires = "pin_skill")]
    pin_events_under: Vec<PathBuf>,
    /// Append each verdict to this file, and the patch it judged to round-<iteration>/patch.diff beside it.
    #[arg(long, value_name = "FILE", requires = "pin_skill")]
    verdict_log: Option<PathBuf>,
}

impl PinArgs {
    fn pin(self) -> anyhow::Result<Option<Pin>> {
        let (Some(skill), Some(workspace), Some(state_dir)) =
            (self.pin_skill, self.pin_workspace, self.pin_state_dir)
        else {
            return Ok(None);
        };
        let pin = Pin {
            skill,
            workspace,
            state_dir,
            max_rejections: self.pin_max_rejections,
            events_under: self.pin_events_under,
            verdict_log: self.verdict_log,
        };
        pin.resolved()
            .map(Some)
            .map_err(|e| anyhow::anyhow!("--pin-*: {e}"))
    }
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let mut config = ServerConfig::new(args.socket, args.listen);
    if let Some(n) = args.concurrency {
        config.concurrency = n.max(1);
    }
    config.queue = args.queue;
    config.max_body = args.max_body_mib.max(1) << 20;
    config.check_timeout = Duration::from_secs(args.check_timeout.max(1));
    config.pin = args.pin.pin()?;
    let service = Service::new(args.host.settings())?;
    let places: Vec<String> = config
        .socket
        .iter()
        .map(|p| p.display().to_string())
        .chain(config.listen.iter().map(|a| format!("http://{a}")))
        .collect();
    server::serve(service, config, || {
        eprintln!("critic serve: listening on {}", places.join(" and "));
    })?;
    eprintln!("critic serve: stopped");
    Ok(crate::cli::common::EXIT_ACCEPT)
}

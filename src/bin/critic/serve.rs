//! `critic serve`: a warm host answering checks over HTTP.

use crate::check::HostArgs;
use pluggable_critic::run::server::{self, ServerConfig};
use pluggable_critic::Service;
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
    host: HostArgs,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let mut config = ServerConfig::new(args.socket, args.listen);
    if let Some(n) = args.concurrency {
        config.concurrency = n.max(1);
    }
    config.queue = args.queue;
    config.max_body = args.max_body_mib.max(1) << 20;
    config.check_timeout = Duration::from_secs(args.check_timeout.max(1));
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
    Ok(crate::EXIT_ACCEPT)
}

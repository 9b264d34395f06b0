//! `critic events`: an agent's transcript as the events detectors see.

use crate::agents::{self, EventsFormat};
use crate::cli::common::Output;
use crate::evaluate::verdict::escape_terminal;
use std::io::Write;
use std::path::PathBuf;

/// `critic events`' flags.
#[derive(clap::Args)]
pub struct Args {
    /// A transcript file, or an OpenHands events/ directory.
    events: PathBuf,
    /// Force the format instead of detecting it.
    #[arg(long)]
    events_format: Option<EventsFormat>,
    /// `json`: the events as detectors receive them; `text`: one line each.
    #[arg(long, value_enum, default_value = "text")]
    output: Output,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    // Printed without their JSON: a large one need not keep it.
    let events = agents::load_transcript(&args.events, args.events_format)?.events;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match args.output {
        Output::Json => {
            let lean: Vec<_> = events.iter().map(|e| e.lean()).collect();
            serde_json::to_writer_pretty(&mut out, &lean)?;
            writeln!(out)?;
        }
        Output::Text => {
            for e in &events {
                writeln!(out, "{}", escape_terminal(&summary(e), false))?;
            }
        }
    }
    out.flush()?;
    Ok(crate::cli::common::EXIT_ACCEPT)
}

/// One line of an event: index, kind, who, the tool, and the gist.
fn summary(e: &critic_sdk::Event) -> String {
    let kind = serde_json::to_value(e.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let mut line = format!(
        "{:>5} {kind:<11} {:<11}",
        e.index,
        e.source.as_deref().unwrap_or("-")
    );
    if let Some(tool) = &e.tool {
        line.push_str(&format!(" [{tool}]"));
    }
    if let Some(code) = e.exit_code {
        line.push_str(&format!(" exit {code}"));
    }
    let gist = e
        .command()
        .map(str::to_string)
        .or_else(|| e.text.clone())
        .or_else(|| e.output.clone())
        .or_else(|| e.arguments.as_ref().map(|a| a.to_string()))
        .unwrap_or_default();
    let gist: String = gist.split_whitespace().collect::<Vec<_>>().join(" ");
    if !gist.is_empty() {
        let short: String = gist.chars().take(100).collect();
        line.push_str(&format!(" {short}"));
        if short.len() < gist.len() {
            line.push('…');
        }
    }
    line
}

//! `critic doctor`: what this machine offers to confine `run` commands.

use crate::Output;
use pluggable_critic::host::confine;

/// `critic doctor`'s flags.
#[derive(clap::Args)]
pub struct Args {
    /// Report format on stdout.
    #[arg(long, value_enum, default_value = "text")]
    output: Output,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let support = confine::support();
    match args.output {
        Output::Json => println!(
            "{}",
            serde_json::to_string_pretty(&confine::report(support))?
        ),
        Output::Text => print!("{}", confine::report_text(support)),
    }
    Ok(if support.missing().is_none() { 0 } else { 1 })
}

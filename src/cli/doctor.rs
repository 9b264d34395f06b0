//! `critic doctor`: what this machine offers to confine `run` commands
//! and agents' turns, and whether it can build Rust detectors.

use crate::cli::common::Output;
use crate::sandbox::confine;
use crate::skill::compile;

/// `critic doctor`'s flags.
#[derive(clap::Args)]
pub struct Args {
    /// Report format on stdout.
    #[arg(long, value_enum, default_value = "text")]
    output: Output,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let support = confine::support();
    // The toolchain of the current directory (its rust-toolchain.toml), as
    // `critic build` of a skill there would use it.
    let wasm = compile::missing_target(None);
    match args.output {
        Output::Json => {
            let mut report = confine::report(support);
            report["rust_detectors"] = serde_json::json!(wasm
                .as_deref()
                .unwrap_or(&format!("{} target installed", compile::TARGET)));
            println!("{}", serde_json::to_string_pretty(&report)?);
        }
        Output::Text => {
            print!("{}", confine::report_text(support));
            match &wasm {
                None => println!(
                    "yes Rust detectors: the {} target is installed",
                    compile::TARGET
                ),
                Some(missing) => println!("NO  Rust detectors (critic build): {missing}"),
            }
        }
    }
    Ok(if support.missing().is_none() { 0 } else { 1 })
}

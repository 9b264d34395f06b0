//! `critic build`: rebuild a skill's detectors from source, reproducibly.

use crate::{EXIT_ACCEPT, EXIT_REJECT};
use pluggable_critic::skill::compile;
use std::path::PathBuf;

/// `critic build`'s flags.
#[derive(clap::Args)]
pub struct Args {
    /// Skill directory.
    skill: PathBuf,
    /// Build, but only compare with the committed .wasm files; fail if they differ.
    #[arg(long)]
    check: bool,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let report = compile::build_skill(&args.skill, args.check)?;
    for line in &report.lines {
        println!("{line}");
    }
    Ok(if report.differs {
        EXIT_REJECT
    } else {
        EXIT_ACCEPT
    })
}

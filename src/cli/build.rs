//! `critic build`: rebuild a skill's detectors from source, reproducibly.

use crate::cli::common::{EXIT_ACCEPT, EXIT_REJECT};
use crate::skill::compile;
use crate::skill::confined_build::Trust;
use std::path::PathBuf;

/// `critic build`'s flags.
#[derive(clap::Args)]
pub struct Args {
    /// Skill directory.
    skill: PathBuf,
    /// Build, but only compare with the committed .wasm files; fail if they differ.
    #[arg(long)]
    check: bool,
    /// Run the skill's build scripts, procedural macros and Python imports
    /// with your full rights instead of confined (for a skill you trust, on
    /// a machine that cannot confine).
    #[arg(long)]
    trust_skill: bool,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let trust = if args.trust_skill {
        Trust::Trusted
    } else {
        Trust::Confined
    };
    let report = compile::build_skill(&args.skill, args.check, trust)?;
    for line in &report.lines {
        println!("{line}");
    }
    Ok(if report.differs {
        EXIT_REJECT
    } else {
        EXIT_ACCEPT
    })
}

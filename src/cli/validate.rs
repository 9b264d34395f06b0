//! `critic validate`: load a skill the way a check would and report on it.

use crate::cli::common::EXIT_ACCEPT;
use crate::detector::wasm::{cache, Runtime};
use crate::detector::{native, Detector};
use crate::evaluate::scorer::SkillCritic;
use crate::skill::{self, SignalKind};
use std::path::PathBuf;

/// `critic validate`'s flags.
#[derive(clap::Args)]
pub struct Args {
    /// Skill directory.
    skill: PathBuf,
    /// Also load native detectors.
    #[arg(long)]
    allow_native: bool,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let skill = skill::load(&args.skill)?;
    let rt = Runtime::new(cache::default_dir().as_deref())?;
    let m = &skill.manifest;
    println!(
        "{}: skill {} {} ({} signals)",
        skill.manifest_path.display(),
        m.name,
        m.version,
        m.signals.len()
    );
    for s in &m.signals {
        let what = if native::is_native(&s.detector_path) && !args.allow_native {
            "native library (loads only with --allow-native)".to_string()
        } else {
            match Detector::load(&rt, &s.detector_path, args.allow_native)? {
                Detector::Wasm(d) => format!("component, critic:detector@{}", d.version()),
                Detector::Native(_) => "native library, ABI ok".to_string(),
            }
        };
        let kind = match s.kind {
            SignalKind::HardGate => "hard_gate",
            SignalKind::Soft => "soft",
        };
        println!("  ok  {:<24} {kind:<9}  {}: {what}", s.name, s.detector);
    }
    let caps: Vec<_> = m.capabilities.iter().map(|c| c.name()).collect();
    println!(
        "  capabilities: {}",
        if caps.is_empty() {
            "none".to_string()
        } else {
            caps.join(", ")
        }
    );
    // Each detector reads its config on an empty finish, nothing allowed.
    // A skill may leave a value for its user to give (tdd's per-task test),
    // so what a detector refuses is shown, not failed on here; `critic
    // experiment` refuses an arm whose config a detector refuses.
    let native = m
        .signals
        .iter()
        .any(|s| native::is_native(&s.detector_path));
    if native && !args.allow_native {
        println!("  config: not checked (a native detector loads only with --allow-native)");
        return Ok(EXIT_ACCEPT);
    }
    let problems = SkillCritic::config_problems_of(&args.skill, &rt, args.allow_native)?;
    if problems.is_empty() {
        println!("  config: every detector reads it");
    }
    for (signal, message) in &problems {
        println!("  config of `{signal}` as it stands, refused by its detector: {message}");
    }
    Ok(EXIT_ACCEPT)
}

//! Fires when the patch touches a file outside the configured globs, e.g. a
//! source file during a phase that may only add tests.

use critic_sdk::{DetectorInput, DetectorOutput};
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Paths the patch may touch.
    allow: Vec<String>,
    /// Paths it may never touch, even when `allow` matches.
    #[serde(default)]
    deny: Vec<String>,
}

fn globs(patterns: &[String], field: &str) -> Result<GlobSet, String> {
    let mut builder = GlobSetBuilder::new();
    for p in patterns {
        let glob = Glob::new(p).map_err(|e| format!("config.{field}: bad glob {p:?}: {e}"))?;
        builder.add(glob);
    }
    builder.build().map_err(|e| format!("config.{field}: {e}"))
}

/// The detector.
pub fn detect(input: &DetectorInput) -> Result<DetectorOutput, String> {
    let config: Config = input.config_as()?;
    if config.allow.is_empty() {
        return Err("config.allow is empty: list the globs the patch may touch".into());
    }
    let allow = globs(&config.allow, "allow")?;
    let deny = globs(&config.deny, "deny")?;
    let mut outside: Vec<&str> = Vec::new();
    for file in &input.patch.files {
        for path in std::iter::once(file.path.as_str()).chain(file.old_path.as_deref()) {
            if (!allow.is_match(path) || deny.is_match(path)) && !outside.contains(&path) {
                outside.push(path);
            }
        }
    }
    if outside.is_empty() {
        return Ok(DetectorOutput::pass());
    }
    let list = outside
        .iter()
        .map(|p| format!("- {p}"))
        .collect::<Vec<_>>()
        .join("\n");
    Ok(DetectorOutput::fire(format!(
        "Your patch changes files this phase does not allow:\n{list}\n\
         Only these paths may change: {}. Revert the other files (for example with \
         `git checkout -- <file>`, or delete new files) and finish again.",
        config.allow.join(", ")
    ))
    .with_metadata(json!({ "outside": outside, "allow": config.allow, "deny": config.deny })))
}

critic_sdk::export_detector!(detect);

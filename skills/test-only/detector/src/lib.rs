//! The test-only enforcement gate: fires when the patch changes any file that is
//! not a test. Test files are those the host classified as tests (the skill's
//! `test_patterns`), plus any glob in `config.also_allow`.

use critic_sdk::{DetectorInput, DetectorOutput};
use globset::{Glob, GlobSetBuilder};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Non-test paths that may change anyway (fixtures, conftest.py, ...).
    #[serde(default)]
    also_allow: Vec<String>,
}

/// The detector.
pub fn detect(input: &DetectorInput) -> Result<DetectorOutput, String> {
    let config: Config = input.config_as()?;
    let mut builder = GlobSetBuilder::new();
    for p in &config.also_allow {
        builder.add(Glob::new(p).map_err(|e| format!("config.also_allow: bad glob {p:?}: {e}"))?);
    }
    let also = builder.build().map_err(|e| e.to_string())?;
    let offending: Vec<&str> = input
        .patch
        .source_files()
        .map(|f| f.path.as_str())
        .filter(|p| !also.is_match(p))
        .collect();
    if offending.is_empty() {
        return Ok(DetectorOutput::pass().with_metadata(json!({
            "test_files": input.patch.test_files().map(|f| f.path.as_str()).collect::<Vec<_>>()
        })));
    }
    let list = offending
        .iter()
        .map(|p| format!("- {p}"))
        .collect::<Vec<_>>()
        .join("\n");
    Ok(DetectorOutput::fire(format!(
        "This task asks for tests only, but your patch also changes non-test files:\n{list}\n\
         Restore them to their original content (`git checkout -- <file>`) and keep your \
         changes in test files, then finish again."
    ))
    .with_metadata(json!({ "non_test_files": offending })))
}

critic_sdk::export_detector!(detect);

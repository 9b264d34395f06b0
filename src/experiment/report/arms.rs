//! What each arm of the report was: its skill (name, version, digest,
//! gates), `max_iterations`, config, task template, and its role as the
//! runs show it (an arm whose final patches change only tests resolves
//! nothing by construction); and the experiment's settings.

use crate::experiment::db::{Run, Status};
use crate::skill::SignalKind;
use crate::workspace::TestClassifier;
use serde::Serialize;
use serde_json::Value;
use std::path::Path;

/// One arm's definition, as the report shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ArmDefinition {
    /// The arm.
    pub arm: String,
    /// The skill's name and version (`None`: its copy cannot be read).
    pub skill: Option<String>,
    /// What the skill says it does.
    pub description: Option<String>,
    /// SHA-256 of the skill copy that ran.
    pub digest: String,
    /// Rejections before the critic accepts anyway.
    pub max_iterations: Option<u32>,
    /// The arm's config overrides, as written.
    pub config: Value,
    /// The task template: the arm's own file, or the skill's.
    pub task: String,
    /// The skill's signals: `name (hard gate)`, `name (soft)`.
    pub gates: Vec<String>,
    /// Every run with a final patch changed only files the skill counts as
    /// tests: the arm writes tests, and its resolved rate is 0 by
    /// construction.
    pub tests_only: bool,
}

/// The definition of each arm of `manifest`, read from its skill copy
/// under `out/arms/` where there is one, with `runs` for its role.
pub fn definitions(out: &Path, manifest: &Value, runs: &[Run]) -> Vec<ArmDefinition> {
    let Some(arms) = manifest["arms"].as_object() else {
        return Vec::new();
    };
    arms.iter()
        .map(|(name, recorded)| {
            let written = &manifest["experiment"]["arms"][name];
            let skill = crate::skill::load(&out.join("arms").join(name).join("skill")).ok();
            let patterns = skill
                .as_ref()
                .map(|s| s.manifest.test_patterns.clone())
                .unwrap_or_default();
            let tests = TestClassifier::new(&patterns).ok();
            let patched: Vec<&Run> = runs
                .iter()
                .filter(|r| &r.key.arm == name && r.status == Status::Ok)
                .filter(|r| !r.model_patch.trim().is_empty())
                .collect();
            let tests_only = !patched.is_empty()
                && tests.is_some_and(|t| {
                    patched
                        .iter()
                        .all(|r| changed_files(&r.model_patch).all(|f| t.is_test(f)))
                });
            ArmDefinition {
                arm: name.clone(),
                skill: skill
                    .as_ref()
                    .map(|s| format!("{} {}", s.manifest.name, s.manifest.version)),
                description: skill.as_ref().map(|s| s.manifest.description.clone()),
                digest: recorded["skill_digest"].as_str().unwrap_or("?").to_string(),
                max_iterations: skill.as_ref().map(|s| s.manifest.max_iterations),
                config: written.get("config").cloned().unwrap_or(Value::Null),
                task: written["task"]
                    .as_str()
                    .map_or("the skill's own".to_string(), str::to_string),
                gates: skill
                    .iter()
                    .flat_map(|s| &s.manifest.signals)
                    .map(|g| {
                        let kind = match g.kind {
                            SignalKind::HardGate => "hard gate",
                            SignalKind::Soft => "soft",
                        };
                        format!("{} ({kind})", g.name)
                    })
                    .collect(),
                tests_only,
            }
        })
        .collect()
}

/// The files a git diff changes (its `+++ b/` lines).
fn changed_files(patch: &str) -> impl Iterator<Item = &str> {
    patch
        .lines()
        .filter_map(|l| l.strip_prefix("+++ b/"))
        .map(str::trim_end)
}

/// An arm's definition as the report's table shows it.
#[derive(Serialize)]
pub(super) struct ArmRow<'a> {
    #[serde(flatten)]
    definition: &'a ArmDefinition,
    /// The config overrides as JSON text, or what stands in their place.
    config_text: String,
}

/// The experiment's settings as the report shows them.
#[derive(Serialize)]
pub(super) struct Settings {
    agent: String,
    model: String,
    budget: String,
    seed: u64,
    version: String,
}

/// The rows of the arms' table.
pub(super) fn rows(definitions: &[ArmDefinition]) -> Vec<ArmRow<'_>> {
    definitions
        .iter()
        .map(|d| ArmRow {
            definition: d,
            config_text: if d.config.is_null() {
                "(the skill's)".to_string()
            } else {
                d.config.to_string()
            },
        })
        .collect()
}

/// The experiment's settings, from its manifest.
pub(super) fn settings(manifest: &Value) -> Settings {
    let e = &manifest["experiment"];
    let setting = |v: &Value| {
        if v.is_null() {
            "(none)".to_string()
        } else {
            v.to_string()
        }
    };
    let model = &e["model"];
    Settings {
        agent: setting(&e["agent"]),
        model: setting(&serde_json::json!({"model": model["model"], "base_url": model["base_url"], "price": model["price"]})),
        budget: setting(&e["budget"]),
        seed: manifest["seed"].as_u64().unwrap_or(0),
        version: manifest["tool"]["version"].as_str().unwrap_or("?").to_string(),
    }
}

//! `critic experiment merge`: the outputs of shards (each its own output
//! directory) combined into one, as if one machine had made every run. The
//! shards' manifests must agree on everything but the shard; a run two
//! inputs hold must have the same result in both.

use crate::experiment::db::Db;
use crate::experiment::{export, manifest, outcome::ExperimentError};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// What a merge did.
#[derive(Debug)]
pub struct Merged {
    /// Runs in the merged output.
    pub runs: usize,
}

fn output(e: impl std::fmt::Display) -> ExperimentError {
    ExperimentError::Output(e.to_string())
}

/// The manifest of `dir`, without its `shard`.
fn manifest_of(dir: &Path) -> Result<Value, ExperimentError> {
    let path = dir.join(manifest::FILE);
    let bytes = std::fs::read(&path).map_err(|e| {
        output(format!(
            "{}: {e} (is {} an experiment's output directory?)",
            path.display(),
            dir.display()
        ))
    })?;
    let mut value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| output(format!("{}: not a manifest: {e}", path.display())))?;
    if let Some(m) = value.as_object_mut() {
        m.insert("shard".into(), Value::Null);
    }
    Ok(value)
}

/// Merge `inputs` into `out`.
pub fn merge(inputs: &[PathBuf], out: &Path) -> Result<Merged, ExperimentError> {
    let Some(first) = inputs.first() else {
        return Err(output("give at least one shard's output directory"));
    };
    let wanted = manifest_of(first)?;
    for dir in &inputs[1..] {
        let other = manifest_of(dir)?;
        if other != wanted {
            let changed: Vec<&str> = wanted
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, v)| other.get(k.as_str()) != Some(v))
                .map(|(k, _)| k.as_str())
                .collect();
            return Err(output(format!(
                "{} and {}: not shards of one experiment (their manifests differ in: {})",
                first.display(),
                dir.display(),
                changed.join(", ")
            )));
        }
    }
    std::fs::create_dir_all(out).map_err(|e| output(format!("{}: {e}", out.display())))?;
    let _lock = manifest::lock(out).map_err(output)?;
    manifest::refuse_other(out, &wanted).map_err(output)?;
    manifest::write(out, &wanted).map_err(output)?;
    let db = Db::open(&out.join("results.sqlite"))?;
    for dir in inputs {
        if std::fs::canonicalize(dir).ok() == std::fs::canonicalize(out).ok() {
            continue;
        }
        let clashes = db.absorb(&dir.join("results.sqlite"))?;
        if !clashes.is_empty() {
            let listed: Vec<String> = clashes.iter().map(|k| k.to_string()).collect();
            return Err(output(format!(
                "{}: these runs are in the merge already with other results: {}; nothing of \
                 this shard was taken",
                dir.display(),
                listed.join(", ")
            )));
        }
        for sub in ["runs", "arms", "preflight"] {
            copy_missing(&dir.join(sub), &out.join(sub)).map_err(output)?;
        }
    }
    let runs = db.runs()?;
    // The merge's plan is its inputs' plans together, for `status`.
    let mut plan: Vec<serde_json::Value> = Vec::new();
    for dir in inputs {
        if let Ok(bytes) = std::fs::read(dir.join(crate::experiment::layout::PLAN_FILE)) {
            if let Ok(keys) = serde_json::from_slice::<Vec<serde_json::Value>>(&bytes) {
                plan.extend(keys);
            }
        }
    }
    plan.sort_by_key(|k| k.to_string());
    plan.dedup();
    let plan_file = out.join(crate::experiment::layout::PLAN_FILE);
    crate::sys::atomic_file::write(&plan_file, &serde_json::to_vec(&plan).expect("JSON"), true)
        .map_err(|e| output(format!("{}: {e}", plan_file.display())))?;
    let name = wanted["name"].as_str().unwrap_or("experiment");
    export::write(out, name, &runs).map_err(output)?;
    crate::experiment::report::write(out, &wanted, &runs, &db, None)?;
    Ok(Merged { runs: runs.len() })
}

/// Copy what `from` has and `to` lacks, file by file.
fn copy_missing(from: &Path, to: &Path) -> Result<(), String> {
    let Ok(entries) = std::fs::read_dir(from) else {
        return Ok(());
    };
    std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", from.display()))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry
            .file_type()
            .map_err(|e| format!("{}: {e}", src.display()))?;
        if kind.is_dir() {
            copy_missing(&src, &dst)?;
        } else if kind.is_file() && !dst.exists() {
            std::fs::copy(&src, &dst).map_err(|e| format!("{}: {e}", src.display()))?;
        }
    }
    Ok(())
}

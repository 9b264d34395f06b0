//! `OUT/manifest.json`: what an experiment asked for, written before its
//! first run and never silently changed. It holds the experiment file as
//! resolved, the instance ids, every arm's skill digest and overrides, the
//! model, seed and samples, the shard, and this tool's version and binary
//! digest. A rerun with a different manifest replaces it, the old kept as
//! `manifest.<n>.json`; results from two setups never mix because each run
//! is reused only under its own definition (see [`super::rebuild`]).

use crate::experiment::arm;
use crate::experiment::file::Experiment;
use crate::experiment::options::Shard;
use crate::experiment::outcome::ExperimentError;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::Path;

/// The manifest's file name.
pub const FILE: &str = "manifest.json";

/// The manifest of `exp` run over `ids` with `arms`.
pub fn of(
    exp: &Experiment,
    ids: &[&str],
    arms: &[arm::Prepared],
    shard: Option<Shard>,
    critic: &Path,
) -> Value {
    let binary = std::fs::read(critic)
        .map(|b| hex::encode(Sha256::digest(&b)))
        .unwrap_or_else(|e| format!("unreadable: {e}"));
    json!({
        "name": exp.name,
        "experiment": exp.resolved,
        "instance_ids": ids,
        "arms": arms.iter().map(|a| (a.name.clone(), json!({
            "skill_digest": a.digest,
            "config": a.config,
            "vars": a.vars,
        }))).collect::<serde_json::Map<_, _>>(),
        "samples": exp.samples,
        "seed": exp.seed,
        "model": exp.model.as_ref().map(|m| json!({"base_url": m.base_url, "model": m.model})),
        "shard": shard.map(|s| format!("{}/{}", s.index, s.count)),
        "tool": {"version": env!("CARGO_PKG_VERSION"), "binary_sha256": binary},
    })
}

/// Write `manifest` into `out`. A different one there is kept as
/// `manifest.<n>.json` (which runs it still holds is the runs' own
/// business: see [`super::rebuild`]).
pub fn write(out: &Path, manifest: &Value) -> Result<(), String> {
    let path = out.join(FILE);
    let text = serde_json::to_string_pretty(manifest).expect("JSON values serialize") + "\n";
    match std::fs::read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e}", path.display())),
        Ok(old) => {
            if serde_json::from_slice::<Value>(&old).ok().as_ref() == Some(manifest) {
                return Ok(());
            }
            let mut n = 1;
            while out.join(format!("manifest.{n}.json")).exists() {
                n += 1;
            }
            std::fs::rename(&path, out.join(format!("manifest.{n}.json")))
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
    }
    crate::sys::atomic_file::write(&path, text.as_bytes(), true)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Refuse `out` if it holds an experiment whose manifest differs from
/// `manifest` (merging shards into it would mix two setups).
pub fn refuse_other(out: &Path, manifest: &Value) -> Result<(), String> {
    let path = out.join(FILE);
    let old = match std::fs::read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
        Ok(old) => old,
    };
    let old: Value = serde_json::from_slice(&old).map_err(|e| {
        format!(
            "{}: not a manifest ({e}); this directory is not an experiment's output",
            path.display()
        )
    })?;
    let changed: Vec<&str> = manifest
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, v)| old.get(k.as_str()) != Some(v))
        .map(|(k, _)| k.as_str())
        .collect();
    if changed.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{}: this output directory holds an experiment with a different manifest (changed: {}); \
         use another output directory",
        path.display(),
        changed.join(", ")
    ))
}

/// An exclusive hold on `out` for as long as it lives: a second experiment
/// writing into the same directory is refused, not interleaved.
pub struct Lock(#[allow(dead_code)] std::fs::File);

/// Take `out`'s lock.
pub fn lock(out: &Path) -> Result<Lock, String> {
    let path = out.join(".lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).map_err(
        |_| {
            format!(
                "{}: another `critic experiment` is writing into this directory; wait for it or \
                 use another --output-dir",
                out.display()
            )
        },
    )?;
    Ok(Lock(file))
}

/// `OUT/manifest.json` as written.
pub fn read(out: &Path) -> Result<serde_json::Value, ExperimentError> {
    let path = out.join(FILE);
    std::fs::read(&path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
        .map_err(|e| {
            ExperimentError::Output(format!(
                "{}: {e} (is {} an experiment's output directory?)",
                path.display(),
                out.display()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_manifest_takes_the_place_and_the_old_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let a = json!({"name": "x", "seed": 0});
        write(dir.path(), &a).unwrap();
        write(dir.path(), &a).unwrap();
        assert!(!dir.path().join("manifest.1.json").exists());
        let b = json!({"name": "x", "seed": 1});
        write(dir.path(), &b).unwrap();
        let read = |f: &str| -> Value {
            serde_json::from_slice(&std::fs::read(dir.path().join(f)).unwrap()).unwrap()
        };
        assert_eq!(
            (read("manifest.1.json"), read(FILE)),
            (a.clone(), b.clone())
        );
        refuse_other(dir.path(), &b).unwrap();
        let e = refuse_other(dir.path(), &a).unwrap_err();
        assert!(e.contains("changed: seed"), "{e}");
    }

    #[test]
    fn a_second_writer_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let held = lock(dir.path()).unwrap();
        let e = lock(dir.path()).err().expect("held");
        assert!(e.contains("another `critic experiment`"), "{e}");
        drop(held);
        lock(dir.path()).unwrap();
    }
}

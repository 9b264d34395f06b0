//! The output directory of a run, and what makes it resumable.
//!
//! ```text
//! OUT/run.json                          the parameters of the last run
//! OUT/pairs/<instance>/<generator>.json one finished (instance, generator)
//! OUT/variants/<instance>/<generator>.jsonl  its variants' outcomes
//! OUT/pool/<generator>/<instance>/*.diff     its admissible variants (a --pool DIR)
//! OUT/runs/                             the run cache: one outcome per distinct run
//! OUT/llm-cache/                        recorded model answers (unless --llm-cache)
//! OUT/results.jsonl, summary.json, report.html   written at the end of every run
//! ```
//!
//! Every file is written whole (a temporary file renamed over it), so an
//! interrupt leaves each either as it was or complete. A pair's file is its
//! "done" mark and is written after its variants, so a pair is either
//! finished with everything or redone.

use crate::mpe::results::Pair;
use crate::sys::atomic_file;
use crate::sys::path_name::slug;
use std::path::{Path, PathBuf};

/// The output directory.
pub struct Store {
    root: PathBuf,
}

/// Why the output directory cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct StoreError {
    /// The file or directory.
    pub path: String,
    /// The cause.
    pub source: std::io::Error,
}

fn err(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError {
        path: path.display().to_string(),
        source,
    }
}

impl Store {
    /// The directory `root`, made if missing.
    pub fn open(root: &Path) -> Result<Store, StoreError> {
        std::fs::create_dir_all(root).map_err(err(root))?;
        Ok(Store {
            root: root.to_path_buf(),
        })
    }


    /// Write `bytes` to `rel` whole.
    pub fn write(&self, rel: &Path, bytes: &[u8]) -> Result<(), StoreError> {
        let path = self.root.join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(err(dir))?;
        }
        atomic_file::write(&path, bytes, true).map_err(err(&path))
    }

    fn pair_path(instance: &str, generator: &str) -> PathBuf {
        Path::new("pairs")
            .join(slug(instance))
            .join(format!("{}.json", slug(generator)))
    }

    /// The variants file of a pair, relative to the root.
    pub fn variants_path(instance: &str, generator: &str) -> PathBuf {
        Path::new("variants")
            .join(slug(instance))
            .join(format!("{}.jsonl", slug(generator)))
    }

    /// The pool directory of a pair's admissible variants, relative to the
    /// root.
    pub fn pool_path(instance: &str, generator: &str) -> PathBuf {
        Path::new("pool").join(slug(generator)).join(slug(instance))
    }

    /// The finished pair, if there is one finished with `params` (not an
    /// error: errors are tried again).
    pub fn finished(&self, instance: &str, generator: &str, params: &str) -> Option<Pair> {
        let path = self.root.join(Self::pair_path(instance, generator));
        let bytes = std::fs::read(&path).ok()?;
        match serde_json::from_slice::<Pair>(&bytes) {
            Ok(p)
                if p.params == params
                    && p.status != crate::mpe::results::Status::Error
                    && p.instance_id == instance
                    && p.model_name_or_path == generator =>
            {
                Some(p)
            }
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(path = %path.display(), "evaluating again: unreadable pair file: {e}");
                None
            }
        }
    }

    /// The last record of a pair, whatever its parameters or status.
    pub fn last(&self, instance: &str, generator: &str) -> Option<Pair> {
        let bytes = std::fs::read(self.root.join(Self::pair_path(instance, generator))).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Record a finished pair: its variants first, then its file.
    pub fn finish(&self, pair: &Pair, variants: &[serde_json::Value]) -> Result<(), StoreError> {
        let mut lines = String::new();
        for v in variants {
            lines.push_str(&v.to_string());
            lines.push('\n');
        }
        self.write(
            &Self::variants_path(&pair.instance_id, &pair.model_name_or_path),
            lines.as_bytes(),
        )?;
        let json = serde_json::to_vec_pretty(pair).map_err(|e| StoreError {
            path: "pair".into(),
            source: std::io::Error::other(e),
        })?;
        self.write(
            &Self::pair_path(&pair.instance_id, &pair.model_name_or_path),
            &json,
        )
    }
}

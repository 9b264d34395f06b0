//! Whether an interpreter imports what runs need; for grading, pytest, which every
//! grading run starts (`python -m pytest`). Asked before any run, so that a
//! missing pytest is one clear error, not a result per run that looks like
//! a failed test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The interpreters asked so far, and what each answered.
#[derive(Debug, Default)]
pub struct Checked(BTreeMap<PathBuf, Result<(), String>>);

impl Checked {
    /// Whether `python` imports pytest (asked once per interpreter); the
    /// error says what to do.
    pub fn pytest(&mut self, python: &Path) -> Result<(), String> {
        self.0
            .entry(python.to_path_buf())
            .or_insert_with(|| {
                imports(python, &["pytest"]).map_err(|why| match why {
                    NotImported::Missing(_) => format!(
                        "{} cannot import pytest, which grading runs (`python -m pytest`): \
                         install it there (`{} -m pip install pytest`), or give another `python`",
                        python.display(),
                        python.display()
                    ),
                    NotImported::NoInterpreter(e) => {
                        format!("cannot run {}: {e}", python.display())
                    }
                })
            })
            .clone()
    }
}

/// Why an interpreter does not import what was asked.
#[derive(Debug)]
pub enum NotImported {
    /// It ran, and the import failed: the last line it printed.
    Missing(String),
    /// It could not start.
    NoInterpreter(std::io::Error),
}

/// Whether `python` imports every one of `modules`.
pub fn imports(python: &Path, modules: &[&str]) -> Result<(), NotImported> {
    let out = std::process::Command::new(python)
        .args(["-c", &format!("import {}", modules.join(", "))])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(NotImported::NoInterpreter)?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    Err(NotImported::Missing(
        said.lines().last().unwrap_or("").trim().to_string(),
    ))
}

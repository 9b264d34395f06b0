//! Whether an interpreter can grade: it must import pytest, which every
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
                let out = std::process::Command::new(python)
                    .args(["-c", "import pytest"])
                    .stdin(std::process::Stdio::null())
                    .output();
                match out {
                    Ok(o) if o.status.success() => Ok(()),
                    Ok(_) => Err(format!(
                        "{} cannot import pytest, which grading runs (`python -m pytest`): \
                         install it there (`{} -m pip install pytest`), or give another `python`",
                        python.display(),
                        python.display()
                    )),
                    Err(e) => Err(format!("cannot run {}: {e}", python.display())),
                }
            })
            .clone()
    }
}

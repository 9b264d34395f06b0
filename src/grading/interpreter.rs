//! Whether an interpreter imports what runs need; for grading, pytest, which every
//! grading run starts (`python -m pytest`). Asked before any run, the way
//! runs start it (their environment and confinement), so that a missing
//! pytest, or an interpreter runs would not find, is one clear error, not a
//! result per run that looks like a failed test or a broken instance.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The interpreters asked so far, and what each answered.
#[derive(Debug)]
pub struct Checked {
    confined: bool,
    answers: BTreeMap<PathBuf, Result<(), String>>,
}

impl Checked {
    /// Interpreters to be asked as runs start them: confined when
    /// `confined`.
    pub fn new(confined: bool) -> Checked {
        Checked {
            confined,
            answers: BTreeMap::new(),
        }
    }

    /// Whether `python` imports pytest in a run, asked once per
    /// interpreter; the error says what to do.
    pub fn pytest(&mut self, python: &Path) -> Result<(), String> {
        let confined = self.confined;
        self.answers
            .entry(python.to_path_buf())
            .or_insert_with(|| {
                imports(python, &["pytest"], confined).map_err(|why| match why {
                    NotImported::Missing(_) => format!(
                        "{} cannot import pytest, which grading runs (`python -m pytest`): \
                         install it there (`{} -m pip install pytest`), or name another \
                         interpreter (the record's `python` field, `python:` in the experiment \
                         file, or `--python`)",
                        python.display(),
                        python.display()
                    ),
                    NotImported::NoInterpreter(e) => format!(
                        "cannot run {}: {e}; name another interpreter (the record's `python` \
                         field, `python:` in the experiment file, or `--python`)",
                        python.display()
                    ),
                })
            })
            .clone()
    }
}

/// `python` with the links of its directory resolved, its file name kept:
/// a confined run sees a directory at its real path (a link under `/tmp`
/// to an environment elsewhere is not there), and a virtual environment's
/// interpreter is itself a link that must stay one, or it would start
/// outside its environment.
pub fn in_real_dir(python: &Path) -> PathBuf {
    match (python.parent(), python.file_name()) {
        (Some(dir), Some(name)) if python.is_absolute() => {
            std::fs::canonicalize(dir).map_or_else(|_| python.to_path_buf(), |real| real.join(name))
        }
        _ => python.to_path_buf(),
    }
}

/// Why an interpreter does not import what was asked.
#[derive(Debug)]
pub enum NotImported {
    /// It ran, and the import failed: the last line it printed.
    Missing(String),
    /// It could not start: why.
    NoInterpreter(String),
}

/// Whether `python`, started as a scratch run starts its command (the same
/// environment, confined when `confined`, `python` itself seen wherever it
/// lies), imports every one of `modules`.
pub fn imports(python: &Path, modules: &[&str], confined: bool) -> Result<(), NotImported> {
    let argv = vec![
        python.display().to_string(),
        "-c".to_string(),
        format!("import {}", modules.join(", ")),
    ];
    let seen: Vec<PathBuf> = python
        .is_absolute()
        .then(|| python.to_path_buf())
        .into_iter()
        .collect();
    let ran = crate::sandbox::scratch::probe(&argv, confined, &seen);
    if let Some(e) = ran.error {
        return Err(NotImported::NoInterpreter(e));
    }
    if ran.exit_code == Some(0) {
        return Ok(());
    }
    let said = ran.stderr.lines().last().unwrap_or("").trim().to_string();
    Err(NotImported::Missing(if said.is_empty() {
        format!("it exited {:?} and said nothing", ran.exit_code)
    } else {
        said
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interpreter_keeps_its_name_in_its_real_directory() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("env/bin");
        std::fs::create_dir_all(&real).unwrap();
        std::os::unix::fs::symlink("/usr/bin/true", real.join("python3")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("env"), dir.path().join("link")).unwrap();
        let through = dir.path().join("link/bin/python3");
        let resolved = in_real_dir(&through);
        assert_eq!(
            resolved,
            std::fs::canonicalize(&real).unwrap().join("python3"),
            "the directory resolved, the interpreter's own link kept"
        );
        assert_eq!(in_real_dir(Path::new("python3")), Path::new("python3"));
    }
}

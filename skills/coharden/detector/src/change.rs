//! The finish's patch, split the way CoHarden needs it: the test files (t_k,
//! with their new content) and the fix (c_k: the other files, with base and
//! new content for the Python ones the operators mutate).

use crate::state::TestFiles;
use critic_sdk::diff::{apply, sections};
use critic_sdk::host::read_file_string;
use critic_sdk::mutants::FixFile;
use critic_sdk::python::syntax_error;
use critic_sdk::{FileChange, FileStatus, Hunk, Patch, PatchOrigin};

/// The patch of one finish.
#[derive(Debug, Clone, Default)]
pub struct Change {
    /// Test-side files (the skill's `test_patterns`) with their new content.
    pub tests: TestFiles,
    /// Every other changed path.
    pub fix_paths: Vec<String>,
    /// The Python files of the fix, with base and fixed content.
    pub fix: Vec<FixFile>,
    /// The fix side of the raw diff.
    pub fix_diff: String,
}

/// A file of the patch that cannot be read or does not match its diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The file.
    pub path: String,
    /// Why.
    pub reason: String,
}

impl Change {
    /// Split `patch`, reading file contents through the `read-file` capability.
    pub fn read(patch: &Patch, python_suffixes: &[String]) -> Result<Change, Unreadable> {
        let mut change = Change::default();
        let raw_sections = sections(&patch.raw);
        for (i, file) in patch.files.iter().enumerate() {
            let is_python = python_suffixes
                .iter()
                .any(|s| file.path.ends_with(s.as_str()));
            if file.is_test {
                let content = match file.status {
                    FileStatus::Deleted => None,
                    _ => Some(contents(file, patch.origin)?.1),
                };
                change.tests.insert(file.path.clone(), content);
                continue;
            }
            change.fix_paths.push(file.path.clone());
            if let Some(section) = raw_sections.get(i) {
                change.fix_diff.push_str(section);
            }
            if is_python && !file.binary && file.status != FileStatus::Deleted {
                let (base, fixed) = contents(file, patch.origin)?;
                change.fix.push(FixFile {
                    path: file.path.clone(),
                    base,
                    fixed,
                    hunks: file.hunks.clone(),
                });
            }
        }
        Ok(change)
    }
}

impl Change {
    /// The test files the patch keeps (deleted ones left out).
    pub fn present_tests(&self) -> TestFiles {
        self.tests
            .iter()
            .filter(|(_, c)| c.is_some())
            .map(|(p, c)| (p.clone(), c.clone()))
            .collect()
    }
}

/// The first Python file of `tests` (by `python_suffixes`) that does not
/// parse, with where and why.
pub fn syntax_problem(tests: &TestFiles, python_suffixes: &[String]) -> Option<(String, String)> {
    tests.iter().find_map(|(path, content)| {
        let python = python_suffixes.iter().any(|s| path.ends_with(s.as_str()));
        let error = content
            .as_deref()
            .filter(|_| python)
            .and_then(syntax_error)?;
        Some((path.clone(), error))
    })
}

/// A file's `(base, new)` content. For a working-tree patch the workspace
/// holds the new file, so the base comes from undoing the hunks; for a patch
/// given as a file the workspace holds the base.
fn contents(file: &FileChange, origin: PatchOrigin) -> Result<(String, String), Unreadable> {
    let fail = |reason: String| Unreadable {
        path: file.path.clone(),
        reason,
    };
    if file.binary {
        return Err(fail("it is a binary file".into()));
    }
    match origin {
        PatchOrigin::Worktree => {
            let new = read_file_string(&file.path).map_err(fail)?;
            let reversed: Vec<Hunk> = file.hunks.iter().map(Hunk::reversed).collect();
            let base = apply(&new, &reversed)
                .map_err(|e| fail(format!("the working tree does not match the diff: {e}")))?;
            Ok((base, new))
        }
        PatchOrigin::File => {
            let base = match file.status {
                FileStatus::Added => String::new(),
                _ => read_file_string(file.old_path.as_deref().unwrap_or(&file.path))
                    .map_err(fail)?,
            };
            let new = apply(&base, &file.hunks)
                .map_err(|e| fail(format!("the patch does not apply to the base: {e}")))?;
            Ok((base, new))
        }
    }
}

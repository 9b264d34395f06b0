//! Whether one patch resolves an instance: the patch applied to the base
//! (binary changes left out, as they cannot be applied to text), what
//! steers the test runner put back (`restore.rs`), the golden test files
//! written over everything, the instance's test command run, and its log
//! judged by id under SWE-bench's rules.
//!
//! What the patch causes is its own result: a patch that does not apply,
//! whose tests hang, or whose output contradicts itself resolves nothing,
//! and says why. Only a run the harness could not make (no scratch copy,
//! no interpreter) is the harness's failure; a pre-flight of the golden
//! patch (`critic experiment` grades it first) tells an instance whose
//! environment is broken from a patch that broke the run.

use crate::grading::diff_files::without_binary;
use crate::grading::instance::Prepared;
use crate::grading::record::{judge_ids, RunRecord};
use crate::grading::restore::{self, Restored};
use crate::grading::runner::Backend;
use crate::grading::status::IdGrade;
use critic_sdk::{RunRequest, RunResult};
use serde::{Deserialize, Serialize};

/// A patch graded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resolution {
    /// Whether it resolves the instance; `None` when the harness failed.
    pub resolved: Option<bool>,
    /// Every golden id: how it was found, its status, whether it succeeded.
    pub ids: Vec<IdGrade>,
    /// Why the patch's run says nothing believable (then it resolves
    /// nothing): it does not apply, timed out, contradicts itself.
    pub problem: Option<String>,
    /// Why the harness could not grade it at all.
    pub infra: Option<String>,
    /// What steered the test runner and was put back.
    pub restored: Vec<Restored>,
    /// What else was done to the patch or read from the run (binary changes
    /// left out, statuses taken from pytest's report).
    pub notes: Vec<String>,
}

/// The graded run, for its logs.
pub struct Ran {
    /// What ran.
    pub request: RunRequest,
    /// What it did, when it ran.
    pub result: Option<RunResult>,
}

/// Grade `patch` on `prepared`, running on `backend`.
pub fn resolve(prepared: &Prepared, backend: &dyn Backend, patch: &str) -> (Resolution, Ran) {
    let mut resolution = Resolution {
        resolved: None,
        ids: Vec::new(),
        problem: None,
        infra: None,
        restored: Vec::new(),
        notes: Vec::new(),
    };
    let (patch, binary) = without_binary(patch);
    if !binary.is_empty() {
        resolution.notes.push(format!(
            "binary changes left out (a text patch cannot carry them): {}",
            binary.join(", ")
        ));
    }
    let mut request = prepared.request(&Default::default(), &prepared.golden_tests);
    let unapplied = |mut r: Resolution, e: String| {
        r.resolved = Some(false);
        r.problem = Some(format!("the patch does not apply: {e}"));
        r
    };
    let files = match plain_paths(&patch) {
        Ok(files) => files,
        Err(e) => {
            return (
                unapplied(resolution, e),
                Ran {
                    request,
                    result: None,
                },
            )
        }
    };
    // What steers the runner, read from the patch applied to the base.
    let patched = |path: &str| -> Result<Option<String>, String> {
        patched_file(prepared, &patch, &files, path)
    };
    let base_has = |path: &str| prepared.base_has(path);
    let places = restore::Places {
        test_dirs: test_dirs(prepared),
        test_file_dirs: test_file_dirs(prepared),
        runner_files: prepared.command.runner_files(),
    };
    let (restores, restored) = match restore::steering(
        &patch,
        &|p| prepared.base_file(p),
        &patched,
        &base_has,
        &places,
    ) {
        Ok(r) => r,
        Err(e) => {
            return (
                unapplied(resolution, e),
                Ran {
                    request,
                    result: None,
                },
            )
        }
    };
    resolution.restored = restored;
    request.patch = Some(patch);
    // Restored files first, the golden tests over them (a test patch that
    // adds a conftest.py keeps it).
    let tests = std::mem::take(&mut request.files);
    request.files = restores;
    request.files.extend(tests);
    let result = backend
        .run_all(std::slice::from_ref(&request))
        .pop()
        .unwrap_or_default();
    if let Some(e) = &result.error {
        // The harness's own failures name themselves; anything else is what
        // the patch made of the copy (it does not apply, a directory where
        // a restored file goes), since the pre-flight's golden patch ran.
        if is_harness_failure(e) {
            resolution.infra = Some(format!("the golden tests could not run: {e}"));
            return (
                resolution,
                Ran {
                    request,
                    result: Some(result),
                },
            );
        }
        let graded = unapplied(resolution, e.clone());
        return (
            graded,
            Ran {
                request,
                result: Some(result),
            },
        );
    }
    let record = RunRecord::of(&result, prepared.command.format);
    let judged = judge_ids(
        &record,
        &prepared.fail_to_pass,
        &prepared.pass_to_pass,
        prepared.eval_type,
    );
    resolution.notes.extend(record.notes.iter().cloned());
    resolution.resolved = Some(judged.resolved);
    resolution.problem = judged.problem;
    resolution.ids = judged.ids;
    (
        resolution,
        Ran {
            request,
            result: Some(result),
        },
    )
}

/// The end of a grading run's log, to show why it did not resolve: the
/// console's last lines (pytest's summary among them), the end of stderr,
/// and what pytest's report counted.
pub fn log_tail(result: &RunResult) -> String {
    let last = |text: &str, n: usize| -> String {
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with("@@critic-pytest-report"))
            .collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    };
    let mut tail = last(&result.stdout, 40);
    let err = last(&result.stderr, 15);
    if !err.trim().is_empty() {
        tail.push_str("\n--- stderr ---\n");
        tail.push_str(&err);
    }
    if let Ok(Some(report)) = crate::grading::pytest_report::read(&result.stderr) {
        let count = |f: fn(&crate::grading::pytest_report::TestOutcome) -> bool| {
            report.tests.iter().filter(|t| f(t)).count()
        };
        tail.push_str(&format!(
            "\n--- pytest's report ---\npytest {} exited {}: {} tests, {} failing, {} collection errors",
            report.pytest,
            report.exit,
            report.tests.len(),
            count(|t| t.failing()),
            report.collection_errors.len()
        ));
    }
    tail
}

/// How a scratch copy words its own failures (not the request's): see
/// `sandbox::scratch`.
const HARNESS_FAILURES: &[&str] = &[
    "cannot prepare a scratch copy",
    "the run request has an empty argv",
    "cannot make the run's home",
    "cannot confine the command",
    "command not found",
    "cannot start ",
];

/// Whether a run's `error` is the harness's own failure (no scratch copy,
/// no interpreter), not what its request made of the copy.
pub fn is_harness_failure(error: &str) -> bool {
    HARNESS_FAILURES.iter().any(|h| error.starts_with(h))
}

/// `patch` parsed, each path plain: one with an empty or `.` part or a
/// trailing `/` is not what `git diff` writes (`git apply` refuses most).
fn plain_paths(patch: &str) -> Result<Vec<critic_sdk::FileChange>, String> {
    let files = critic_sdk::diff::parse(patch).map_err(|e| format!("not a git diff: {e}"))?;
    for f in &files {
        for p in std::iter::once(&f.path).chain(&f.old_path) {
            let plain = !p.is_empty() && p.split('/').all(|part| !part.is_empty() && part != ".");
            if !plain {
                return Err(format!("{p:?} is not a plain relative path"));
            }
        }
    }
    Ok(files)
}

/// The directories of the golden test files.
fn test_file_dirs(prepared: &Prepared) -> Vec<String> {
    let dirs: std::collections::BTreeSet<String> = prepared
        .golden_tests
        .files
        .keys()
        .chain(&prepared.golden_tests.targets)
        .filter_map(|f| f.rsplit_once('/').map(|(d, _)| d.to_string()))
        .collect();
    dirs.into_iter().collect()
}

/// The golden test files' directories and all their parents: pytest puts
/// one of them first on a run's path.
fn test_dirs(prepared: &Prepared) -> Vec<String> {
    let mut dirs = std::collections::BTreeSet::new();
    for file in prepared
        .golden_tests
        .files
        .keys()
        .chain(&prepared.golden_tests.targets)
    {
        let mut at = file.as_str();
        while let Some((parent, _)) = at.rsplit_once('/') {
            dirs.insert(parent.to_string());
            at = parent;
        }
    }
    dirs.into_iter().collect()
}

/// `path` as the patch leaves it (`None`: absent), from the base: the
/// sections that reach it (through renames and copies too) applied as `git
/// apply` applies them (`workspace::apply`), as the scratch copy will.
fn patched_file(
    prepared: &Prepared,
    patch: &str,
    files: &[critic_sdk::FileChange],
    path: &str,
) -> Result<Option<String>, String> {
    use crate::workspace::apply::{self, Entry, Mode};
    let sections = critic_sdk::diff::sections(patch);
    let mut wanted = std::collections::BTreeSet::from([path.to_string()]);
    // The paths whose sections lead to `path`, to a fixpoint.
    loop {
        let before = wanted.len();
        for f in files {
            if wanted.contains(&f.path) {
                wanted.extend(f.old_path.clone());
            }
        }
        if wanted.len() == before {
            break;
        }
    }
    let reaching: String = files
        .iter()
        .zip(&sections)
        .filter(|(f, _)| {
            wanted.contains(&f.path) || f.old_path.as_ref().is_some_and(|o| wanted.contains(o))
        })
        .map(|(_, s)| *s)
        .collect();
    if reaching.is_empty() {
        return prepared.base_file(path);
    }
    let mut read = |p: &str| -> Result<Option<Entry>, String> {
        Ok(prepared.base_file(p)?.map(|text| Entry {
            bytes: text.into_bytes(),
            mode: Mode::File,
        }))
    };
    let results = apply::apply(&reaching, &mut read).map_err(|e| e.to_string())?;
    match results.get(path) {
        None => prepared.base_file(path),
        Some(None) => Ok(None),
        Some(Some(entry)) => String::from_utf8(entry.bytes.clone())
            .map(Some)
            .map_err(|_| format!("{path}: not UTF-8 text")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_sections_are_left_out_and_named() {
        let text = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n";
        let binary = "diff --git a/logo.png b/logo.png\nnew file mode 100644\nindex 0000000..e69de29\nBinary files /dev/null and b/logo.png differ\n";
        let (kept, left) = without_binary(&format!("{text}{binary}"));
        assert_eq!(kept, text);
        assert_eq!(left, ["logo.png"]);
        assert_eq!(without_binary(text), (text.to_string(), vec![]));
    }
}

//! One instance made ready to run: its clone at the base commit, the golden
//! fix as files, the golden tests and each generated test as files to write
//! and modules to run, and the requests that run them.

use crate::grading::dataset::Instance;
use crate::grading::diff_files::{apply_diff, files_of};
use crate::grading::pytest_report;
use crate::grading::status::EvalType;
use crate::grading::test_command::TestCommand;
use crate::workspace::git;
use critic_sdk::mutants::FixFile;
use critic_sdk::RunRequest;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// The repository whose tests run under its own code as the test runner.
const PYTEST_REPO: &str = "pytest-dev/pytest";
/// The most output of a run kept (stdout and stderr, each): pytest's
/// summary, at the end, must survive the cut of a chatty run.
const OUTPUT_BYTES: usize = 4 << 20;

/// Tests to write into a copy and the modules to run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TestSet {
    /// Path to content.
    pub files: BTreeMap<String, String>,
    /// Paths to remove (a test file the golden test patch deletes).
    pub deleted: Vec<String>,
    /// The test modules passed to the command.
    pub targets: Vec<String>,
    /// The diff that adds them (as a prompt shows it).
    pub diff: String,
}

/// Whether `path` is a test file by the usual Python conventions: a
/// `test_*.py`/`*_test.py`/`tests.py`/`conftest.py` file, or anything under
/// a `test`, `tests` or `testing` directory.
pub fn is_test_path(path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    let name = parts.pop().unwrap_or_default();
    parts
        .iter()
        .any(|d| matches!(*d, "test" | "tests" | "testing"))
        || (name.ends_with(".py")
            && (name.starts_with("test_")
                || name.ends_with("_test.py")
                || name == "tests.py"
                || name == "conftest.py"))
}

/// Whether pytest should be pointed at `path` (a test module, not a
/// fixture file or `conftest.py`).
fn is_test_module(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.ends_with(".py") && name != "conftest.py" && name != "__init__.py"
}

/// An instance ready to run.
pub struct Prepared {
    /// The clone.
    pub repo: PathBuf,
    /// The base commit, resolved.
    pub base: String,
    /// The golden fix's files (at the base and fixed).
    pub golden: Vec<FixFile>,
    /// The golden fix: path to content after it.
    pub golden_files: BTreeMap<String, String>,
    /// The golden tests.
    pub golden_tests: TestSet,
    /// `FAIL_TO_PASS`: must pass with the fix.
    pub fail_to_pass: Vec<String>,
    /// `PASS_TO_PASS`: must still pass.
    pub pass_to_pass: Vec<String>,
    /// How the ids are graded.
    pub eval_type: EvalType,
    /// The test command and how its log is read.
    pub command: TestCommand,
    /// Each run's time limit.
    pub timeout: Duration,
    blobs: Mutex<HashMap<String, Option<String>>>,
}

impl Prepared {
    /// Read `instance` from its clone `repo`. An error names the record's
    /// field that is wrong.
    pub fn new(
        instance: &Instance,
        repo: &Path,
        python: &Path,
        timeout: Duration,
    ) -> Result<Prepared, String> {
        Prepared::at(instance, repo, &instance.base_commit, python, timeout)
    }

    /// [`Prepared::new`] with the tests run at `base` of `repo` (an
    /// environment commit on top of the instance's base commit).
    pub fn at(
        instance: &Instance,
        repo: &Path,
        base: &str,
        python: &Path,
        timeout: Duration,
    ) -> Result<Prepared, String> {
        let at = &instance.place;
        let mut rev = git::command(repo);
        rev.args(["rev-parse", "--verify", "--end-of-options"])
            .arg(format!("{base}^{{commit}}"));
        let base = git::run(rev)
            .map(|out| String::from_utf8_lossy(&out).trim().to_string())
            .map_err(|e| {
                format!(
                    "{at}: field `base_commit`: {base} is not a commit of {}: {}",
                    repo.display(),
                    e.message.trim()
                )
            })?;
        // A `tox --current-env` command runs what the base's tox.ini says.
        let test_cmd = match instance.test_cmd.as_deref() {
            Some(argv) if crate::grading::tox::is_tox(argv) => {
                let mut show = git::command(repo);
                show.args(["cat-file", "blob", &format!("{base}:tox.ini")]);
                let tox_ini = git::run(show)
                    .ok()
                    .map(|b| String::from_utf8_lossy(&b).into_owned());
                Some(
                    crate::grading::tox::as_pytest(argv, tox_ini.as_deref())
                        .map_err(|e| format!("{at}: field `test_cmd`: {e}"))?,
                )
            }
            other => other.map(<[String]>::to_vec),
        };
        let command = TestCommand::new(
            &instance.repo,
            test_cmd.as_deref(),
            instance.log_parser.as_deref(),
            &instance.eval_commands,
            python,
        )
        .map_err(|e| format!("{at}: {e}"))?;
        let mut prepared = Prepared {
            repo: repo.to_path_buf(),
            base,
            golden: Vec::new(),
            golden_files: BTreeMap::new(),
            golden_tests: TestSet::default(),
            fail_to_pass: instance.fail_to_pass.clone(),
            pass_to_pass: instance.pass_to_pass.clone(),
            eval_type: instance.eval_type,
            command,
            timeout,
            blobs: Mutex::new(HashMap::new()),
        };
        // pytest's own repository is graded by its own (patched) pytest.
        if instance.repo == PYTEST_REPO
            && (prepared.base_has("src/_pytest") || prepared.base_has("_pytest"))
        {
            prepared.command = prepared.command.clone().testing_pytest();
        }
        let golden_files = apply_diff(&instance.patch, &|p| prepared.base_file(p))
            .map_err(|e| format!("{at}: field `patch`: {e}"))?;
        let hunks: BTreeMap<String, Vec<critic_sdk::Hunk>> =
            critic_sdk::diff::parse(&instance.patch)
                .map(|files| files.into_iter().map(|f| (f.path, f.hunks)).collect())
                .unwrap_or_default();
        let golden: Vec<FixFile> = golden_files
            .iter()
            .filter(|(p, _)| p.ends_with(".py"))
            .map(|(path, fixed)| FixFile {
                path: path.clone(),
                base: prepared.base_file(path).ok().flatten().unwrap_or_default(),
                fixed: fixed.clone(),
                hunks: hunks.get(path).cloned().unwrap_or_default(),
            })
            .collect();
        prepared.golden = golden;
        prepared.golden_files = golden_files;
        // The golden tests: every file the test patch touches, deletions
        // included, written over whatever a patch did to them (as
        // SWE-bench's eval script checks them out and applies the patch).
        let (files, deleted) = files_of(
            &instance.test_patch,
            &|p| prepared.base_file(p),
            &|_| true,
            true,
        )
        .map_err(|e| format!("{at}: field `test_patch`: {e}"))?;
        let touched: Vec<String> = critic_sdk::diff::parse(&instance.test_patch)
            .map(|fs| fs.into_iter().map(|f| f.path).collect())
            .unwrap_or_default();
        let mut targets = if prepared.command.format.is_pytest() {
            touched
                .iter()
                .filter(|p| is_test_module(p))
                .cloned()
                .collect()
        } else {
            prepared.command.directives(&touched)
        };
        // Ids may name pytest modules the test patch does not touch.
        if prepared.command.format.is_pytest() {
            for id in prepared.fail_to_pass.iter().chain(&prepared.pass_to_pass) {
                let module = id.split("::").next().unwrap_or_default().to_string();
                if is_test_module(&module)
                    && !targets.contains(&module)
                    && (files.contains_key(&module)
                        || prepared.base_file(&module).ok().flatten().is_some())
                {
                    targets.push(module);
                }
            }
        }
        if targets.is_empty() {
            return Err(format!(
                "{at}: field `test_patch`: it touches no test module and no id of \
                 FAIL_TO_PASS or PASS_TO_PASS names one"
            ));
        }
        let tests = TestSet {
            diff: instance.test_patch.clone(),
            files,
            deleted,
            targets,
        };
        prepared.golden_tests = tests;
        Ok(prepared)
    }

    /// The base commit's content of `path`; `None` when it has none.
    pub fn base_file(&self, path: &str) -> Result<Option<String>, String> {
        if let Some(b) = self
            .blobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(path)
        {
            return Ok(b.clone());
        }
        let mut ls = git::command(&self.repo);
        ls.args(["ls-tree", "-z", "--full-tree", &self.base, "--", path]);
        let listed = git::run(ls).map_err(|e| e.to_string())?;
        let text = if listed.is_empty() {
            None
        } else {
            let mut show = git::command(&self.repo);
            show.args(["cat-file", "blob"])
                .arg(format!("{}:{path}", self.base));
            let bytes = git::run(show).map_err(|e| e.to_string())?;
            Some(String::from_utf8(bytes).map_err(|_| format!("{path}: not UTF-8 text"))?)
        };
        self.blobs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(path.to_string(), text.clone());
        Ok(text)
    }

    /// Whether the base commit has `path` (a file or a directory).
    pub fn base_has(&self, path: &str) -> bool {
        let mut ls = git::command(&self.repo);
        ls.args([
            "ls-tree",
            "--name-only",
            "--full-tree",
            &self.base,
            "--",
            path,
        ]);
        git::run(ls).is_ok_and(|out| !out.is_empty())
    }

    /// The files of `diff` that `keep` accepts, applied to the base, as a
    /// test set; and the paths it did not keep (binary and deleted files
    /// among them).
    pub fn test_set(
        &self,
        diff: &str,
        keep: impl Fn(&str) -> bool,
    ) -> Result<(TestSet, Vec<String>), String> {
        // A binary file or a deleted one is no test to run: left aside.
        let (text, binary) = crate::grading::diff_files::without_binary(diff);
        let diff = text.as_str();
        let (kept, deleted) = files_of(diff, &|p| self.base_file(p), &keep, true)?;
        let mut ignored: Vec<String> = critic_sdk::diff::parse(diff)
            .map_err(|e| format!("not a git diff: {e}"))?
            .into_iter()
            .map(|f| f.path)
            .filter(|p| !keep(p))
            .collect();
        ignored.extend(binary.into_iter().chain(deleted));
        let targets = kept.keys().filter(|p| is_test_module(p)).cloned().collect();
        // The diff as shown: only the kept files' sections.
        let shown = critic_sdk::diff::parse(diff)
            .ok()
            .map(|parsed| {
                critic_sdk::diff::sections(diff)
                    .into_iter()
                    .zip(parsed)
                    .filter(|(_, f)| kept.contains_key(&f.path))
                    .map(|(s, _)| s)
                    .collect::<String>()
            })
            .unwrap_or_default();
        Ok((
            TestSet {
                files: kept,
                deleted: Vec::new(),
                targets,
                diff: shown,
            },
            ignored,
        ))
    }

    /// A generated test: the test files of a prediction's patch.
    pub fn generated_test(&self, patch: &str) -> Result<(TestSet, Vec<String>), String> {
        self.test_set(patch, is_test_path)
    }


    /// The request that runs `tests` on the base with `code` written over it.
    pub fn request(&self, code: &BTreeMap<String, String>, tests: &TestSet) -> RunRequest {
        let mut files: BTreeMap<String, Option<String>> = code
            .iter()
            .map(|(p, t)| (p.clone(), Some(t.clone())))
            .collect();
        files.extend(
            tests
                .files
                .iter()
                .map(|(p, t)| (p.clone(), Some(t.clone()))),
        );
        files.extend(tests.deleted.iter().map(|p| (p.clone(), None)));
        // Pinned for every test run: hash order, time zone and locale
        // change what some tests see (SWE-bench #602).
        let mut env: BTreeMap<String, String> = [
            ("PYTHONDONTWRITEBYTECODE", "1"),
            ("PYTHONHASHSEED", "0"),
            ("TZ", "UTC"),
            ("LC_ALL", "C.UTF-8"),
            ("LANG", "C.UTF-8"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        env.extend(self.command.run_env());
        // The test files as given: only their `pytest_plugins` count (see
        // the report's bootstrap).
        let given: std::collections::BTreeSet<&str> = tests
            .files
            .keys()
            .chain(&tests.targets)
            .map(|t| t.split("::").next().unwrap_or(t))
            .collect();
        env.insert(
            pytest_report::TEST_FILES_VAR.into(),
            given.into_iter().collect::<Vec<_>>().join("\n"),
        );
        RunRequest {
            patch: None,
            files,
            argv: self.command.argv_for(&tests.targets),
            env,
            cwd: None,
            timeout_ms: Some(self.timeout.as_millis() as u64),
            output_bytes: Some(OUTPUT_BYTES),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_paths_follow_python_conventions() {
        for p in [
            "tests/test_a.py",
            "pkg/tests/helpers.py",
            "test_x.py",
            "a/b_test.py",
            "conftest.py",
            "testing/data.json",
        ] {
            assert!(is_test_path(p), "{p}");
        }
        for p in ["pkg/merge.py", "pkg/testament.py", "contest.py", "setup.py"] {
            assert!(!is_test_path(p), "{p}");
        }
        assert!(!is_test_module("tests/conftest.py"));
        assert!(!is_test_module("tests/data.json"));
        assert!(is_test_module("tests/test_a.py"));
    }
}

//! The benchmark files grading reads (for `critic mpe` and `critic
//! experiment`): SWE-bench instances and SWT-bench style predictions, one
//! JSON object per line. Every record is checked before any
//! run starts, and an error names the file, the line, the instance and the
//! field, so a bad record costs nothing already computed.

use crate::grading::status::EvalType;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The largest dataset file read (SWE-bench's full test split is ~100 MB).
const MAX_FILE_BYTES: u64 = 1 << 30;

/// One problem of a benchmark: a repository at a commit, its golden fix and
/// golden tests.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Instance {
    /// `instance_id`.
    pub id: String,
    /// `repo`, `owner/name`.
    pub repo: String,
    /// `base_commit`: the buggy program.
    pub base_commit: String,
    /// `patch`: the golden fix, a git diff against the base.
    pub patch: String,
    /// `test_patch`: the golden tests, a git diff against the base.
    pub test_patch: String,
    /// `FAIL_TO_PASS` test ids.
    pub fail_to_pass: Vec<String>,
    /// `PASS_TO_PASS` test ids.
    pub pass_to_pass: Vec<String>,
    /// `problem_statement`: the issue text.
    pub problem_statement: String,
    /// `test_cmd`: the test command before the test files are appended
    /// (`{python}` stands for the interpreter); `None` for the default.
    pub test_cmd: Option<Vec<String>>,
    /// `python`: this instance's interpreter, overriding `--python`.
    pub python: Option<PathBuf>,
    /// `version`: the repository's version (SWE-bench groups environments
    /// by it).
    pub version: Option<String>,
    /// `environment_setup_commit`: the commit whose requirements file the
    /// environment is built from (SWE-bench's), when the record gives it.
    pub environment_setup_commit: Option<String>,
    /// `requirements`: pinned requirements (pip's format, text or a list of
    /// lines) the instance's environment is built from.
    pub requirements: Option<String>,
    /// `log_parser`: how its test log is read (ours or SWE-bench's parser
    /// name); `None`: SWE-bench's for its repository.
    pub log_parser: Option<String>,
    /// `eval_type`: `pass_and_fail` (the default) or `fail_only`.
    pub eval_type: EvalType,
    /// `eval_commands`: shell lines run before each test command.
    pub eval_commands: Vec<String>,
    /// `pre_install`: shell lines run once when its environment is made.
    pub pre_install: Vec<String>,
    /// `install`: shell lines run in a checkout of its base commit, with its
    /// environment's interpreter first on `PATH`, before any test runs.
    pub install: Vec<String>,
    /// Where the record is: `file:line`.
    pub place: String,
}

/// One generated test: a diff that adds or changes test files.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    /// `instance_id`.
    pub instance_id: String,
    /// `model_name_or_path`: the generator.
    pub generator: String,
    /// `model_patch`.
    pub patch: String,
    /// Where the record is: `file:line`.
    pub place: String,
}

/// Why a dataset file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// The file cannot be read.
    #[error("{path}: cannot read it: {source}")]
    Read {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// One or more records are wrong; each line names its place.
    #[error("{}", .0.join("\n"))]
    Records(Vec<String>),
}

/// The non-empty lines of a JSONL file as objects, or the errors of the
/// lines that are not.
/// A JSONL file's objects with their line numbers.
type Records = Vec<(usize, Map<String, Value>)>;

fn objects(path: &Path) -> Result<Records, DatasetError> {
    let shown = path.display().to_string();
    let bytes =
        crate::sys::bounded_read::read_regular_file(path, MAX_FILE_BYTES).map_err(|source| {
            DatasetError::Read {
                path: shown.clone(),
                source,
            }
        })?;
    let text = String::from_utf8(bytes).map_err(|e| DatasetError::Read {
        path: shown.clone(),
        source: std::io::Error::other(format!("not UTF-8 text: {e}")),
    })?;
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(map)) => out.push((i + 1, map)),
            Ok(_) => errors.push(format!(
                "{shown}:{}: the record is not a JSON object",
                i + 1
            )),
            Err(e) => errors.push(format!(
                "{shown}:{}: not JSON: {}",
                i + 1,
                crate::sys::json_error::describe(&e)
            )),
        }
    }
    if !errors.is_empty() {
        return Err(DatasetError::Records(errors));
    }
    Ok(out)
}

/// Reads fields of one record, collecting every problem with its place.
struct Fields<'a> {
    map: &'a Map<String, Value>,
    place: String,
    errors: &'a mut Vec<String>,
}

impl Fields<'_> {
    fn fail(&mut self, field: &str, message: &str) {
        self.errors
            .push(format!("{}: field `{field}`: {message}", self.place));
    }

    fn string(&mut self, field: &str) -> String {
        match self.map.get(field) {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            Some(Value::String(_)) => {
                self.fail(field, "is empty");
                String::new()
            }
            Some(_) => {
                self.fail(field, "must be a string");
                String::new()
            }
            None => {
                self.fail(field, "is missing");
                String::new()
            }
        }
    }

    /// A string field that may be empty (a patch with no change).
    fn text(&mut self, field: &str) -> String {
        match self.map.get(field) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) => String::new(),
            Some(_) => {
                self.fail(field, "must be a string");
                String::new()
            }
            None => {
                self.fail(field, "is missing");
                String::new()
            }
        }
    }

    /// A list of strings, or a string holding one as JSON (as SWE-bench
    /// ships `FAIL_TO_PASS` and `PASS_TO_PASS`).
    fn list(&mut self, field: &str) -> Vec<String> {
        let parsed = match self.map.get(field) {
            Some(Value::String(s)) => serde_json::from_str::<Value>(s).map_err(|e| {
                format!(
                    "is a string but not a JSON list: {}",
                    crate::sys::json_error::describe(&e)
                )
            }),
            Some(v) => Ok(v.clone()),
            None => Err("is missing".into()),
        };
        let list = parsed.and_then(|v| match v {
            Value::Array(items) => items
                .into_iter()
                .map(|i| match i {
                    Value::String(s) => Ok(s),
                    _ => Err("holds an item that is not a string".to_string()),
                })
                .collect(),
            _ => Err("must be a list of test ids".into()),
        });
        list.unwrap_or_else(|e| {
            self.fail(field, &e);
            Vec::new()
        })
    }

    /// Shell lines: a list of strings, or one string of lines.
    fn lines(&mut self, field: &str) -> Vec<String> {
        match self.map.get(field) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) => s.lines().map(str::to_string).collect(),
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            Some(_) => {
                self.fail(
                    field,
                    "must be shell lines: a list of strings, or one string",
                );
                Vec::new()
            }
        }
    }

    /// An optional string.
    fn optional_string(&mut self, field: &str) -> Option<String> {
        match self.map.get(field) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            Some(_) => {
                self.fail(field, "must be a non-empty string");
                None
            }
        }
    }

    fn optional_command(&mut self, field: &str) -> Option<Vec<String>> {
        let argv = match self.map.get(field)? {
            Value::Null => return None,
            Value::String(s) => shlex::split(s).ok_or("is not a valid shell word list".into()),
            Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().map(str::to_string).ok_or(()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|()| "holds an item that is not a string".to_string()),
            _ => Err("must be a command string or a list of arguments".to_string()),
        };
        match argv {
            Ok(a) if a.is_empty() => {
                self.fail(field, "is empty");
                None
            }
            Ok(a) => Some(a),
            Err(e) => {
                self.fail(field, &e);
                None
            }
        }
    }
}

/// The instances of `path`, checked: every field present and well formed,
/// ids unique.
pub fn read_instances(path: &Path) -> Result<Vec<Instance>, DatasetError> {
    let mut errors = Vec::new();
    let mut out: Vec<Instance> = Vec::new();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for (line, map) in objects(path)? {
        let mut place = format!("{}:{line}", path.display());
        if let Some(id) = map.get("instance_id").and_then(Value::as_str) {
            place = format!("{place} (instance {id})");
        }
        let mut f = Fields {
            map: &map,
            place: place.clone(),
            errors: &mut errors,
        };
        let id = f.string("instance_id");
        let repo = f.string("repo");
        if !repo.is_empty() && !valid_repo(&repo) {
            f.fail("repo", "must be `owner/name`");
        }
        let base_commit = f.string("base_commit");
        if !base_commit.is_empty() && !base_commit.chars().all(|c| c.is_ascii_hexdigit()) {
            f.fail("base_commit", "must be a commit id (hexadecimal)");
        }
        let instance = Instance {
            id: id.clone(),
            repo,
            base_commit,
            patch: f.string("patch"),
            test_patch: f.string("test_patch"),
            fail_to_pass: f.list("FAIL_TO_PASS"),
            pass_to_pass: f.list("PASS_TO_PASS"),
            problem_statement: f.text("problem_statement"),
            test_cmd: f.optional_command("test_cmd"),
            python: match map.get("python") {
                None | Some(Value::Null) => None,
                Some(Value::String(p)) if !p.is_empty() => Some(PathBuf::from(p)),
                Some(_) => {
                    f.fail("python", "must be the path of an interpreter");
                    None
                }
            },
            version: match map.get("version") {
                None | Some(Value::Null) => None,
                Some(Value::String(v)) => Some(v.clone()),
                Some(Value::Number(n)) => Some(n.to_string()),
                Some(_) => {
                    f.fail("version", "must be a string");
                    None
                }
            },
            environment_setup_commit: f.optional_string("environment_setup_commit").filter(|c| {
                let hex = !c.is_empty() && c.chars().all(|c| c.is_ascii_hexdigit());
                if !hex {
                    f.fail(
                        "environment_setup_commit",
                        "must be a commit id (hexadecimal)",
                    );
                }
                hex
            }),
            requirements: match map.get("requirements") {
                None | Some(Value::Null) => None,
                Some(Value::String(r)) => Some(r.clone()),
                Some(Value::Array(lines)) if lines.iter().all(Value::is_string) => Some(
                    lines
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|l| format!("{l}\n"))
                        .collect(),
                ),
                Some(_) => {
                    f.fail(
                        "requirements",
                        "must be pip requirements: text, or a list of lines",
                    );
                    None
                }
            },
            log_parser: f.optional_string("log_parser"),
            eval_type: match f.optional_string("eval_type") {
                None => EvalType::default(),
                Some(name) => EvalType::of_name(&name).unwrap_or_else(|| {
                    f.fail("eval_type", "must be `pass_and_fail` or `fail_only`");
                    EvalType::default()
                }),
            },
            eval_commands: f.lines("eval_commands"),
            pre_install: f.lines("pre_install"),
            install: f.lines("install"),
            place: place.clone(),
        };
        if instance.fail_to_pass.is_empty() && map.contains_key("FAIL_TO_PASS") {
            f.fail(
                "FAIL_TO_PASS",
                "is empty: the golden tests must fail on the base somewhere",
            );
        }
        if !id.is_empty() {
            if let Some(first) = seen.insert(id.clone(), place.clone()) {
                errors.push(format!(
                    "{place}: field `instance_id`: `{id}` is also at {first}"
                ));
            }
        }
        out.push(instance);
    }
    if !errors.is_empty() {
        return Err(DatasetError::Records(errors));
    }
    Ok(out)
}

fn valid_repo(repo: &str) -> bool {
    let mut parts = repo.split('/');
    let ok = |p: Option<&str>| {
        p.is_some_and(|p| {
            !p.is_empty()
                && p != "."
                && p != ".."
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        })
    };
    ok(parts.next()) && ok(parts.next()) && parts.next().is_none()
}

/// The predictions of `path`, checked against `instances`: every field
/// present, every instance known, one prediction per (instance, generator).
pub fn read_predictions(
    path: &Path,
    instances: &[Instance],
) -> Result<Vec<Prediction>, DatasetError> {
    let known: BTreeSet<&str> = instances.iter().map(|i| i.id.as_str()).collect();
    let mut errors = Vec::new();
    let mut out = Vec::new();
    let mut seen: BTreeMap<(String, String), String> = BTreeMap::new();
    for (line, map) in objects(path)? {
        let mut place = format!("{}:{line}", path.display());
        if let Some(id) = map.get("instance_id").and_then(Value::as_str) {
            place = format!("{place} (instance {id})");
        }
        let mut f = Fields {
            map: &map,
            place: place.clone(),
            errors: &mut errors,
        };
        let instance_id = f.string("instance_id");
        let generator = f.string("model_name_or_path");
        let patch = f.text("model_patch");
        if !instance_id.is_empty() && !known.contains(instance_id.as_str()) {
            f.fail(
                "instance_id",
                &format!(
                    "`{instance_id}` is not in the instances file; add it there or drop the \
                     prediction"
                ),
            );
        }
        if !instance_id.is_empty() && !generator.is_empty() {
            let key = (instance_id.clone(), generator.clone());
            if let Some(first) = seen.insert(key, place.clone()) {
                errors.push(format!(
                    "{place}: generator `{generator}` already has a prediction for this \
                     instance at {first}"
                ));
            }
        }
        out.push(Prediction {
            instance_id,
            generator,
            patch,
            place,
        });
    }
    if !errors.is_empty() {
        return Err(DatasetError::Records(errors));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), text).unwrap();
        f
    }

    const GOOD: &str = r#"{"instance_id":"a__b-1","repo":"a/b","base_commit":"abc123","patch":"diff --git a/x b/x\n","test_patch":"diff --git a/t b/t\n","FAIL_TO_PASS":"[\"t.py::test_a\"]","PASS_TO_PASS":[],"problem_statement":"it breaks"}"#;

    #[test]
    fn swe_bench_records_read_with_lists_as_strings_or_arrays() {
        let f = file(&format!("{GOOD}\n\n"));
        let got = read_instances(f.path()).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].fail_to_pass, ["t.py::test_a"]);
        assert!(got[0].pass_to_pass.is_empty());
        assert_eq!(got[0].test_cmd, None);
    }

    #[test]
    fn every_bad_field_is_named_with_its_line() {
        let bad = GOOD
            .replace(r#""repo":"a/b""#, r#""repo":"a/b/c""#)
            .replace(
                r#""FAIL_TO_PASS":"[\"t.py::test_a\"]""#,
                r#""FAIL_TO_PASS":"[oops""#,
            )
            .replace(r#""patch":"diff --git a/x b/x\n","#, "");
        let f = file(&format!("{GOOD}\n{bad}\nnot json\n"));
        let DatasetError::Records(errors) = read_instances(f.path()).unwrap_err() else {
            panic!()
        };
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains(":3: not JSON"), "{errors:?}");
        let f = file(&format!("{GOOD}\n{bad}\n"));
        let DatasetError::Records(errors) = read_instances(f.path()).unwrap_err() else {
            panic!()
        };
        let joined = errors.join("\n");
        assert!(
            joined.contains(":2 (instance a__b-1): field `repo`: must be `owner/name`"),
            "{joined}"
        );
        assert!(
            joined.contains("field `FAIL_TO_PASS`: is a string but not a JSON list"),
            "{joined}"
        );
        assert!(joined.contains("field `patch`: is missing"), "{joined}");
        assert!(
            joined.contains("field `instance_id`: `a__b-1` is also at"),
            "{joined}"
        );
    }

    #[test]
    fn predictions_name_unknown_instances_and_duplicates() {
        let inst = read_instances(file(GOOD).path()).unwrap();
        let p = file(concat!(
            r#"{"instance_id":"a__b-1","model_name_or_path":"gen","model_patch":""}"#,
            "\n",
            r#"{"instance_id":"zz","model_name_or_path":"gen","model_patch":""}"#,
            "\n",
            r#"{"instance_id":"a__b-1","model_name_or_path":"gen","model_patch":"x"}"#,
            "\n",
            r#"{"instance_id":"a__b-1","model_patch":"x"}"#,
        ));
        let DatasetError::Records(errors) = read_predictions(p.path(), &inst).unwrap_err() else {
            panic!()
        };
        let joined = errors.join("\n");
        assert!(
            joined.contains(
                ":2 (instance zz): field `instance_id`: `zz` is not in the instances file"
            ),
            "{joined}"
        );
        assert!(
            joined.contains(":3 (instance a__b-1): generator `gen` already has a prediction"),
            "{joined}"
        );
        assert!(
            joined.contains(":4 (instance a__b-1): field `model_name_or_path`: is missing"),
            "{joined}"
        );
    }

    #[test]
    fn a_test_command_is_a_string_or_a_list() {
        let with = GOOD.replace('}', r#","test_cmd":"{python} -m pytest -x"}"#);
        let got = read_instances(file(&with).path()).unwrap();
        assert_eq!(
            got[0].test_cmd.as_deref(),
            Some(
                &[
                    "{python}".to_string(),
                    "-m".into(),
                    "pytest".into(),
                    "-x".into()
                ][..]
            )
        );
    }
}

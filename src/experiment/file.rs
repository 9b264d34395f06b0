//! The experiment file: YAML checked against `schemas/experiment.schema.json`,
//! then resolved (paths made absolute against the file's directory, each arm's
//! skill loaded) with every problem reported at its line and column.

mod checker;
mod raw;
pub(crate) mod resolved;

pub(crate) use checker::on_path;
use checker::Checker;
use raw::Raw;
pub use resolved::{Adapter, Arm, Experiment, FileError, Model, MpeSettings};

use crate::skill::schema::{self, BundledSchema};
use crate::skill::yaml::{self, Position};
use crate::skill::Issue;
use std::path::Path;

/// The schema, as shipped.
pub const SCHEMA: &str = include_str!("../../schemas/experiment.schema.json");

static EXPERIMENT_SCHEMA: BundledSchema =
    BundledSchema::new("schemas/experiment.schema.json", SCHEMA);

/// The largest experiment file read.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// Read and resolve the experiment file at `path`.
pub fn load(path: &Path) -> Result<Experiment, FileError> {
    let io = |source| FileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = crate::sys::bounded_read::read_regular_file(path, MAX_FILE_BYTES).map_err(io)?;
    let text = String::from_utf8(bytes)
        .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
    parse(&text, path)
}

/// Resolve experiment `text`, read from `path` (paths are relative to its
/// directory).
pub fn parse(text: &str, path: &Path) -> Result<Experiment, FileError> {
    let doc = yaml::parse(text).map_err(|e| FileError::Yaml {
        path: path.to_path_buf(),
        position: e.position,
        message: e.message,
    })?;
    let invalid = |issues| FileError::Invalid {
        path: path.to_path_buf(),
        issues,
    };
    let issues = EXPERIMENT_SCHEMA.issues(&doc, describe);
    if !issues.is_empty() {
        return Err(invalid(issues));
    }
    let raw: Raw = serde_json::from_value(doc.value.clone()).map_err(|e| {
        invalid(vec![Issue {
            position: Position { line: 1, column: 1 },
            field: String::new(),
            message: format!("does not match the experiment structure: {e}"),
        }])
    })?;
    let dir = path
        .parent()
        .map(|d| {
            if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            }
        })
        .unwrap_or(Path::new("."));
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut check = Checker {
        doc: &doc,
        dir: &dir,
        issues: Vec::new(),
    };
    let experiment = check.resolve(raw, path);
    if !check.issues.is_empty() {
        let mut issues = check.issues;
        issues.sort_by_key(|i| (i.position.line, i.position.column));
        return Err(invalid(issues));
    }
    Ok(experiment)
}

/// A schema error in words an experiment's author can act on.
fn describe(error: &jsonschema::ValidationError, pointer: &str) -> String {
    use jsonschema::error::ValidationErrorKind as K;
    match error.kind() {
        K::OneOfNotValid { .. } if pointer.ends_with("timeout") || pointer.ends_with("time") => {
            "must be a duration like \"90s\", \"30m\", \"2h\", or a positive number of seconds"
                .into()
        }
        K::PropertyNames { .. } | K::Pattern { .. } if pointer.starts_with("/arms") => {
            "an arm's name is lowercase letters, digits, '-' and '_'".into()
        }
        _ => schema::describe(error),
    }
}

#[cfg(test)]
mod tests;

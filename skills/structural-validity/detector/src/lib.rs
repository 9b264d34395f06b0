//! Fires when the patch does not apply cleanly to its base, or when a Python
//! file it changes no longer parses.
//!
//! "Applies" is checked against the files themselves, read through the
//! `read-file` capability: for a working-tree patch the workspace holds the new
//! files, so every hunk must reverse-apply to them exactly; for a patch given
//! with `--patch` the workspace holds the base, so every hunk must apply to it.
//! Python is parsed with Ruff's parser, so the check matches what Python 3 accepts.

use critic_sdk::diff::{apply, ApplyError};
use critic_sdk::host::read_file_string;
use critic_sdk::{DetectorInput, DetectorOutput, FileChange, FileStatus, Hunk, PatchOrigin};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// File suffixes parsed as Python.
    #[serde(default = "default_suffixes")]
    python_suffixes: Vec<String>,
}

fn default_suffixes() -> Vec<String> {
    vec![".py".into(), ".pyi".into()]
}

/// One problem found in one file.
struct Problem {
    path: String,
    kind: &'static str,
    detail: String,
}

/// The new content of `file`, after checking its hunks apply.
fn new_content(file: &FileChange, origin: PatchOrigin) -> Result<Option<String>, Problem> {
    let problem = |kind, detail: String| Problem {
        path: file.path.clone(),
        kind,
        detail,
    };
    let mismatch = |e: ApplyError| problem("does-not-apply", e.to_string());
    if file.binary {
        return Ok(None);
    }
    match origin {
        PatchOrigin::Worktree => {
            if file.status == FileStatus::Deleted {
                return Ok(None);
            }
            let new = read_file_string(&file.path).map_err(|e| problem("unreadable", e))?;
            let reversed: Vec<Hunk> = file.hunks.iter().map(Hunk::reversed).collect();
            apply(&new, &reversed).map_err(mismatch)?;
            Ok(Some(new))
        }
        PatchOrigin::File => {
            let old = match file.status {
                FileStatus::Added => String::new(),
                _ => {
                    let old_path = file.old_path.as_deref().unwrap_or(&file.path);
                    read_file_string(old_path).map_err(|e| problem("missing-base-file", e))?
                }
            };
            let new = apply(&old, &file.hunks).map_err(mismatch)?;
            Ok((file.status != FileStatus::Deleted).then_some(new))
        }
    }
}

/// The detector.
pub fn detect(input: &DetectorInput) -> Result<DetectorOutput, String> {
    let config: Config = input.config_as()?;
    let mut problems = Vec::new();
    for file in &input.patch.files {
        match new_content(file, input.patch.origin) {
            Err(p) => problems.push(p),
            Ok(Some(text))
                if config
                    .python_suffixes
                    .iter()
                    .any(|s| file.path.ends_with(s)) =>
            {
                if let Some(detail) = critic_sdk::python::syntax_error(&text) {
                    problems.push(Problem {
                        path: file.path.clone(),
                        kind: "python-syntax",
                        detail,
                    });
                }
            }
            Ok(_) => {}
        }
    }
    let metadata = json!({
        "problems": problems.iter().map(|p| json!({
            "path": p.path, "kind": p.kind, "detail": p.detail
        })).collect::<Vec<_>>(),
        "files_checked": input.patch.files.len(),
    });
    if problems.is_empty() {
        return Ok(DetectorOutput::pass().with_metadata(metadata));
    }
    let list = problems
        .iter()
        .map(|p| format!("- {} ({}): {}", p.path, p.kind, p.detail))
        .collect::<Vec<_>>()
        .join("\n");
    Ok(DetectorOutput::fire(format!(
        "Your patch is not structurally valid:\n{list}\nFix these files so the patch applies \
         to the base commit and every changed Python file parses, then finish again."
    ))
    .with_metadata(metadata))
}

critic_sdk::export_detector!(detect);

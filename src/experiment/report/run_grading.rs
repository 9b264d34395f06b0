//! The grading on a run's page: each golden test id's status, the grading
//! command's output, and the run's own test on the base and the golden fix.

use super::run_files::{json_file, open, RunFiles, Shown, LOG_SHOWN};
use crate::grading::grade::Resolution;
use crate::sys::bounded_read::Part;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The largest grading log read: it holds up to 8 MiB of each output,
/// which JSON's escapes can make six times larger.
const GRADE_LOG_MAX: u64 = 128 << 20;

/// A grading log (`grade/golden.json`, `grade/own-on-*.json`): the parts
/// the page shows.
#[derive(Deserialize)]
struct GradeLog {
    #[serde(default)]
    result: Option<Output>,
    #[serde(default)]
    grade: Option<Resolution>,
}

#[derive(Deserialize)]
struct Output {
    exit_code: Option<i32>,
    #[serde(default)]
    timed_out: bool,
    #[serde(default)]
    stdout: String,
    #[serde(default)]
    stderr: String,
}

/// A grading command's output as shown.
#[derive(Serialize)]
struct OutputView {
    what: String,
    href: Option<String>,
    exit: String,
    timed_out: bool,
    streams: Vec<Stream>,
}

#[derive(Serialize)]
struct Stream {
    name: &'static str,
    shown: Shown,
}

fn output_view(output: &Output, what: &str, href: Option<&str>) -> OutputView {
    OutputView {
        what: what.to_string(),
        href: href.map(str::to_string),
        exit: output.exit_code.map_or("–".to_string(), |c| c.to_string()),
        timed_out: output.timed_out,
        streams: [("stdout", &output.stdout), ("stderr", &output.stderr)]
            .into_iter()
            .filter(|(_, text)| !text.is_empty())
            .map(|(name, text)| Stream {
                name,
                shown: Shown::of_text(text, LOG_SHOWN, Part::Tail),
            })
            .collect(),
    }
}

fn read_grade_log(files: &RunFiles, rel: &str) -> Option<Result<GradeLog, String>> {
    json_file(files, rel, GRADE_LOG_MAX).map(|bytes| {
        bytes.and_then(|b| {
            serde_json::from_slice(&b).map_err(|e| format!("{rel} is not a grading log: {e}"))
        })
    })
}

/// The golden grading: its grade and its command's output.
#[derive(Serialize)]
struct Golden {
    grade: Option<ResolutionView>,
    output: Option<OutputView>,
}

/// The run's own test on one tree.
#[derive(Serialize)]
struct Own {
    rel: &'static str,
    on: &'static str,
    output: Option<OutputView>,
    error: Option<String>,
}

/// The grading: each golden id's status, then the run's own test.
#[derive(Serialize)]
pub(super) struct Grading {
    golden: Option<Golden>,
    golden_error: Option<String>,
    own: Vec<Own>,
}

pub(super) fn grading(files: &RunFiles) -> Grading {
    let (golden, golden_error) = match read_grade_log(files, "grade/golden.json") {
        None => (None, None),
        Some(Err(e)) => (None, Some(e)),
        Some(Ok(log)) => (
            Some(Golden {
                grade: log.grade.as_ref().map(resolution),
                output: log
                    .result
                    .as_ref()
                    .map(|o| output_view(o, "The grading run's output", None)),
            }),
            None,
        ),
    };
    let own = [
        ("grade/own-on-base.json", "on the base"),
        ("grade/own-on-golden.json", "on the golden fix"),
    ]
    .into_iter()
    .filter(|(rel, _)| open(files, rel).is_some())
    .map(|(rel, on)| {
        let (output, error) = match read_grade_log(files, rel) {
            Some(Ok(GradeLog {
                result: Some(output),
                ..
            })) => (Some(output_view(&output, on, Some(rel))), None),
            Some(Err(e)) => (None, Some(e)),
            _ => (None, None),
        };
        Own {
            rel,
            on,
            output,
            error,
        }
    })
    .collect();
    Grading {
        golden,
        golden_error,
        own,
    }
}

/// A golden test id's grading.
#[derive(Serialize)]
struct IdRow {
    list: String,
    id: String,
    /// The name it was found as, when not its own.
    key: Option<String>,
    status: &'static str,
    rule: String,
    success: bool,
}

#[derive(Serialize)]
struct Reason {
    label: &'static str,
    text: String,
}

#[derive(Serialize)]
struct Restored {
    path: String,
    why: String,
}

/// A grade: why it resolves nothing or failed, each id, what was put back.
#[derive(Serialize)]
struct ResolutionView {
    reasons: Vec<Reason>,
    /// FAIL_TO_PASS ids that succeed, and of how many.
    f2p: (usize, usize),
    /// PASS_TO_PASS ids that succeed, and of how many.
    p2p: (usize, usize),
    ids: Vec<IdRow>,
    restored: Vec<Restored>,
    notes: Vec<String>,
}

fn resolution(grade: &Resolution) -> ResolutionView {
    let passed = |list: crate::grading::status::List| {
        let of: Vec<_> = grade.ids.iter().filter(|g| g.list == list).collect();
        (of.iter().filter(|g| g.success).count(), of.len())
    };
    let name = |v: Value| v.as_str().unwrap_or("?").to_string();
    ResolutionView {
        reasons: [
            ("Why the run resolves nothing", &grade.problem),
            ("Why grading failed", &grade.infra),
        ]
        .into_iter()
        .filter_map(|(label, text)| {
            text.as_ref().map(|t| Reason {
                label,
                text: t.clone(),
            })
        })
        .collect(),
        f2p: passed(crate::grading::status::List::FailToPass),
        p2p: passed(crate::grading::status::List::PassToPass),
        ids: grade
            .ids
            .iter()
            .map(|g| IdRow {
                list: name(serde_json::to_value(g.list).unwrap_or_default()),
                id: g.id.clone(),
                key: g.key.clone().filter(|k| *k != g.id),
                status: g.status.map_or("missing", |s| s.word()),
                rule: name(serde_json::to_value(g.rule).unwrap_or_default()),
                success: g.success,
            })
            .collect(),
        restored: grade
            .restored
            .iter()
            .map(|r| Restored {
                path: r.path.clone(),
                why: r.why.clone(),
            })
            .collect(),
        notes: grade.notes.clone(),
    }
}

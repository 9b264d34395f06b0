//! A run's own page, `runs/<instance>/<arm>/<sample>/run.html`: how the run
//! ended (`run_facts.rs`), each round (the agent's turn, the critic's verdict with every
//! signal's result and metadata, the follow-up it sent, the patch it
//! judged, the end of the agent's log, the model calls the runner's proxy
//! recorded, request and answer), the final patch, and the grading id by
//! id. What agents and skills wrote is shown escaped, in part when it is
//! large, read without blocking and through no link at the last step; the
//! page has no script.

use super::arms::ArmDefinition;
use super::run_files::{json_file, open, part, RunFiles, Shown, LOG_SHOWN};
use super::run_grading::grading;
use super::templates::render;
use crate::experiment::db::{Round, Run};
use crate::sys::bounded_read::Part;
use minijinja::context;
use serde::Serialize;
use serde_json::Value;
/// The page's file name in a run's directory.
pub const FILE: &str = "run.html";

/// How much of a patch is shown.
const PATCH_SHOWN: u64 = 256 << 10;
/// How much of a detector's metadata is shown per signal.
const METADATA_SHOWN: usize = 64 << 10;
/// The largest verdict read: the runner keeps none larger.
const VERDICT_MAX: u64 = crate::experiment::session::MAX_VERDICT_BYTES as u64;

/// A diff as shown, its lines marked.
#[derive(Serialize)]
struct Diff<'a> {
    /// Its lines as spans (HTML made here, its text escaped).
    spans: minijinja::Value,
    note: Option<&'a str>,
}

/// What a diff's line does.
fn line_class(line: &str) -> &'static str {
    if ["diff --git", "+++ ", "--- "]
        .iter()
        .any(|p| line.starts_with(p))
    {
        "file"
    } else if line.starts_with("@@") {
        "hunk"
    } else if line.starts_with('+') {
        "add"
    } else if line.starts_with('-') {
        "del"
    } else {
        ""
    }
}

/// `shown` as spans of lines in a row that do the same, each marked by
/// its CSS class. The one piece of a run page not in its template: a patch
/// has hundreds of spans, and a template loop over them cost a sixth of
/// the page's time (docs/PERFORMANCE.md).
fn diff(shown: &Shown) -> Diff<'_> {
    let text = shown.text.as_str();
    // Each span as (class, start, end) in `text`, its lines' newlines in it.
    let mut spans: Vec<(&str, usize, usize)> = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let (class, end) = (line_class(line), at + line.len());
        match spans.last_mut() {
            Some((c, _, last_end)) if *c == class => *last_end = end,
            _ => spans.push((class, at, end)),
        }
        at = end;
    }
    let mut html = String::with_capacity(text.len() + 32 * spans.len());
    for (class, from, to) in spans {
        html.push_str("<span class=\"");
        html.push_str(class);
        html.push_str("\">");
        html_escape::encode_text_to_string(&text[from..to], &mut html);
        html.push_str("</span>");
    }
    Diff {
        spans: super::templates::safe(html),
        note: shown.note.as_deref(),
    }
}

/// What a diff changes, in a few words, as the host's diff parser counts
/// it.
fn diff_summary(text: &str) -> String {
    match critic_sdk::diff::parse(text) {
        Ok(files) => format!(
            "{} file(s), +{} −{}",
            files.len(),
            files.iter().map(|f| f.added).sum::<usize>(),
            files.iter().map(|f| f.removed).sum::<usize>()
        ),
        Err(_) => "not in git's diff format".into(),
    }
}

/// A text file of the run's directory as a collapsed block linking to
/// it, or why it cannot be shown.
#[derive(Serialize)]
struct FileBlock {
    error: Option<String>,
    rel: String,
    title: &'static str,
    shown: Option<Shown>,
}

fn file_block(files: &RunFiles, rel: String, title: &'static str, which: Part) -> Option<FileBlock> {
    let (error, shown) = match part(files, &rel, LOG_SHOWN, which)? {
        Ok(shown) => (None, Some(shown)),
        Err(e) => (Some(e), None),
    };
    Some(FileBlock {
        error,
        rel,
        title,
        shown,
    })
}

/// A signal's line in the verdict's table.
#[derive(Serialize)]
struct SignalRow {
    name: String,
    r#type: String,
    status: String,
    triggered: String,
    weight: String,
    ms: String,
}

/// What a signal reported: its metadata and error.
#[derive(Serialize)]
struct Reported {
    name: String,
    shown: Shown,
}

/// The critic's verdict of a round: its message and every signal, or why
/// it cannot be shown.
#[derive(Serialize, Default)]
struct Judged {
    error: Option<String>,
    message: String,
    score: String,
    threshold: String,
    iteration: String,
    max_iterations: String,
    skill_name: String,
    skill_version: String,
    rel: String,
    signals: Vec<SignalRow>,
    reported: Vec<Reported>,
}

fn judged(files: &RunFiles, rel: &str) -> Judged {
    let not_shown = |error: String| Judged {
        error: Some(error),
        ..Judged::default()
    };
    let verdict: Value = match json_file(files, rel, VERDICT_MAX) {
        None => return not_shown("No verdict was recorded for this round.".into()),
        Some(Err(e)) => return not_shown(e),
        Some(Ok(bytes)) => match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => return not_shown(format!("{rel} is not a verdict: {e}")),
        },
    };
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => "–".into(),
        other => other.to_string(),
    };
    let signals = verdict["signals"].as_array().cloned().unwrap_or_default();
    Judged {
        error: None,
        message: Shown::of_text(&text(&verdict["message"]), 4096, Part::Head).text,
        score: text(&verdict["score"]),
        threshold: text(&verdict["threshold"]),
        iteration: text(&verdict["iteration"]),
        max_iterations: text(&verdict["max_iterations"]),
        skill_name: text(&verdict["skill"]["name"]),
        skill_version: text(&verdict["skill"]["version"]),
        rel: rel.to_string(),
        signals: signals
            .iter()
            .map(|s| SignalRow {
                name: text(&s["name"]),
                r#type: text(&s["type"]),
                status: text(&s["status"]),
                triggered: text(&s["triggered"]),
                weight: text(&s["weight"]),
                ms: s["duration_ms"]
                    .as_f64()
                    .map_or("–".into(), |ms| format!("{ms:.0}")),
            })
            .collect(),
        reported: signals
            .iter()
            .filter(|s| !(s["metadata"].is_null() && s["error"].is_null()))
            .map(|s| {
                let body = serde_json::to_string_pretty(&serde_json::json!({
                    "metadata": s["metadata"],
                    "error": s["error"],
                }))
                .unwrap_or_default();
                Reported {
                    name: text(&s["name"]),
                    shown: Shown::of_text(&body, METADATA_SHOWN as u64, Part::Head),
                }
            })
            .collect(),
    }
}

/// The most of `model.jsonl` read for the page.
const MODEL_CALLS_READ: u64 = 64 << 20;

/// The model calls the run's proxy recorded, when it did.
fn model_calls(files: &RunFiles) -> Vec<Value> {
    match part(
        files,
        crate::experiment::model_proxy::RECORD_FILE,
        MODEL_CALLS_READ,
        Part::Head,
    ) {
        Some(Ok(shown)) => shown
            .text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect(),
        _ => Vec::new(),
    }
}

/// A model call: its request and its answer.
#[derive(Serialize)]
struct Call {
    call: String,
    method: String,
    path: String,
    status: String,
    input: String,
    output: String,
    ms: String,
    source: String,
    why: Option<String>,
    request: Shown,
    response: Shown,
}

/// `calls` of round `k`.
fn calls_of(calls: &[Value], k: u32) -> Vec<Call> {
    let shown = |v: &Value| {
        let text = serde_json::to_string_pretty(v).unwrap_or_default();
        Shown::of_text(&text, LOG_SHOWN, Part::Head)
    };
    let str_of = |v: &Value| v.as_str().unwrap_or("").to_string();
    calls
        .iter()
        .filter(|c| c["round"] == k)
        .map(|c| Call {
            call: c["call"].to_string(),
            method: str_of(&c["method"]),
            path: str_of(&c["path"]),
            status: c["status"]
                .as_u64()
                .map_or("no answer".into(), |s| s.to_string()),
            input: c["usage"]["input"].to_string(),
            output: c["usage"]["output"].to_string(),
            ms: format!("{:.0}", c["total_ms"].as_f64().unwrap_or(0.0)),
            source: str_of(&c["source"]),
            why: c["refused"]
                .as_str()
                .or(c["error"].as_str())
                .map(str::to_string),
            request: shown(&c["request"]),
            response: shown(&c["response"]),
        })
        .collect()
}

/// The patch a round's critic judged.
#[derive(Serialize)]
struct Judging<'a> {
    empty: bool,
    rel: &'a str,
    summary: String,
    diff: Option<Diff<'a>>,
}

/// A round as its section shows it.
#[derive(Serialize)]
struct RoundView<'a> {
    k: u32,
    class: &'static str,
    verdict: &'a str,
    turn: String,
    budget_exhausted: bool,
    critic_error: Option<&'a str>,
    prompt: Option<FileBlock>,
    judged: Judged,
    followup: Option<Shown>,
    patch: Option<Judging<'a>>,
    agent_log: Option<FileBlock>,
    check_stderr: Option<FileBlock>,
    calls: Vec<Call>,
}

fn round_view<'a>(
    files: &RunFiles,
    r: &'a Round,
    calls: &[Value],
    patch: &'a (String, Option<Result<Shown, String>>),
) -> RoundView<'a> {
    let k = r.round;
    let round = format!("round-{k}");
    let (rel, shown) = patch;
    RoundView {
        k,
        class: match r.verdict.as_str() {
            "accepted" => "resolved",
            "rejected" => "unresolved",
            _ => "infra-error",
        },
        verdict: &r.verdict,
        turn: match r.turn_exit {
            Some(code) => format!("The agent's turn exited {code} after {:.1} s", r.turn_s),
            None if r.turn_s > 0.0 => {
                format!("The agent's turn was stopped after {:.1} s", r.turn_s)
            }
            None => "The finish came from the agent's own session (its Stop hook)".into(),
        },
        budget_exhausted: r.budget_exhausted,
        critic_error: r.critic_error.as_deref(),
        prompt: file_block(
            files,
            format!("{round}/prompt.md"),
            "The prompt of this turn",
            Part::Head,
        ),
        judged: judged(files, &format!("{round}/verdict.json")),
        followup: r
            .followup
            .as_ref()
            .map(|f| Shown::of_text(f, METADATA_SHOWN as u64, Part::Head)),
        patch: match shown {
            Some(Ok(shown)) if shown.text.trim().is_empty() => Some(Judging {
                empty: true,
                rel,
                summary: String::new(),
                diff: None,
            }),
            Some(Ok(shown)) => Some(Judging {
                empty: false,
                rel,
                summary: if shown.left_out > 0 {
                    format!("its first {} KiB", shown.text.len() / 1024)
                } else {
                    diff_summary(&shown.text)
                },
                diff: Some(diff(shown)),
            }),
            _ => None,
        },
        agent_log: file_block(
            files,
            format!("{round}/agent.log"),
            "The end of the agent's log",
            Part::Tail,
        ),
        check_stderr: file_block(
            files,
            format!("{round}/check.stderr"),
            "What the check wrote to stderr",
            Part::Tail,
        ),
        calls: calls_of(calls, k),
    }
}

/// The final patch as shown.
#[derive(Serialize)]
struct FinalPatch<'a> {
    empty: bool,
    summary: String,
    /// Whether `final.patch` is there to link to.
    linked: bool,
    diff: Option<Diff<'a>>,
}

/// The page of `run` of `arm`, with its `rounds`, from the files of its
/// directory.
pub(super) fn html(
    run: &Run,
    arm: Option<&ArmDefinition>,
    rounds: &[Round],
    files: &RunFiles,
) -> Result<String, minijinja::Error> {
    let k = &run.key;
    let no_rounds = rounds.is_empty().then(|| {
        if run.key.arm.starts_with('@') {
            "a control has no agent: its patch is graded as it is"
        } else {
            "the run ended before its agent took a turn, or its patch was made elsewhere (a \
             graded prediction) and is graded as it is"
        }
    });
    let calls = model_calls(files);
    // The patches judged, read first: the rounds' views borrow their text.
    let patches: Vec<(String, Option<Result<Shown, String>>)> = rounds
        .iter()
        .map(|r| {
            let rel = format!("round-{}/patch.diff", r.round);
            let shown = part(files, &rel, PATCH_SHOWN, Part::Head);
            (rel, shown)
        })
        .collect();
    let final_shown = Shown::of_text(&run.model_patch, PATCH_SHOWN, Part::Head);
    let final_patch = FinalPatch {
        empty: run.model_patch.is_empty(),
        summary: diff_summary(&run.model_patch),
        linked: matches!(open(files, "final.patch"), Some(Ok(_))),
        diff: (!run.model_patch.is_empty()).then(|| diff(&final_shown)),
    };
    render(
        "run.html",
        context! {
            title => k.to_string(),
            instance => &k.instance_id,
            arm => &k.arm,
            sample => k.sample,
            has_record => matches!(open(files, "run.json"), Some(Ok(_))),
            facts => super::run_facts::facts(run, arm),
            no_rounds,
            rounds => rounds
                .iter()
                .zip(&patches)
                .map(|(r, patch)| round_view(files, r, &calls, patch))
                .collect::<Vec<_>>(),
            final_patch,
            grading => grading(files),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use super::super::templates::as_written;
    use crate::sandbox::beneath::Beneath;
    use std::path::Path;
    use crate::experiment::db::{RunKey, Status};

    /// The page of `run` with `rounds` from `dir`, as written.
    fn page_of(run: &Run, rounds: &[Round], dir: &Path) -> String {
        as_written(&html(run, None, rounds, &Beneath::open(dir).ok()).unwrap())
    }

    fn run() -> Run {
        Run {
            key: RunKey {
                instance_id: "a<b>".into(),
                arm: "arm\"x".into(),
                sample: 0,
            },
            status: Status::Ok,
            error_class: None,
            error: None,
            resolved: Some(false),
            grade_problem: Some("<b>bold</b>".into()),
            f2p: None,
            finishes: 1,
            rounds: 1,
            budget_exhausted: false,
            outcome_test: None,
            tokens: None,
            cost: None,
            usage_source: None,
            model_calls: None,
            duration_s: 1.0,
            attempts: 1,
            model_patch: "+</pre><script>alert(1)</script>\n".into(),
        }
    }

    fn round() -> Round {
        Round {
            round: 1,
            turn_exit: Some(0),
            turn_s: 0.5,
            verdict: "rejected".into(),
            budget_exhausted: false,
            followup: Some("<img src=x onerror=alert(1)>".into()),
            critic_error: None,
            resolved: None,
        }
    }

    #[test]
    fn what_agents_and_skills_wrote_is_shown_as_text() {
        let dir = tempfile::tempdir().unwrap();
        let round_dir = dir.path().join("round-1");
        std::fs::create_dir_all(&round_dir).unwrap();
        std::fs::write(
            round_dir.join("verdict.json"),
            r#"{"message": "<script>x</script>", "signals": [{"name": "<i>n</i>",
                "metadata": {"html": "</pre><script>y</script>"}}]}"#,
        )
        .unwrap();
        std::fs::write(
            round_dir.join("patch.diff"),
            "-<style>*{display:none}</style>\n",
        )
        .unwrap();
        let page = page_of(&run(), &[round()], dir.path());
        for raw in ["<script", "<img", "<style>*", "<b>bold", "<i>n"] {
            assert!(!page.contains(raw), "{raw} reached the page");
        }
        assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;"));
        assert!(page.contains("&lt;/pre&gt;&lt;script&gt;y&lt;/script&gt;"));
    }

    #[test]
    fn each_rounds_model_calls_show_request_and_answer_escaped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("round-1")).unwrap();
        let call = |n: u32, round: u32, text: &str| {
            serde_json::json!({"call": n, "round": round, "method": "POST", "path": "/v1/messages",
                "request": {"messages": [{"content": text}]}, "status": 200, "source": "live",
                "response": {"content": [{"text": "<b>answer</b>"}]},
                "usage": {"input": 7, "output": 3}, "total_ms": 12.0})
            .to_string()
        };
        std::fs::write(
            dir.path().join("model.jsonl"),
            format!(
                "{}\n{}\n",
                call(1, 1, "<script>fix</script>"),
                call(2, 2, "later")
            ),
        )
        .unwrap();
        let mut r = round();
        r.critic_error = Some("signal `fix-only`: out of memory".into());
        let page = page_of(&run(), &[r], dir.path());
        assert!(page.contains("Model calls (1,"), "{page}");
        assert!(
            page.contains("call 1 POST /v1/messages → 200, 7 in / 3 out tokens"),
            "{page}"
        );
        assert!(page.contains("&lt;script&gt;fix&lt;/script&gt;") && !page.contains("<script>"));
        assert!(page.contains("&lt;b&gt;answer&lt;/b&gt;"));
        assert!(!page.contains("later"), "round 2's call is not round 1's");
        assert!(
            page.contains("The critic failed on this finish (signal `fix-only`: out of memory)")
        );
    }

    #[test]
    fn planted_fifos_and_links_are_named_not_followed_and_large_logs_shown_in_part() {
        let dir = tempfile::tempdir().unwrap();
        let round_dir = dir.path().join("round-1");
        std::fs::create_dir_all(&round_dir).unwrap();
        assert!(std::process::Command::new("mkfifo")
            .arg(round_dir.join("agent.log"))
            .status()
            .unwrap()
            .success());
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "+the user's secret\n").unwrap();
        std::os::unix::fs::symlink(&secret, round_dir.join("patch.diff")).unwrap();
        std::os::unix::fs::symlink(&secret, round_dir.join("check.stderr")).unwrap();
        let page = page_of(&run(), &[round()], dir.path());
        assert!(!page.contains("user's secret"));
        assert!(page.contains("round-1/agent.log cannot be shown"), "{page}");
        assert!(
            page.contains("round-1/check.stderr cannot be shown"),
            "{page}"
        );

        std::fs::remove_file(round_dir.join("agent.log")).unwrap();
        let log: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(round_dir.join("agent.log"), &log).unwrap();
        let page = page_of(&run(), &[round()], dir.path());
        assert!(page.contains("line 19999\n"));
        assert!(!page.contains("line 0\n"));
        assert!(page.contains("KiB before this not shown"));
    }

    #[test]
    fn a_round_or_grade_directory_planted_as_a_link_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let theirs = dir.path().join("theirs");
        std::fs::create_dir_all(theirs.join("inner")).unwrap();
        std::fs::write(theirs.join("patch.diff"), "+the user's secret\n").unwrap();
        std::fs::write(theirs.join("golden.json"), r#"{"grade": 7}"#).unwrap();
        let run_dir = dir.path().join("run");
        std::fs::create_dir_all(&run_dir).unwrap();
        std::os::unix::fs::symlink(&theirs, run_dir.join("round-1")).unwrap();
        std::os::unix::fs::symlink(&theirs, run_dir.join("grade")).unwrap();
        std::os::unix::fs::symlink(theirs.join("patch.diff"), run_dir.join("final.patch")).unwrap();
        let page = page_of(&run(), &[round()], &run_dir);
        assert!(!page.contains("user's secret"), "{page}");
        assert!(
            !page.contains("is not a grading log"),
            "golden.json was read: {page}"
        );
        assert!(
            !page.contains("href=\"final.patch\""),
            "a link to a link: {page}"
        );
    }

    #[test]
    fn a_grading_log_of_another_shape_is_named_and_the_page_still_made() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("grade")).unwrap();
        std::fs::write(dir.path().join("grade/golden.json"), r#"{"grade": 7}"#).unwrap();
        let page = page_of(&run(), &[], dir.path());
        assert!(
            page.contains("grade/golden.json is not a grading log"),
            "{page}"
        );
        assert!(page.contains("No agent turns were recorded"));
    }
}

//! A run's own page, `runs/<instance>/<arm>/<sample>/run.html`: how the run
//! ended (`run_facts.rs`), each round (the agent's turn, the critic's verdict with every
//! signal's result and metadata, the follow-up it sent, the patch it
//! judged, the end of the agent's log, the model calls the runner's proxy
//! recorded, request and answer), the final patch, and the grading id by
//! id. What agents and skills wrote is shown escaped, in part when it is
//! large, read without blocking and through no link at the last step; the
//! page has no script.

use super::arms::ArmDefinition;
use super::style::{CSP, STYLE};
use crate::experiment::db::{Round, Run};
use crate::grading::grade::Resolution;
use crate::report_html::escape;
use crate::sandbox::beneath::Beneath;
use crate::sys::bounded_read::{read_part, Part};
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

/// A run's directory, its files reached with no link followed anywhere
/// beneath it (`None`: there is none, or not as a plain directory).
pub(super) type RunFiles = Option<Beneath>;

/// The regular file `rel` of the run's directory: `None` when there is
/// none, why when it cannot be opened.
fn open(files: &RunFiles, rel: &str) -> Option<Result<std::fs::File, String>> {
    let dir = files.as_ref()?;
    match dir.open_file(Path::new(rel)) {
        Ok(file) => Some(Ok(file)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => Some(Err(format!("{rel} cannot be shown: {e}"))),
    }
}

/// The page's file name in a run's directory.
pub const FILE: &str = "run.html";

/// How much of a patch is shown.
const PATCH_SHOWN: u64 = 256 << 10;
/// How much of the end of a log is shown.
const LOG_SHOWN: u64 = 32 << 10;
/// How much of a detector's metadata is shown per signal.
const METADATA_SHOWN: usize = 64 << 10;
/// The largest verdict read: the runner keeps none larger.
const VERDICT_MAX: u64 = crate::experiment::session::MAX_VERDICT_BYTES as u64;
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

/// The text of a file in the run's directory, in part: `None` when there
/// is none, a sentence when it cannot be read.
fn part(files: &RunFiles, rel: &str, max: u64, which: Part) -> Option<Result<Shown, String>> {
    Some(open(files, rel)?.and_then(|file| {
        read_part(file, max, which)
            .map(|(bytes, size)| Shown::new(&bytes, size, which))
            .map_err(|e| format!("{rel} cannot be shown: {e}"))
    }))
}

/// Text as shown, and what of it was left out.
struct Shown {
    text: String,
    left_out: u64,
    which: Part,
}

impl Shown {
    fn new(bytes: &[u8], size: u64, which: Part) -> Shown {
        let mut text = String::from_utf8_lossy(bytes).into_owned();
        let left_out = size.saturating_sub(bytes.len() as u64);
        if left_out > 0 && which == Part::Tail {
            // Start at a line, not inside one.
            if let Some(i) = text.find('\n') {
                text.drain(..=i);
            }
        }
        Shown {
            text,
            left_out,
            which,
        }
    }

    fn of_text(text: &str, max: u64, which: Part) -> Shown {
        let bytes = text.as_bytes();
        let cut = match which {
            Part::Head => &bytes[..bytes.len().min(max as usize)],
            Part::Tail => &bytes[bytes.len().saturating_sub(max as usize)..],
        };
        Shown::new(cut, bytes.len() as u64, which)
    }

    /// A sentence on what was left out, if anything.
    fn note(&self) -> String {
        if self.left_out == 0 {
            return String::new();
        }
        let place = match self.which {
            Part::Head => "after this",
            Part::Tail => "before this",
        };
        format!(
            "<p class=\"note\">{} KiB {place} not shown.</p>",
            self.left_out.div_ceil(1024)
        )
    }
}

/// A diff, each line marked by what it does.
fn diff_html(shown: &Shown) -> String {
    let mut out = String::from("<pre class=\"diff\">");
    for line in shown.text.lines() {
        let class = if ["diff --git", "+++ ", "--- "]
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
        };
        out.push_str(&format!(
            "<span class=\"{class}\">{}</span>\n",
            escape(line)
        ));
    }
    out.push_str("</pre>");
    out.push_str(&shown.note());
    out
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

/// A link to a file of the run's directory, when it is there.
fn link(files: &RunFiles, rel: &str) -> String {
    if matches!(open(files, rel), Some(Ok(_))) {
        format!(" (<a href=\"{rel}\">{rel}</a>)")
    } else {
        String::new()
    }
}

fn pre(shown: &Shown) -> String {
    format!("<pre>{}</pre>{}", escape(&shown.text), shown.note())
}

/// A file of the run's directory as a collapsed block, with a link to it.
fn file_block(
    files: &RunFiles,
    rel: &str,
    title: &str,
    max: u64,
    which: Part,
    expanded: bool,
) -> String {
    match part(files, rel, max, which) {
        None => String::new(),
        Some(Err(e)) => format!("<p class=\"note\">{}</p>", escape(&e)),
        Some(Ok(shown)) => format!(
            "<details{}><summary>{title} (<a href=\"{rel}\">{rel}</a>)</summary>{}</details>",
            if expanded { " open" } else { "" },
            if rel.ends_with(".diff") {
                diff_html(&shown)
            } else {
                pre(&shown)
            }
        ),
    }
}

fn json_file(files: &RunFiles, rel: &str, max: u64) -> Option<Result<Vec<u8>, String>> {
    let dir = files.as_ref()?;
    match dir.read(Path::new(rel), max) {
        Ok(bytes) => Some(Ok(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => Some(Err(format!("{rel} cannot be read: {e}"))),
    }
}

/// The critic's verdict of a round: its message and every signal.
fn verdict_html(files: &RunFiles, rel: &str) -> String {
    let verdict: Value = match json_file(files, rel, VERDICT_MAX) {
        None => return "<p class=\"note\">No verdict was recorded for this round.</p>".into(),
        Some(Err(e)) => return format!("<p class=\"note\">{}</p>", escape(&e)),
        Some(Ok(bytes)) => match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => {
                return format!(
                    "<p class=\"note\">{}</p>",
                    escape(&format!("{rel} is not a verdict: {e}"))
                )
            }
        },
    };
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => "–".into(),
        other => other.to_string(),
    };
    let mut out = format!(
        "<p>{} <span class=\"note\">(score {} against threshold {}; finish {} of at most {}; \
         skill {} {}; <a href=\"{rel}\">{rel}</a>)</span></p>",
        escape(&Shown::of_text(&text(&verdict["message"]), 4096, Part::Head).text),
        escape(&text(&verdict["score"])),
        escape(&text(&verdict["threshold"])),
        escape(&text(&verdict["iteration"])),
        escape(&text(&verdict["max_iterations"])),
        escape(&text(&verdict["skill"]["name"])),
        escape(&text(&verdict["skill"]["version"])),
    );
    let signals = verdict["signals"].as_array().cloned().unwrap_or_default();
    if signals.is_empty() {
        return out;
    }
    out.push_str(
        "<div class=\"scroll\"><table class=\"signals\"><tr><th>signal</th><th>type</th>\
         <th>status</th><th>triggered</th><th>weight</th><th>ms</th></tr>",
    );
    for s in &signals {
        out.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&text(&s["name"])),
            escape(&text(&s["type"])),
            escape(&text(&s["status"])),
            escape(&text(&s["triggered"])),
            escape(&text(&s["weight"])),
            s["duration_ms"]
                .as_f64()
                .map_or("–".into(), |ms| format!("{ms:.0}")),
        ));
    }
    out.push_str("</table></div>");
    for s in &signals {
        if s["metadata"].is_null() && s["error"].is_null() {
            continue;
        }
        let mut body = serde_json::to_string_pretty(&serde_json::json!({
            "metadata": s["metadata"],
            "error": s["error"],
        }))
        .unwrap_or_default();
        let shown = Shown::of_text(&body, METADATA_SHOWN as u64, Part::Head);
        body = shown.text.clone();
        out.push_str(&format!(
            "<details><summary>what <code>{}</code> reported</summary><pre>{}</pre>{}</details>",
            escape(&text(&s["name"])),
            escape(&body),
            shown.note()
        ));
    }
    out
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

/// `calls` of round `k`, each a request and its answer.
fn calls_html(calls: &[Value], k: u32) -> String {
    let of_round: Vec<&Value> = calls.iter().filter(|c| c["round"] == k).collect();
    if of_round.is_empty() {
        return String::new();
    }
    let shown = |v: &Value| {
        let text = serde_json::to_string_pretty(v).unwrap_or_default();
        let s = Shown::of_text(&text, LOG_SHOWN, Part::Head);
        format!("<pre class=\"text\">{}</pre>{}", escape(&s.text), s.note())
    };
    let mut out = format!(
        "<h3>Model calls ({}, <a href=\"model.jsonl\">model.jsonl</a>)</h3>",
        of_round.len()
    );
    for c in of_round {
        let status = c["status"]
            .as_u64()
            .map_or("no answer".into(), |s| s.to_string());
        let usage = &c["usage"];
        let why = c["refused"]
            .as_str()
            .or(c["error"].as_str())
            .map(|w| format!(": {}", escape(w)))
            .unwrap_or_default();
        out.push_str(&format!(
            "<details><summary>call {} {} {} → {status}, {} in / {} out tokens, {:.0} ms ({}){why}\
             </summary><h4>Request</h4>{}<h4>Answer</h4>{}</details>",
            c["call"],
            escape(c["method"].as_str().unwrap_or("")),
            escape(c["path"].as_str().unwrap_or("")),
            usage["input"],
            usage["output"],
            c["total_ms"].as_f64().unwrap_or(0.0),
            escape(c["source"].as_str().unwrap_or("")),
            shown(&c["request"]),
            shown(&c["response"]),
        ));
    }
    out
}

fn round_html(files: &RunFiles, r: &Round, calls: &[Value]) -> String {
    let k = r.round;
    let class = match r.verdict.as_str() {
        "accepted" => "resolved",
        "rejected" => "unresolved",
        _ => "infra-error",
    };
    let turn = match r.turn_exit {
        Some(code) => format!("The agent's turn exited {code} after {:.1} s", r.turn_s),
        None if r.turn_s > 0.0 => format!("The agent's turn was stopped after {:.1} s", r.turn_s),
        None => "The finish came from the agent's own session (its Stop hook)".into(),
    };
    let mut out = format!(
        "<section id=\"round-{k}\"><h2>Round {k}: <span class=\"chip {class}\">{}</span></h2>\
         <p>{turn}{}.</p>",
        escape(&r.verdict),
        if r.budget_exhausted {
            "; accepted only because the skill's budget ran out"
        } else {
            ""
        }
    );
    if let Some(e) = &r.critic_error {
        out.push_str(&format!(
            "<p class=\"note\">The critic failed on this finish ({}); the verdict is what the \
             skill's <code>on_error</code> says.</p>",
            escape(e)
        ));
    }
    let round = format!("round-{k}");
    out.push_str(&file_block(
        files,
        &format!("{round}/prompt.md"),
        "The prompt of this turn",
        LOG_SHOWN,
        Part::Head,
        false,
    ));
    out.push_str("<h3>The critic's verdict</h3>");
    out.push_str(&verdict_html(files, &format!("{round}/verdict.json")));
    if let Some(followup) = &r.followup {
        let shown = Shown::of_text(followup, METADATA_SHOWN as u64, Part::Head);
        out.push_str(&format!(
            "<h3>Follow-up sent to the agent</h3><pre class=\"text\">{}</pre>{}",
            escape(&shown.text),
            shown.note()
        ));
    }
    let patch = format!("{round}/patch.diff");
    match part(files, &patch, PATCH_SHOWN, Part::Head) {
        Some(Ok(shown)) if shown.text.trim().is_empty() => out.push_str(
            "<h3>The patch judged</h3><p class=\"note empty-patch\">Empty: the workspace had no \
             change at this finish.</p>",
        ),
        Some(Ok(shown)) => out.push_str(&format!(
            "<h3>The patch judged</h3><details open><summary>{} (<a href=\"{patch}\">{patch}\
             </a>)</summary>{}</details>",
            if shown.left_out > 0 {
                format!("its first {} KiB", shown.text.len() / 1024)
            } else {
                diff_summary(&shown.text)
            },
            diff_html(&shown)
        )),
        _ => {}
    }
    out.push_str(&file_block(
        files,
        &format!("{round}/agent.log"),
        "The end of the agent's log",
        LOG_SHOWN,
        Part::Tail,
        false,
    ));
    out.push_str(&file_block(
        files,
        &format!("{round}/check.stderr"),
        "What the check wrote to stderr",
        LOG_SHOWN,
        Part::Tail,
        false,
    ));
    out.push_str(&calls_html(calls, k));
    out.push_str("</section>");
    out
}

fn output_html(output: &Output, what: &str) -> String {
    let mut out = format!(
        "<details><summary>{what}: exit {}{}</summary>",
        output.exit_code.map_or("–".to_string(), |c| c.to_string()),
        if output.timed_out { ", timed out" } else { "" },
    );
    for (name, text) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
        if !text.is_empty() {
            let shown = Shown::of_text(text, LOG_SHOWN, Part::Tail);
            out.push_str(&format!("<p>{name}</p>{}", pre(&shown)));
        }
    }
    out.push_str("</details>");
    out
}

fn read_grade_log(files: &RunFiles, rel: &str) -> Option<Result<GradeLog, String>> {
    json_file(files, rel, GRADE_LOG_MAX).map(|bytes| {
        bytes.and_then(|b| {
            serde_json::from_slice(&b).map_err(|e| format!("{rel} is not a grading log: {e}"))
        })
    })
}

/// The grading: each golden id's status, then the run's own test.
fn grading_html(files: &RunFiles) -> String {
    let mut out = String::from("<h2 id=\"grading\">Grading</h2>");
    match read_grade_log(files, "grade/golden.json") {
        None => out.push_str("<p class=\"note\">This run was not graded.</p>"),
        Some(Err(e)) => out.push_str(&format!("<p class=\"note\">{}</p>", escape(&e))),
        Some(Ok(log)) => {
            if let Some(grade) = &log.grade {
                out.push_str(&resolution_html(grade));
            }
            if let Some(output) = &log.result {
                out.push_str(&output_html(output, "The grading run's output"));
            }
            out.push_str(
                "<p class=\"note\">The command, its whole output and the grade: \
                 <a href=\"grade/golden.json\">grade/golden.json</a>.</p>",
            );
        }
    }
    let own: Vec<(&str, &str)> = [
        ("grade/own-on-base.json", "on the base"),
        ("grade/own-on-golden.json", "on the golden fix"),
    ]
    .into_iter()
    .filter(|(rel, _)| open(files, rel).is_some())
    .collect();
    if !own.is_empty() {
        out.push_str("<h3>The run's own test</h3>");
        for (rel, on) in own {
            match read_grade_log(files, rel) {
                Some(Ok(GradeLog {
                    result: Some(output),
                    ..
                })) => out.push_str(&output_html(
                    &output,
                    &format!("<a href=\"{rel}\">{on}</a>"),
                )),
                Some(Err(e)) => out.push_str(&format!("<p class=\"note\">{}</p>", escape(&e))),
                _ => out.push_str(&format!(
                    "<p class=\"note\"><a href=\"{rel}\">{on}</a>: did not run.</p>"
                )),
            }
        }
    }
    out
}

fn resolution_html(grade: &Resolution) -> String {
    let mut out = String::new();
    for (label, text) in [
        ("Why the run resolves nothing", &grade.problem),
        ("Why grading failed", &grade.infra),
    ] {
        if let Some(text) = text {
            out.push_str(&format!(
                "<p><strong>{label}:</strong> {}</p>",
                escape(text)
            ));
        }
    }
    if !grade.ids.is_empty() {
        let passed = |list: crate::grading::status::List| {
            let of: Vec<_> = grade.ids.iter().filter(|g| g.list == list).collect();
            (of.iter().filter(|g| g.success).count(), of.len())
        };
        let (f, fn_) = passed(crate::grading::status::List::FailToPass);
        let (p, pn) = passed(crate::grading::status::List::PassToPass);
        out.push_str(&format!(
            "<p>FAIL_TO_PASS: {f} of {fn_} succeed; PASS_TO_PASS: {p} of {pn} succeed.</p>\
             <div class=\"scroll\"><table id=\"ids\"><tr><th>list</th><th class=\"text\">test id\
             </th><th>status</th><th>found as</th><th>counts</th></tr>"
        ));
        for g in &grade.ids {
            let name = |v: Value| v.as_str().unwrap_or("?").to_string();
            out.push_str(&format!(
                "<tr><td>{}</td><td class=\"text\"><code>{}</code>{}</td><td>{}</td><td>{}</td>\
                 <td><span class=\"chip {}\">{}</span></td></tr>",
                name(serde_json::to_value(g.list).unwrap_or_default()),
                escape(&g.id),
                g.key
                    .as_deref()
                    .filter(|k| *k != g.id)
                    .map_or(String::new(), |k| format!(
                        "<br><span class=\"note\">as <code>{}</code></span>",
                        escape(k)
                    )),
                g.status.map_or("missing", |s| s.word()),
                name(serde_json::to_value(g.rule).unwrap_or_default()),
                if g.success { "resolved" } else { "unresolved" },
                if g.success { "✓" } else { "✗" },
            ));
        }
        out.push_str("</table></div>");
    }
    for r in &grade.restored {
        out.push_str(&format!(
            "<p class=\"note\">Put back before the run: <code>{}</code> ({})</p>",
            escape(&r.path),
            escape(&r.why)
        ));
    }
    for n in &grade.notes {
        out.push_str(&format!("<p class=\"note\">{}</p>", escape(n)));
    }
    out
}

/// The page of `run` of `arm`, with its `rounds`, from the files of its
/// directory.
pub(super) fn html(
    run: &Run,
    arm: Option<&ArmDefinition>,
    rounds: &[Round],
    files: &RunFiles,
) -> String {
    let k = &run.key;
    let mut body = super::run_facts::facts(run, arm);
    if rounds.is_empty() {
        let why = if run.key.arm.starts_with('@') {
            "a control has no agent: its patch is graded as it is"
        } else {
            "the run ended before its agent took a turn, or its patch was made elsewhere (a \
             graded prediction) and is graded as it is"
        };
        body.push_str(&format!(
            "<p class=\"note\">No agent turns were recorded: {why}.</p>"
        ));
    } else {
        let links: Vec<String> = rounds
            .iter()
            .map(|r| format!("<a href=\"#round-{0}\">round {0}</a>", r.round))
            .collect();
        body.push_str(&format!("<nav>{}</nav>", links.join("")));
    }
    let calls = model_calls(files);
    for r in rounds {
        body.push_str(&round_html(files, r, &calls));
    }
    body.push_str("<h2 id=\"final\">The final patch</h2>");
    if run.model_patch.is_empty() {
        body.push_str("<p class=\"note\">Empty: the run changed nothing.</p>");
    } else {
        let shown = Shown::of_text(&run.model_patch, PATCH_SHOWN, Part::Head);
        body.push_str(&format!(
            "<p>{}{}</p>{}",
            diff_summary(&run.model_patch),
            link(files, "final.patch"),
            diff_html(&shown)
        ));
    }
    body.push_str(&grading_html(files));
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8">{CSP}<title>{title}</title>
<style>{STYLE}</style></head><body>
<nav><a href="../../../../report.html#runs-head">← the report</a>{record}</nav>
<h1>{instance}</h1>
<p>arm <code>{arm}</code>, sample {sample}</p>
{body}
</body></html>
"#,
        title = escape(&k.to_string()),
        instance = escape(&k.instance_id),
        arm = escape(&k.arm),
        sample = k.sample,
        record = if matches!(open(files, "run.json"), Some(Ok(_))) {
            "<a href=\"run.json\">run.json</a>"
        } else {
            ""
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::db::{RunKey, Status};

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
        let page = html(&run(), None, &[round()], &Beneath::open(dir.path()).ok());
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
        let page = html(&run(), None, &[r], &Beneath::open(dir.path()).ok());
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
        let page = html(&run(), None, &[round()], &Beneath::open(dir.path()).ok());
        assert!(!page.contains("user's secret"));
        assert!(page.contains("round-1/agent.log cannot be shown"), "{page}");
        assert!(
            page.contains("round-1/check.stderr cannot be shown"),
            "{page}"
        );

        std::fs::remove_file(round_dir.join("agent.log")).unwrap();
        let log: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(round_dir.join("agent.log"), &log).unwrap();
        let page = html(&run(), None, &[round()], &Beneath::open(dir.path()).ok());
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
        let page = html(&run(), None, &[round()], &Beneath::open(&run_dir).ok());
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
        let page = html(&run(), None, &[], &Beneath::open(dir.path()).ok());
        assert!(
            page.contains("grade/golden.json is not a grading log"),
            "{page}"
        );
        assert!(page.contains("No agent turns were recorded"));
    }
}

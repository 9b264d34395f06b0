//! An experiment's report: `OUT/summary.json`, a self-contained
//! `OUT/report.html` (tables, charts plotters draws as inline SVG, and a
//! grid of every run), a page per run beside its files
//! (`runs/<instance>/<arm>/<sample>/run.html`), or the tables as Markdown.
//! Rates carry 95% Wilson intervals; each arm is compared with a baseline
//! arm on the same (instance, sample) pairs by McNemar's exact test.
//! Infrastructure errors are counted and listed, never folded into a rate.

mod accuracy;
mod accuracy_table;
mod arms;
mod behind;
mod charts;
mod page;
mod run_facts;
mod run_files;
mod run_grading;
pub mod run_page;
mod style;
mod summary;
mod tables;
mod templates;

pub use summary::{summarize, Summary};
pub use tables::markdown;

use crate::experiment::db::{Db, Run, RunKey};
use crate::sandbox::beneath::Beneath;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// `--baseline` names no arm.
    #[error("--baseline {baseline}: no such arm (arms: {arms})")]
    NoSuchBaseline {
        /// The name given.
        baseline: String,
        /// The arms there are.
        arms: String,
    },
    /// The results could not be read.
    #[error(transparent)]
    Db(#[from] crate::experiment::db::DbError),
    /// A page's template failed (a bug of the report's: the page's
    /// context lacks what its template prints).
    #[error("the report's template {page} failed: {source}")]
    Template {
        /// The page.
        page: String,
        /// Why, with the template's line.
        source: minijinja::Error,
    },
    /// A file could not be written.
    #[error("{path}: {source}")]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Write `summary.json`, `report.html` and the page of each of `runs` into
/// `out`, with their rounds and the broken instances from `db`, each arm
/// compared with `baseline` (default: the first arm). A run whose page
/// cannot be written (something planted where it goes) is named in the
/// report; its numbers still count.
pub fn write(
    out: &Path,
    manifest: &Value,
    runs: &[Run],
    db: &Db,
    baseline: Option<&str>,
) -> Result<Summary, ReportError> {
    let order: Vec<String> = manifest["arms"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    if let Some(b) = baseline {
        if !order.iter().any(|a| a == b) {
            return Err(ReportError::NoSuchBaseline {
                baseline: b.to_string(),
                arms: order.join(", "),
            });
        }
    }
    let rounds = db.rounds()?;
    let name = manifest["name"].as_str().unwrap_or("experiment");
    let mut summary = summarize(name, runs, &order, baseline);
    summary.broken = db.broken()?;
    summary.mpe = crate::experiment::mpe_eval::classes(out, name);
    let definitions = arms::definitions(out, manifest, runs);
    let mut critic = accuracy::of(runs, &rounds);
    for a in &mut summary.arms {
        a.critic = critic.remove(&a.arm);
    }
    let written = |source| ReportError::Write {
        path: out.to_path_buf(),
        source,
    };
    // Each run's files are read, and its page written, with no link
    // followed beneath the output directory.
    let beneath = Beneath::open(out).map_err(written)?;
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    let unwritten: BTreeMap<RunKey, String> = crate::sys::parallel::map(runs.len(), workers, |i| {
        let run = &runs[i];
        let rel = crate::experiment::layout::run_dir(Path::new(""), &run.key);
        let files = beneath.dir(&rel).ok();
        let arm = definitions.iter().find(|d| d.arm == run.key.arm);
        let page = run_page::html(
            run,
            arm,
            rounds.get(&run.key).map_or(&[], Vec::as_slice),
            &files,
        )
        .map_err(|source| ReportError::Template {
            page: rel.join(run_page::FILE).display().to_string(),
            source,
        })?;
        // Pages are made again from the results by `critic experiment
        // report`: no need to wait for the disk. Private, as the run's
        // files they show are.
        Ok::<_, ReportError>(beneath
            .write_atomic_mode(&rel.join(run_page::FILE), page.as_bytes(), 0o600)
            .err()
            .map(|e| (run.key.clone(), e.to_string())))
    })
    .into_iter()
    .filter_map(Result::transpose)
    .collect::<Result<_, _>>()?;
    summary.arm_definitions = definitions;
    for (key, why) in &unwritten {
        tracing::warn!("{key}: its page in the report cannot be written: {why}");
    }
    let write = |file: &str, bytes: &[u8]| {
        let path = out.join(file);
        crate::sys::atomic_file::write(&path, bytes, true)
            .map_err(|source| ReportError::Write { path, source })
    };
    write(
        "summary.json",
        &serde_json::to_vec_pretty(&json!(summary)).expect("the summary serializes"),
    )?;
    let report =
        page::html(&summary, manifest, runs, &unwritten).map_err(|source| ReportError::Template {
            page: "report.html".into(),
            source,
        })?;
    write("report.html", report.as_bytes())?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::db::Status;
    use crate::experiment::db::{F2p, RunKey};

    fn run(instance: &str, arm: &str, resolved: bool, test_ok: Option<bool>, rounds: u32) -> Run {
        Run {
            key: RunKey {
                instance_id: instance.into(),
                arm: arm.into(),
                sample: 0,
            },
            status: Status::Ok,
            error_class: None,
            error: None,
            resolved: Some(resolved),
            grade_problem: None,
            f2p: test_ok.map(|ok| F2p {
                fails_on_base: ok,
                passes_on_golden: true,
            }),
            finishes: rounds,
            rounds,
            budget_exhausted: false,
            outcome_test: None,
            tokens: Some(1000),
            cost: Some(0.01),
            usage_source: None,
            model_calls: None,
            duration_s: 1.0,
            attempts: 1,
            model_patch: String::new(),
        }
    }

    #[test]
    fn arms_are_summarized_and_paired_on_the_same_instances() {
        let mut runs = Vec::new();
        for i in 0..10 {
            let id = format!("i{i}");
            runs.push(run(&id, "base", i < 3, None, 1));
            runs.push(run(
                &id,
                "new",
                i < 6,
                Some(i < 6),
                if i < 4 { 1 } else { 2 },
            ));
        }
        let mut broken = run("i10", "new", false, None, 0);
        broken.status = Status::InfraError;
        broken.error_class = Some("workspace".into());
        runs.push(broken);
        let s = summarize("x", &runs, &["base".into(), "new".into()], None);
        let new = &s.arms[1];
        assert_eq!(
            (new.runs, new.infra_errors),
            (10, 1),
            "the error is not a result"
        );
        assert_eq!((new.resolved.k, new.resolved.n), (6, 10));
        assert_eq!(new.f2p.unwrap().k, 6);
        assert_eq!(new.resolved_within[0].k, 4);
        assert_eq!(new.resolved_within[1].k, 6);
        // Test and fix fail together exactly: P(both) = 0.4, marginals 0.4.
        assert!((new.coupling.unwrap() - 2.5).abs() < 1e-9);
        assert!((new.cost_per_resolved.unwrap() - 0.1 / 6.0).abs() < 1e-9);
        let p = &s.paired[0];
        assert_eq!((p.pairs, p.baseline_only, p.arm_only), (10, 0, 3));
        assert!((p.delta - 0.3).abs() < 1e-9);
        assert!((p.p_value - 0.25).abs() < 1e-9);
        assert_eq!(s.infra_errors["workspace"], 1);
        let md = markdown(&s);
        assert!(
            md.contains("| new | 10 | 60.0% [31.3, 83.2] (6/10) |"),
            "{md}"
        );
        assert!(
            md.contains("Infrastructure errors (not results): workspace 1"),
            "{md}"
        );
    }

    #[test]
    fn names_and_messages_from_agents_and_records_are_shown_as_text() {
        // Arm and instance names, failures and a broken instance's log,
        // each markup, in every part of the report that shows them.
        let out = tempfile::tempdir().unwrap();
        let db = Db::open(&out.path().join("results.sqlite")).unwrap();
        let arm = "<script>arm</script>";
        let mut failed = run("\"><img src=x>", arm, false, Some(true), 2);
        failed.status = Status::InfraError;
        failed.error_class = Some("<b>class</b>".into());
        failed.error = Some("<iframe>message".into());
        let runs = vec![run("<i>one</i>", arm, true, Some(true), 1), failed];
        for r in &runs {
            db.finish(r, &[], None).unwrap();
        }
        let broken = crate::experiment::db::Broken {
            instance_id: "<u>broken</u>".into(),
            reason: "<svg onload=x>".into(),
            log_tail: "</pre><script>log</script>".into(),
        };
        db.set_preflight(&broken.instance_id, Some(&broken)).unwrap();
        let manifest = json!({"name": "<h1>name</h1>", "arms": {arm: {}}, "samples": 1,
            "instance_ids": [], "tool": {"version": "<t>", "binary_sha256": "ab"},
            "experiment": {"agent": {"command": "<blink>"}}});
        write(out.path(), &manifest, &runs, &db, None).unwrap();
        let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
        for raw in [
            "<script", "<img", "<i>", "<b>", "<iframe", "<u>", "<svg onload", "<h1>name", "<t>",
            "<blink",
        ] {
            assert!(!html.contains(raw), "{raw} reached the report");
        }
        for shown in ["&lt;script&gt;arm", "&lt;iframe&gt;message", "&lt;svg onload=x&gt;"] {
            assert!(html.contains(shown), "{shown} is not on the report");
        }
        // The charts are drawn, not shown as text.
        assert!(html.contains("<svg ") && !html.contains("&lt;svg width"));
    }

    #[test]
    fn a_run_whose_page_cannot_be_written_is_named_and_the_report_still_made() {
        let out = tempfile::tempdir().unwrap();
        let db = Db::open(&out.path().join("results.sqlite")).unwrap();
        let runs = vec![
            run("i0", "base", true, None, 1),
            run("i1", "base", false, None, 1),
        ];
        for r in &runs {
            db.finish(r, &[], None).unwrap();
        }
        // Something of the agent's where the second run's page goes.
        let planted = crate::experiment::layout::run_dir(out.path(), &runs[1].key).join(run_page::FILE);
        std::fs::create_dir_all(planted.join("inside")).unwrap();
        let manifest = json!({"name": "x", "arms": {"base": {}}, "samples": 1,
            "instance_ids": ["i0", "i1"], "tool": {"version": "t", "binary_sha256": "ab"}});
        let summary = write(out.path(), &manifest, &runs, &db, None).unwrap();
        assert_eq!(summary.arms[0].resolved.k, 1);
        let html =
            templates::as_written(&std::fs::read_to_string(out.path().join("report.html")).unwrap());
        assert!(html.contains("Pages not written"), "{html}");
        assert!(html.contains("i1 / base / 0"), "{html}");
        assert_eq!(
            html.matches("<a class=\"run ").count(),
            1,
            "only the written page is linked"
        );
        let page = crate::experiment::layout::run_dir(out.path(), &runs[0].key).join(run_page::FILE);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&page).unwrap().permissions().mode() & 0o777,
            0o600,
            "private, as the files it shows"
        );
        assert!(
            planted.join("inside").is_dir(),
            "what was planted is left alone"
        );
    }
}

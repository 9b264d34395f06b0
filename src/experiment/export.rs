//! The files other tools read, rewritten from the database after every
//! call: `OUT/results.jsonl` (one record per run) and
//! `OUT/predictions.jsonl` in SWE-bench's format, so the official harness
//! can grade any arm again.

use crate::experiment::db::Run;
use serde_json::json;
use std::path::Path;

/// `<experiment>/<arm>/<sample>`: a run's `model_name_or_path`.
pub fn model_name(experiment: &str, run: &Run) -> String {
    format!("{experiment}/{}/{}", run.key.arm, run.key.sample)
}

/// Write both files into `out`, each whole or not at all.
pub fn write(out: &Path, experiment: &str, runs: &[Run]) -> Result<(), String> {
    write_named(out, runs, &|run| model_name(experiment, run))
}

/// [`write`] for predictions graded as they came (`critic experiment grade
/// --predictions`): each keeps its own `model_name_or_path`, the run's arm.
pub fn write_predictions_graded(out: &Path, runs: &[Run]) -> Result<(), String> {
    write_named(out, runs, &|run| run.key.arm.clone())
}

/// Both files, each prediction labelled by `name_of`.
fn write_named(out: &Path, runs: &[Run], name_of: &dyn Fn(&Run) -> String) -> Result<(), String> {
    let mut results = String::new();
    let mut predictions = String::new();
    for run in runs {
        let record = json!({
            "instance_id": run.key.instance_id,
            "arm": run.key.arm,
            "sample": run.key.sample,
            "status": run.status.name(),
            "resolved": run.resolved,
            "f2p": run.f2p,
            "grade_problem": run.grade_problem,
            "finishes": run.finishes,
            "rounds": run.rounds,
            "budget_exhausted": run.budget_exhausted,
            "outcome_test": run.outcome_test,
            "tokens": run.tokens,
            "cost": run.cost,
            "usage_source": run.usage_source,
            "model_calls": run.model_calls,
            "duration_s": run.duration_s,
            "attempts": run.attempts,
            "error": run.error_class.as_ref().map(|class| json!({"class": class, "message": run.error})),
        });
        results.push_str(&record.to_string());
        results.push('\n');
        // An infrastructure error produced no patch worth grading.
        if run.status.is_result() {
            let p = json!({
                "instance_id": run.key.instance_id,
                "model_name_or_path": name_of(run),
                "model_patch": run.model_patch,
            });
            predictions.push_str(&p.to_string());
            predictions.push('\n');
        }
    }
    for (name, text) in [
        ("results.jsonl", results),
        ("predictions.jsonl", predictions),
    ] {
        let path = out.join(name);
        crate::sys::atomic_file::write(&path, text.as_bytes(), true)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

//! The table at the top of a run's page: how the run ended (status and
//! grade, failure, grading problem, its own test's F→P), the arm it ran,
//! finishes, turns, tokens and where they were counted, cost, time and
//! attempts.

use super::arms::ArmDefinition;
use super::style::mark;
use crate::experiment::db::{Run, Status};
use crate::report_html::escape;

/// The facts of `run` of `arm`, as an HTML table.
pub(super) fn facts(run: &Run, arm: Option<&ArmDefinition>) -> String {
    // The status is drawn in its own colour (`ok` is not a failure), the
    // grade beside it in its.
    let (class, _, words) = mark(run);
    let status_class = match run.status {
        Status::Ok => "ok",
        Status::AgentFail => "agent-fail",
        Status::InfraError | Status::ReplayDiverged => "infra-error",
    };
    let grade = match (run.status.is_result(), run.resolved) {
        (true, Some(true)) => "<span class=\"chip resolved\">resolved</span>".to_string(),
        (true, _) => "<span class=\"chip unresolved\">not resolved</span>".to_string(),
        (false, _) => format!("<span class=\"chip {class}\">{}</span>", escape(words)),
    };
    let mut rows: Vec<(&str, String)> = vec![(
        "status",
        format!(
            "<span class=\"chip {status_class}\">{}</span> {grade}",
            run.status.name(),
        ),
    )];
    if let Some(class) = &run.error_class {
        rows.push((
            "failure",
            format!(
                "<code>{}</code>: {}",
                escape(class),
                escape(run.error.as_deref().unwrap_or(""))
            ),
        ));
    }
    if let Some(problem) = &run.grade_problem {
        rows.push(("grading problem", escape(problem)));
    }
    rows.push((
        "the run's own test",
        match run.f2p {
            None => "none written".into(),
            Some(f) => format!(
                "{} on the base, {} on the golden fix: {}",
                if f.fails_on_base { "fails" } else { "passes" },
                if f.passes_on_golden {
                    "passes"
                } else {
                    "fails"
                },
                if f.fails_on_base && f.passes_on_golden {
                    "F→P"
                } else {
                    "not F→P"
                }
            ),
        },
    ));
    if let Some(a) = arm {
        rows.push((
            "arm",
            format!(
                "{}: skill {} (<code>{}</code>), max_iterations {}, signals {}, task {}{}",
                escape(&a.arm),
                escape(a.skill.as_deref().unwrap_or("?")),
                escape(a.digest.get(..12).unwrap_or(&a.digest)),
                a.max_iterations.map_or("?".into(), |m| m.to_string()),
                escape(&a.gates.join(", ")),
                escape(&a.task),
                if a.tests_only {
                    "; writes tests only: it resolves nothing by construction"
                } else {
                    ""
                }
            ),
        ));
    }
    rows.push(("finishes judged", run.finishes.to_string()));
    rows.push(("agent turns", run.rounds.to_string()));
    if run.budget_exhausted {
        rows.push((
            "budget",
            "accepted only because the skill's budget ran out".into(),
        ));
    }
    if let Some(t) = &run.outcome_test {
        rows.push(("test in the final patch", escape(t)));
    }
    if let Some(t) = run.tokens {
        let from = match run.usage_source.as_deref() {
            Some("proxy") => " (the runner's count of the model's answers)",
            Some("transcript") => " (from the agent's own transcript: no proxy was in the path)",
            _ => "",
        };
        rows.push(("tokens", format!("{t}{from}")));
    }
    if let Some(n) = run.model_calls {
        rows.push(("model calls", n.to_string()));
    }
    if let Some(c) = run.cost {
        rows.push(("cost", format!("${c:.4}")));
    }
    rows.push(("wall time", format!("{:.1} s", run.duration_s)));
    rows.push(("attempts", run.attempts.to_string()));
    let cells: String = rows
        .iter()
        .map(|(k, v)| format!("<tr><th>{k}</th><td>{v}</td></tr>"))
        .collect();
    format!("<table class=\"facts\">{cells}</table>")
}

//! The table at the top of a run's page: how the run ended (status and
//! grade, failure, grading problem, its own test's F→P), the arm it ran,
//! finishes, turns, tokens and where they were counted, cost, time and
//! attempts.

use super::arms::ArmDefinition;
use super::style::mark;
use crate::experiment::db::{Run, Status};
use serde::Serialize;

/// A run's failure: its class and message.
#[derive(Serialize)]
pub(super) struct Failure {
    class: String,
    error: String,
}

/// The facts of a run, as its page's first table shows them.
#[derive(Serialize)]
pub(super) struct Facts<'a> {
    /// The status, drawn in its own colour (`ok` is not a failure).
    status: &'static str,
    status_class: &'static str,
    /// The grade beside it, in its.
    grade: &'static str,
    grade_class: &'static str,
    failure: Option<Failure>,
    grading_problem: Option<&'a str>,
    own_test: String,
    arm: Option<&'a ArmDefinition>,
    finishes: u32,
    rounds: u32,
    budget_exhausted: bool,
    outcome_test: Option<&'a str>,
    tokens: Option<String>,
    model_calls: Option<u32>,
    cost: Option<String>,
    wall_time: String,
    attempts: u32,
}

/// The facts of `run` of `arm`.
pub(super) fn facts<'a>(run: &'a Run, arm: Option<&'a ArmDefinition>) -> Facts<'a> {
    let (class, _, words) = mark(run);
    let (grade_class, grade) = match (run.status.is_result(), run.resolved) {
        (true, Some(true)) => ("resolved", "resolved"),
        (true, _) => ("unresolved", "not resolved"),
        (false, _) => (class, words),
    };
    Facts {
        status: run.status.name(),
        status_class: match run.status {
            Status::Ok => "ok",
            Status::AgentFail => "agent-fail",
            Status::InfraError | Status::ReplayDiverged => "infra-error",
        },
        grade,
        grade_class,
        failure: run.error_class.as_ref().map(|class| Failure {
            class: class.clone(),
            error: run.error.clone().unwrap_or_default(),
        }),
        grading_problem: run.grade_problem.as_deref(),
        own_test: match run.f2p {
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
        arm,
        finishes: run.finishes,
        rounds: run.rounds,
        budget_exhausted: run.budget_exhausted,
        outcome_test: run.outcome_test.as_deref(),
        tokens: run.tokens.map(|t| {
            let from = match run.usage_source.as_deref() {
                Some("proxy") => " (the runner's count of the model's answers)",
                Some("transcript") => {
                    " (from the agent's own transcript: no proxy was in the path)"
                }
                _ => "",
            };
            format!("{t}{from}")
        }),
        model_calls: run.model_calls,
        cost: run.cost.map(|c| format!("${c:.4}")),
        wall_time: format!("{:.1} s", run.duration_s),
        attempts: run.attempts,
    }
}

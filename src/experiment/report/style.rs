//! How each run is marked on the report and its page (the pages' look is
//! `templates/style.css`).

use crate::experiment::db::{Run, Status};

/// How a run shows in the grid and on its page: its CSS class, its mark,
/// and in words.
pub(super) fn mark(run: &Run) -> (&'static str, &'static str, &'static str) {
    let resolved = run.resolved == Some(true);
    match (run.status, resolved) {
        (Status::InfraError, _) => ("infra-error", "!", "infrastructure error (not a result)"),
        (Status::ReplayDiverged, _) => ("infra-error", "↯", "replay diverged (not a result)"),
        (Status::AgentFail, true) => ("agent-fail", "✓", "agent failure, patch resolves"),
        (Status::AgentFail, false) => ("agent-fail", "✗", "agent failure"),
        (Status::Ok, true) => ("resolved", "✓", "resolved"),
        (Status::Ok, false) => ("unresolved", "✗", "not resolved"),
    }
}

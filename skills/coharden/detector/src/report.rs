//! Survivors as the follow-ups and the feedback file show them: ordered
//! (beta before alpha, then operator order, then pool order), each with its
//! diff against the agent's fix.

use crate::llm::operator_name;
use crate::matrix::Cell;
use crate::pool::Candidate;
use crate::state::{MutantRecord, Survivor};
use critic_sdk::diff::unified;
use critic_sdk::mutants::{FixFile, Operator};
use serde::Serialize;

/// One mutant, for a template.
#[derive(Debug, Clone, Serialize)]
pub struct MutantView {
    /// Id in its round.
    pub id: String,
    /// Operator, snake_case.
    pub operator: &'static str,
    /// Operator, in words.
    pub operator_title: String,
    /// What it changes.
    pub description: String,
    /// Temporal Matrix cell.
    pub cell: &'static str,
    /// How it differs from the agent's fix.
    pub diff: String,
    /// Whether it also survived the previous round.
    pub seen_before: bool,
}

/// An operator in words.
pub fn operator_title(op: Operator) -> String {
    operator_name(op).replace('_', " ")
}

/// The diff from the fix to mutant `c`, over every file of the fix.
pub fn diff_to_fix(c: &Candidate, fix: &[FixFile]) -> String {
    fix.iter()
        .filter_map(|f| c.files.get(&f.path).map(|m| unified(&f.path, &f.fixed, m)))
        .collect()
}

/// The surviving mutants (cells alpha and beta), most important first.
pub fn survivors(
    pool: &[(Candidate, MutantRecord)],
    fix: &[FixFile],
    operators: &[Operator],
    previous: &[Survivor],
) -> Vec<MutantView> {
    let mut list: Vec<(usize, &Candidate, &MutantRecord)> = pool
        .iter()
        .enumerate()
        .filter(|(_, (_, r))| r.cell.survives())
        .map(|(i, (c, r))| (i, c, r))
        .collect();
    let rank = |op: Operator| {
        operators
            .iter()
            .position(|o| *o == op)
            .unwrap_or(usize::MAX)
    };
    list.sort_by_key(|(i, c, r)| (r.cell != Cell::Beta, rank(c.operator), *i));
    list.into_iter()
        .map(|(_, c, r)| MutantView {
            id: r.id.clone(),
            operator: operator_name(c.operator),
            operator_title: operator_title(c.operator),
            description: r.description.clone(),
            cell: r.cell.name(),
            diff: diff_to_fix(c, fix),
            seen_before: previous.iter().any(|p| p.digest == r.digest),
        })
        .collect()
}

/// Distinct operator titles among `views` after the first.
pub fn other_operators(views: &[MutantView]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let top = views.first().map(|v| v.operator_title.clone());
    for v in views {
        if Some(&v.operator_title) != top.as_ref() && !out.contains(&v.operator_title) {
            out.push(v.operator_title.clone());
        }
    }
    out
}

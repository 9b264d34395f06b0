//! The round state CoHarden keeps between finish calls: one JSON document,
//! described by `schemas/coharden-state.schema.json`.

use crate::matrix::{Cell, Matrix};
use critic_sdk::mutants::Operator;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Version of this document's layout.
pub const VERSION: u32 = 1;

/// Test files by path: their content, or `None` when the patch deletes them.
pub type TestFiles = BTreeMap<String, Option<String>>;

/// Where the protocol stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Waiting for the Round 0 test.
    LaxInit,
    /// Rounds 1..K.
    Hardening,
    /// Accepted; later finishes pass.
    Done,
}

/// What a hardening round decided (Algorithm 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Laxity above tau: the reference goes back to t0, the fix is kept.
    Regression,
    /// Test changed and laxity within tau: accepted.
    Clean,
    /// Test unchanged: it becomes the reference, hardening goes on.
    Continue,
    /// Round K ended without a clean round: accepted, budget spent.
    BudgetExhausted,
}

/// One mutant's record in a round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MutantRecord {
    /// Stable id (`m1`, `m2`, ... in pool order).
    pub id: String,
    /// Operator.
    pub operator: Operator,
    /// `deterministic` or `llm`.
    pub origin: String,
    /// What it changes.
    pub description: String,
    /// Content digest, to recognize the same mutant in a later round.
    pub digest: String,
    /// Temporal Matrix cell.
    pub cell: Cell,
}

/// A variant left out of the total.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exclusion {
    /// Operator it was made for.
    pub operator: Operator,
    /// Model sample number, for model variants.
    pub sample: Option<u32>,
    /// Why it was left out.
    pub reason: String,
}

/// The record of one evaluated hardening round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundRecord {
    /// k.
    pub round: u32,
    /// Algorithm 1's decision.
    pub decision: Decision,
    /// The Temporal Matrix.
    pub matrix: Matrix,
    /// beta / total; `None` for an inconclusive round.
    pub laxity: Option<f64>,
    /// Whether no admissible mutant was produced.
    pub inconclusive: bool,
    /// Whether t_k differs from t_ref beyond comments and layout.
    pub test_changed: bool,
    /// The admissible mutants.
    pub mutants: Vec<MutantRecord>,
    /// Variants left out.
    pub excluded: Vec<Exclusion>,
}

/// A mutant that survived (passed t_k) in the last evaluated round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Survivor {
    /// Id in that round.
    pub id: String,
    /// Operator.
    pub operator: Operator,
    /// What it changes.
    pub description: String,
    /// Content digest.
    pub digest: String,
}

/// The whole document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    /// [`VERSION`].
    pub version: u32,
    /// The base commit the session works against; a new one resets the state.
    pub base: String,
    /// Where the protocol stands.
    pub phase: Phase,
    /// The round the next finish is judged as (0 during lax-init).
    pub round: u32,
    /// The Round 0 test.
    pub t0: TestFiles,
    /// The reference test of the next round.
    pub t_ref: TestFiles,
    /// The fix side of the last evaluated round's patch (a git diff).
    pub previous_fix: Option<String>,
    /// Mutants that passed the last evaluated round's test.
    pub previous_survivors: Vec<Survivor>,
    /// Consecutive inconclusive rounds.
    pub inconclusive_streak: u32,
    /// Inconclusive rounds in total.
    pub inconclusive_count: u32,
    /// Finishes rejected without evaluating a round (bad test, failed F->P...).
    pub retries: u32,
    /// Every evaluated hardening round.
    pub rounds: Vec<RoundRecord>,
}

impl State {
    /// A fresh session against `base`.
    pub fn new(base: &str) -> State {
        State {
            version: VERSION,
            base: base.to_string(),
            phase: Phase::LaxInit,
            round: 0,
            t0: TestFiles::new(),
            t_ref: TestFiles::new(),
            previous_fix: None,
            previous_survivors: Vec::new(),
            inconclusive_streak: 0,
            inconclusive_count: 0,
            retries: 0,
            rounds: Vec::new(),
        }
    }

    /// The state to continue from: the stored one, or a fresh one when there
    /// is none or it belongs to another base commit (a new instance). A stored
    /// document this version cannot read is an error, so it is never
    /// silently overwritten.
    pub fn load(stored: &Value, base: &str) -> Result<(State, bool), String> {
        if stored.is_null() {
            return Ok((State::new(base), false));
        }
        let version = stored.get("version").and_then(Value::as_u64);
        if version != Some(u64::from(VERSION)) {
            return Err(format!(
                "the stored CoHarden state has version {}, this detector reads version {VERSION}; \
                 start a new session (--session) or remove the state file",
                version.map_or("(none)".to_string(), |v| v.to_string())
            ));
        }
        let state: State = serde_json::from_value(stored.clone()).map_err(|e| {
            format!(
                "the stored CoHarden state is not valid ({e}); start a new session (--session) \
                 or remove the state file"
            )
        })?;
        if state.base != base {
            return Ok((State::new(base), true));
        }
        Ok((state, false))
    }

    /// As JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("state serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_when_absent_or_on_another_base() {
        let (s, reset) = State::load(&Value::Null, "abc").unwrap();
        assert_eq!((s.phase, s.round, reset), (Phase::LaxInit, 0, false));
        let mut old = State::new("abc");
        old.phase = Phase::Hardening;
        old.round = 2;
        let (same, reset) = State::load(&old.to_value(), "abc").unwrap();
        assert_eq!((same, reset), (old.clone(), false));
        let (new, reset) = State::load(&old.to_value(), "def").unwrap();
        assert_eq!(
            (new.phase, new.base.as_str(), reset),
            (Phase::LaxInit, "def", true)
        );
    }

    #[test]
    fn unreadable_state_is_an_error_not_a_reset() {
        let e = State::load(&serde_json::json!({"version": 9}), "abc").unwrap_err();
        assert!(e.contains("version 9"), "{e}");
        let e = State::load(&serde_json::json!({"version": 1, "base": 3}), "abc").unwrap_err();
        assert!(e.contains("not valid"), "{e}");
    }
}

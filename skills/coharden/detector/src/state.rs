//! The round state CoHarden keeps between finish calls: one JSON document,
//! described by `schemas/coharden-state.schema.json`.

use crate::carry::Edit;
use crate::issue::IssueSource;
use crate::matrix::{Cell, Matrix};
use crate::outcome::TestOutcome;
use critic_sdk::mutants::Operator;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Version of this document's layout. Version 1 (before the survivor
/// check, the returned test and the issue's source) is read as well, with
/// those fields empty.
pub const VERSION: u32 = 2;

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
    /// Hardening is off: fail-to-pass holds, accepted without mutants.
    FailToPass,
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
    /// Whether the round reverted the test to t0 (laxity above tau).
    #[serde(default)]
    pub reverted: bool,
    /// The previous round's survivors, carried onto this round's fix and
    /// run against this round's test.
    #[serde(default)]
    pub vs_previous: VsPrevious,
}

/// The previous-round survivor check of one round.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VsPrevious {
    /// Carried survivors that still pass this round's test.
    pub persistent: u32,
    /// Beta of this round's Temporal Matrix: mutants this round's test lets
    /// through although the reference test rejects them.
    pub regressed: u32,
    /// Carried survivors this round's test now fails.
    pub newly_killed: u32,
    /// Survivors of the previous round that were carried and run.
    pub carried: u32,
    /// Survivors that could not be carried or run, with why.
    pub excluded: Vec<CarryExclusion>,
}

/// A previous-round survivor left out of the check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CarryExclusion {
    /// Its id in the previous round.
    pub id: String,
    /// Why.
    pub reason: String,
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
    /// Its change to that round's fix, to carry onto the next one.
    #[serde(default)]
    pub edits: Vec<Edit>,
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
    /// Where the mutation prompt's issue text came from (set once a round
    /// asked the model).
    #[serde(default)]
    pub issue_source: Option<IssueSource>,
    /// The test and fix the algorithm returned, once it has (phase `done`).
    #[serde(default)]
    pub outcome: Option<TestOutcome>,
}

impl State {
    /// A fresh session against `base`; without lax-init it starts at
    /// Round 1.
    pub fn new(base: &str, lax_init: bool) -> State {
        State {
            version: VERSION,
            base: base.to_string(),
            phase: if lax_init {
                Phase::LaxInit
            } else {
                Phase::Hardening
            },
            round: u32::from(!lax_init),
            t0: TestFiles::new(),
            t_ref: TestFiles::new(),
            previous_fix: None,
            previous_survivors: Vec::new(),
            inconclusive_streak: 0,
            inconclusive_count: 0,
            retries: 0,
            rounds: Vec::new(),
            issue_source: None,
            outcome: None,
        }
    }

    /// Whether the last evaluated round reverted the test to t0.
    pub fn reverted(&self) -> bool {
        self.rounds.last().is_some_and(|r| r.reverted)
    }

    /// The state to continue from: the stored one, or a fresh one when there
    /// is none or it belongs to another base commit (a new instance). A stored
    /// document this version cannot read is an error, so it is never
    /// silently overwritten.
    pub fn load(stored: &Value, base: &str, lax_init: bool) -> Result<(State, bool), String> {
        if stored.is_null() {
            return Ok((State::new(base, lax_init), false));
        }
        let version = stored.get("version").and_then(Value::as_u64);
        if !matches!(version, Some(1) | Some(2)) {
            return Err(format!(
                "the stored CoHarden state has version {}, this detector reads versions 1 and {VERSION}; \
                 start a new session (--session) or remove the state file",
                version.map_or("(none)".to_string(), |v| v.to_string())
            ));
        }
        let mut state: State = serde_json::from_value(stored.clone()).map_err(|e| {
            format!(
                "the stored CoHarden state is not valid ({e}); start a new session (--session) \
                 or remove the state file"
            )
        })?;
        if state.base != base {
            return Ok((State::new(base, lax_init), true));
        }
        state.version = VERSION;
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
        let (s, reset) = State::load(&Value::Null, "abc", true).unwrap();
        assert_eq!((s.phase, s.round, reset), (Phase::LaxInit, 0, false));
        let (s, _) = State::load(&Value::Null, "abc", false).unwrap();
        assert_eq!((s.phase, s.round), (Phase::Hardening, 1));
        let mut old = State::new("abc", true);
        old.phase = Phase::Hardening;
        old.round = 2;
        let (same, reset) = State::load(&old.to_value(), "abc", true).unwrap();
        assert_eq!((same, reset), (old.clone(), false));
        let (new, reset) = State::load(&old.to_value(), "def", true).unwrap();
        assert_eq!(
            (new.phase, new.base.as_str(), reset),
            (Phase::LaxInit, "def", true)
        );
    }

    #[test]
    fn unreadable_state_is_an_error_not_a_reset() {
        let e = State::load(&serde_json::json!({"version": 9}), "abc", true).unwrap_err();
        assert!(e.contains("version 9"), "{e}");
        let e =
            State::load(&serde_json::json!({"version": 1, "base": 3}), "abc", true).unwrap_err();
        assert!(e.contains("not valid"), "{e}");
    }

    #[test]
    fn a_version_1_state_is_read_and_written_as_version_2() {
        let mut v1 = State::new("abc", true).to_value();
        for field in ["issue_source", "outcome"] {
            v1.as_object_mut().unwrap().remove(field);
        }
        v1["version"] = 1.into();
        let (s, reset) = State::load(&v1, "abc", true).unwrap();
        assert_eq!((s.version, reset), (VERSION, false));
    }
}

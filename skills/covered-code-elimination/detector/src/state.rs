//! What the detector keeps between finishes (`schemas/elimination-state.schema.json`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How the last finish ended, as the seed's Algorithm 1 flags it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Flag {
    /// Flag 1: every line of the target is covered.
    Covered,
    /// Flag 0: new lines covered; the next slice was given.
    Progress,
    /// No new line covered; a refinement was asked for.
    Refine,
    /// Flag -1: the refinement limit was reached.
    LimitReached,
    /// The agent has written no test yet; the task was given.
    NoTests,
    /// The patch changes the target's file; nothing was measured.
    Refused,
}

impl Flag {
    /// The seed's number for the flag (1, 0, -1), where it has one.
    pub fn seed(self) -> Option<i8> {
        match self {
            Flag::Covered => Some(1),
            Flag::Progress => Some(0),
            Flag::LimitReached => Some(-1),
            Flag::Refine | Flag::NoTests | Flag::Refused => None,
        }
    }
}

/// One finish's coverage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measure {
    /// The host's finish count.
    pub finish: u32,
    /// Statements of the target covered.
    pub covered: usize,
    /// Statements of the target.
    pub total: usize,
    /// The lines still uncovered.
    pub uncovered: Vec<usize>,
    /// How the finish ended.
    pub flag: Flag,
}

/// The state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    /// The format of this state.
    pub version: u32,
    /// The target it is about (a new target starts over).
    pub target: String,
    /// The slice round: how many slices have been given after the first.
    pub slice_round: u32,
    /// Finishes without new coverage since the last slice.
    pub refinements: u32,
    /// The uncovered lines at the last measured finish; `None` before one.
    pub uncovered: Option<Vec<usize>>,
    /// Set once the session is over (covered, or the limit reached).
    pub done: Option<Flag>,
    /// Every measured finish, in order.
    pub history: Vec<Measure>,
    /// The model's summaries of the project's definitions the target uses,
    /// by name (asked once per session).
    #[serde(default)]
    pub model_summaries: BTreeMap<String, String>,
}

impl State {
    /// The state of `target` from the host's JSON (a fresh one when there is
    /// none, it does not parse, or it is about another target), and whether
    /// one was replaced.
    pub fn load(value: &serde_json::Value, target: &str) -> (State, bool) {
        let fresh = State {
            version: 1,
            target: target.to_string(),
            slice_round: 0,
            refinements: 0,
            uncovered: None,
            done: None,
            history: Vec::new(),
            model_summaries: BTreeMap::new(),
        };
        if value.is_null() {
            return (fresh, false);
        }
        match serde_json::from_value::<State>(value.clone()) {
            Ok(s) if s.version == 1 && s.target == target => (s, false),
            _ => (fresh, true),
        }
    }
}

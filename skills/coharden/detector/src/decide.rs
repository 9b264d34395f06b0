//! Algorithm 1's decision for one evaluated hardening round.

use crate::state::Decision;

/// The facts a round's decision rests on.
#[derive(Debug, Clone, Copy)]
pub struct RoundFacts {
    /// k.
    pub round: u32,
    /// K.
    pub max_rounds: u32,
    /// beta / total, `None` when the round is inconclusive (no admissible mutant).
    pub laxity: Option<f64>,
    /// tau.
    pub tau: f64,
    /// Whether t_k differs from t_ref beyond comments and layout.
    pub test_changed: bool,
}

impl RoundFacts {
    /// Whether the laxity exceeds tau: Algorithm 1 reverts the test to t0,
    /// in the last round as in any other.
    pub fn regressed(&self) -> bool {
        matches!(self.laxity, Some(l) if l > self.tau)
    }
}

/// Regression when the laxity exceeds tau (an inconclusive round skips this
/// check); otherwise a changed test makes a clean round and an unchanged one
/// continues. A round that would continue or regress at k = K ends the loop
/// with the budget spent.
pub fn decide(f: RoundFacts) -> Decision {
    let decision = if f.regressed() {
        Decision::Regression
    } else if f.test_changed {
        Decision::Clean
    } else {
        Decision::Continue
    };
    if decision != Decision::Clean && f.round >= f.max_rounds {
        return Decision::BudgetExhausted;
    }
    decision
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(round: u32, laxity: Option<f64>, test_changed: bool) -> RoundFacts {
        RoundFacts {
            round,
            max_rounds: 5,
            laxity,
            tau: 0.2,
            test_changed,
        }
    }

    #[test]
    fn every_branch_of_algorithm_1() {
        assert_eq!(decide(facts(1, Some(0.25), true)), Decision::Regression);
        assert_eq!(decide(facts(1, Some(0.25), false)), Decision::Regression);
        // tau itself is within tolerance.
        assert_eq!(decide(facts(1, Some(0.2), true)), Decision::Clean);
        assert_eq!(decide(facts(2, Some(0.0), false)), Decision::Continue);
        assert_eq!(
            decide(facts(5, Some(0.0), false)),
            Decision::BudgetExhausted
        );
        assert_eq!(decide(facts(5, Some(0.5), true)), Decision::BudgetExhausted);
        // ... after a regression, which returns t0.
        assert!(facts(5, Some(0.5), true).regressed());
        assert!(!facts(5, Some(0.0), false).regressed());
        assert_eq!(decide(facts(5, Some(0.1), true)), Decision::Clean);
    }

    #[test]
    fn inconclusive_rounds_skip_the_regression_check() {
        assert_eq!(decide(facts(1, None, true)), Decision::Clean);
        assert_eq!(decide(facts(1, None, false)), Decision::Continue);
        assert_eq!(decide(facts(5, None, false)), Decision::BudgetExhausted);
    }
}

//! The Temporal Matrix: every admissible mutant run against the round's test
//! t_k and the reference test t_ref, counted in four cells.

use serde::{Deserialize, Serialize};

/// Where a mutant lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cell {
    /// Passes t_k and t_ref (agree-pass).
    Alpha,
    /// Passes t_k, fails t_ref: the new test lets through what the old one caught (laxity).
    Beta,
    /// Fails t_k, passes t_ref: the new test catches what the old one let through (rigor).
    Gamma,
    /// Fails both (agree-fail).
    Delta,
}

impl Cell {
    /// The cell of a mutant that passes (`true`) or fails t_k and t_ref.
    pub fn of(passes_test: bool, passes_ref: bool) -> Cell {
        match (passes_test, passes_ref) {
            (true, true) => Cell::Alpha,
            (true, false) => Cell::Beta,
            (false, true) => Cell::Gamma,
            (false, false) => Cell::Delta,
        }
    }

    /// Whether the mutant passes t_k (survives the round's test).
    pub fn survives(self) -> bool {
        matches!(self, Cell::Alpha | Cell::Beta)
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Cell::Alpha => "alpha",
            Cell::Beta => "beta",
            Cell::Gamma => "gamma",
            Cell::Delta => "delta",
        }
    }
}

/// Cell counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Matrix {
    /// Agree-pass.
    pub alpha: u32,
    /// Laxity.
    pub beta: u32,
    /// Rigor.
    pub gamma: u32,
    /// Agree-fail.
    pub delta: u32,
}

impl Matrix {
    /// Count `cells`.
    pub fn count(cells: impl IntoIterator<Item = Cell>) -> Matrix {
        let mut m = Matrix::default();
        for c in cells {
            *match c {
                Cell::Alpha => &mut m.alpha,
                Cell::Beta => &mut m.beta,
                Cell::Gamma => &mut m.gamma,
                Cell::Delta => &mut m.delta,
            } += 1;
        }
        m
    }

    /// Admissible mutants.
    pub fn total(&self) -> u32 {
        self.alpha + self.beta + self.gamma + self.delta
    }

    /// Mutants that pass t_k.
    pub fn accepted(&self) -> u32 {
        self.alpha + self.beta
    }

    /// The laxity rate beta / total; `None` without admissible mutants.
    pub fn laxity(&self) -> Option<f64> {
        let total = self.total();
        (total > 0).then(|| f64::from(self.beta) / f64::from(total))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_and_laxity() {
        let m = Matrix::count([
            Cell::of(true, true),
            Cell::of(true, false),
            Cell::of(false, true),
            Cell::of(false, false),
            Cell::of(false, false),
        ]);
        assert_eq!((m.alpha, m.beta, m.gamma, m.delta), (1, 1, 1, 2));
        assert_eq!((m.total(), m.accepted()), (5, 2));
        assert_eq!(m.laxity(), Some(0.2));
        assert_eq!(Matrix::default().laxity(), None);
        assert!(Cell::Beta.survives() && !Cell::Gamma.survives());
    }
}

//! What MPE records per (instance, generator) and how a record is classed:
//! the 2x2 matrix over the admissible pool, the laxity rate, the cutoff tau
//! (the median over the run's F->P pairs unless fixed) and its sweep.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// F->P of the generated test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct F2p {
    /// It fails on the buggy program.
    pub fails_on_buggy: bool,
    /// It passes on the golden fix.
    pub passes_on_golden: bool,
}

impl F2p {

    /// Why it is not F->P.
    pub fn misaligned_reason(self) -> Option<&'static str> {
        match (self.fails_on_buggy, self.passes_on_golden) {
            (true, true) => None,
            (true, false) => Some("fails_on_golden"),
            (false, true) => Some("passes_on_buggy"),
            (false, false) => Some("both"),
        }
    }
}

/// The 2x2 matrix: rows by the generated test, columns by the golden tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Matrix {
    /// Passes both (agree-pass).
    pub alpha: u32,
    /// Passes the generated test, fails the golden tests (the laxity cell).
    pub beta: u32,
    /// Fails the generated test, passes the golden tests (the rigor cell).
    pub gamma: u32,
    /// Fails both (agree-fail).
    pub delta: u32,
    /// All four.
    pub total: u32,
}

impl Matrix {
    /// Count one variant.
    pub fn add(&mut self, passes_generated: bool, passes_golden: bool) {
        match (passes_generated, passes_golden) {
            (true, true) => self.alpha += 1,
            (true, false) => self.beta += 1,
            (false, true) => self.gamma += 1,
            (false, false) => self.delta += 1,
        }
        self.total += 1;
    }

    /// beta / total, when there is a pool.
    pub fn laxity(&self) -> Option<f64> {
        (self.total > 0).then(|| f64::from(self.beta) / f64::from(self.total))
    }
}

/// One operator's share of a pool.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// Draws made (attempts).
    pub sampled: u32,
    /// Variants admitted to the pool.
    pub admissible: u32,
    /// Draws discarded (did not apply, did not parse, left no runnable
    /// repository).
    pub discarded: u32,
    /// Whether the attempt cap ended the operator's draws before its budget
    /// was met.
    pub cap_reached: bool,
    /// Whether the source ran out of candidates before the budget was met.
    pub exhausted: bool,
}

/// Variants left out of the matrix, with why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Excluded {
    /// How many.
    pub count: u32,
    /// Reason to count.
    pub reasons: BTreeMap<String, u32>,
}

impl Excluded {
    /// Count one.
    pub fn add(&mut self, reason: &str) {
        self.count += 1;
        *self.reasons.entry(reason.to_string()).or_default() += 1;
    }
}

/// What a pair came to, before a cutoff classes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// F->P with a pool: classed by its laxity.
    Rated,
    /// Not F->P.
    Misaligned,
    /// A run of the generated test said nothing (timeout, import error, no
    /// test): excluded, as the paper does.
    HarnessError,
    /// F->P, but no variant was admissible: nothing to rate it on.
    NoPool,
    /// The record could not be evaluated (bad input, a run that could not
    /// start): not a result; a rerun tries again.
    Error,
}

/// The class of a pair under a cutoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// F->P with laxity below tau.
    Rigorous,
    /// F->P with laxity at or above tau.
    Lax,
    /// Not F->P.
    Misaligned,
    /// No test at all: the prediction adds no test module to run.
    NoTest,
    /// Excluded: a run said nothing.
    HarnessError,
    /// F->P without a pool.
    NoPool,
    /// Not evaluated.
    Error,
}

impl Class {
    /// Every class, in report order.
    pub const ALL: [Class; 7] = [
        Class::Rigorous,
        Class::Lax,
        Class::Misaligned,
        Class::NoTest,
        Class::HarnessError,
        Class::NoPool,
        Class::Error,
    ];

    /// The name in results.
    pub fn name(self) -> &'static str {
        match self {
            Class::Rigorous => "rigorous",
            Class::Lax => "lax",
            Class::Misaligned => "misaligned",
            Class::NoTest => "no_test",
            Class::HarnessError => "harness_error",
            Class::NoPool => "no_pool",
            Class::Error => "error",
        }
    }
}

/// One (instance, generator), as finished by a run (the class is derived
/// from it and the run's tau when results are written).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    /// The instance.
    pub instance_id: String,
    /// The generator.
    pub model_name_or_path: String,
    /// What the pool was drawn with, and the parameters that shape it: a
    /// pair finished under other parameters is evaluated again.
    pub params: String,
    /// `model`, `deterministic` or `pool`.
    pub operators: String,
    /// The outcome before a cutoff.
    pub status: Status,
    /// F->P, when both runs said something.
    pub f2p: Option<F2p>,
    /// Why it is not F->P (`fails_on_golden`, `passes_on_buggy`, `both`,
    /// `no_test`).
    pub misaligned_reason: Option<String>,
    /// For `harness_error`, `no_pool` and `error`: what happened.
    pub reason: Option<String>,
    /// The matrix over the admissible pool.
    pub matrix: Option<Matrix>,
    /// beta / total.
    pub laxity: Option<f64>,
    /// Variants left out of the matrix.
    pub excluded: Excluded,
    /// Per operator: draws, admissible, discarded.
    pub pool: BTreeMap<String, Tally>,
    /// The generated test's files.
    pub test_files: Vec<String>,
    /// Files of the prediction that are not tests, left out of t_gen.
    pub ignored_files: Vec<String>,
}

impl Pair {
    /// The class under cutoff `tau`.
    pub fn class(&self, tau: f64) -> Class {
        match self.status {
            Status::Rated => match self.laxity {
                Some(l) if l < tau => Class::Rigorous,
                Some(_) => Class::Lax,
                None => Class::NoPool,
            },
            // Nothing was run: a class of its own, not a test that missed.
            Status::Misaligned if self.misaligned_reason.as_deref() == Some("no_test") => {
                Class::NoTest
            }
            Status::Misaligned => Class::Misaligned,
            Status::HarnessError => Class::HarnessError,
            Status::NoPool => Class::NoPool,
            Status::Error => Class::Error,
        }
    }
}

/// How tau is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tau {
    /// The median laxity over the run's rated (F->P) pairs.
    Median,
    /// A fixed cutoff.
    Fixed(f64),
}

impl std::str::FromStr for Tau {
    type Err = String;
    fn from_str(s: &str) -> Result<Tau, String> {
        if s == "median" {
            return Ok(Tau::Median);
        }
        match s.parse::<f64>() {
            Ok(x) if (0.0..=1.0).contains(&x) => Ok(Tau::Fixed(x)),
            _ => Err(format!(
                "`{s}` is neither `median` nor a number from 0 to 1"
            )),
        }
    }
}

/// The median of `values` (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The laxities of the rated pairs.
pub fn rated_laxities(pairs: &[Pair]) -> Vec<f64> {
    pairs
        .iter()
        .filter(|p| p.status == Status::Rated)
        .filter_map(|p| p.laxity)
        .collect()
}

/// The fixed cutoffs of the sweep; the median joins them.
pub const SWEEP: [f64; 7] = [0.05, 0.10, 0.15, 0.25, 0.30, 0.40, 0.50];

/// One cutoff of the sweep with its counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    /// The cutoff.
    pub tau: f64,
    /// `median` for the run's median, else absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Rigorous pairs.
    pub rigorous: u32,
    /// Lax pairs.
    pub lax: u32,
    /// Misaligned pairs (the same at every cutoff).
    pub misaligned: u32,
}

/// The per-class counts of `pairs` under `tau`.
pub fn counts(pairs: &[&Pair], tau: f64) -> BTreeMap<&'static str, u32> {
    let mut c: BTreeMap<&'static str, u32> = Class::ALL.iter().map(|k| (k.name(), 0)).collect();
    for p in pairs {
        *c.entry(p.class(tau).name()).or_default() += 1;
    }
    c
}

/// The sweep over [`SWEEP`] and the median (when there is one), by tau.
pub fn sweep(pairs: &[&Pair], median: Option<f64>) -> Vec<SweepRow> {
    let mut taus: Vec<(f64, Option<String>)> = SWEEP.iter().map(|&t| (t, None)).collect();
    if let Some(m) = median {
        taus.push((m, Some("median".into())));
    }
    taus.sort_by(|a, b| a.0.total_cmp(&b.0));
    taus.into_iter()
        .map(|(tau, label)| {
            let c = counts(pairs, tau);
            SweepRow {
                tau,
                label,
                rigorous: c["rigorous"],
                lax: c["lax"],
                misaligned: c["misaligned"],
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rated(laxity: f64) -> Pair {
        Pair {
            instance_id: "i".into(),
            model_name_or_path: "g".into(),
            params: String::new(),
            operators: "model".into(),
            status: Status::Rated,
            f2p: Some(F2p {
                fails_on_buggy: true,
                passes_on_golden: true,
            }),
            misaligned_reason: None,
            reason: None,
            matrix: None,
            laxity: Some(laxity),
            excluded: Excluded::default(),
            pool: BTreeMap::new(),
            test_files: Vec::new(),
            ignored_files: Vec::new(),
        }
    }

    #[test]
    fn the_matrix_counts_cells_and_laxity_is_beta_over_total() {
        let mut m = Matrix::default();
        for (g, t) in [
            (true, true),
            (true, false),
            (true, false),
            (false, true),
            (false, false),
        ] {
            m.add(g, t);
        }
        assert_eq!(
            (m.alpha, m.beta, m.gamma, m.delta, m.total),
            (1, 2, 1, 1, 5)
        );
        assert_eq!(m.laxity(), Some(0.4));
        assert_eq!(Matrix::default().laxity(), None);
    }

    #[test]
    fn laxity_at_tau_is_lax_below_is_rigorous() {
        assert_eq!(rated(0.2).class(0.2), Class::Lax);
        assert_eq!(rated(0.19).class(0.2), Class::Rigorous);
        assert_eq!(median(&[0.3, 0.1, 0.2]), Some(0.2));
        assert_eq!(median(&[0.4, 0.1, 0.2, 0.3]), Some(0.25));
        assert_eq!(median(&[]), None);
        assert!("1.5".parse::<Tau>().is_err());
        assert_eq!("median".parse::<Tau>(), Ok(Tau::Median));
    }

    #[test]
    fn the_sweep_holds_the_median_in_order() {
        let pairs = [rated(0.0), rated(0.12), rated(0.2), rated(0.6)];
        let refs: Vec<&Pair> = pairs.iter().collect();
        let rows = sweep(&refs, Some(0.16));
        let taus: Vec<f64> = rows.iter().map(|r| r.tau).collect();
        assert_eq!(taus, [0.05, 0.10, 0.15, 0.16, 0.25, 0.30, 0.40, 0.50]);
        let m = rows.iter().find(|r| r.label.is_some()).unwrap();
        assert_eq!((m.rigorous, m.lax), (2, 2));
        assert_eq!((rows[0].rigorous, rows[0].lax), (1, 3));
        assert_eq!((rows[7].rigorous, rows[7].lax), (3, 1));
    }

    #[test]
    fn misaligned_reasons() {
        let f = |b, g| F2p {
            fails_on_buggy: b,
            passes_on_golden: g,
        };
        assert_eq!(f(true, true).misaligned_reason(), None);
        assert_eq!(f(true, false).misaligned_reason(), Some("fails_on_golden"));
        assert_eq!(f(false, true).misaligned_reason(), Some("passes_on_buggy"));
        assert_eq!(f(false, false).misaligned_reason(), Some("both"));
    }
}

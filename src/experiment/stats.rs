//! The statistics an experiment's report shows: rates with Wilson score
//! intervals, paired differences with McNemar's exact test, pass@k, and the
//! coupling factor of a test and a fix written together.

/// The 97.5th percentile of the standard normal: 95% two-sided intervals.
const Z95: f64 = 1.959_963_984_540_054;

/// A proportion with its 95% Wilson score interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Rate {
    /// Successes.
    pub k: u32,
    /// Trials.
    pub n: u32,
    /// `k / n` (0 when `n` is 0).
    pub rate: f64,
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
}

/// `k` of `n` with its Wilson interval (`[0, 1]` when `n` is 0).
pub fn wilson(k: u32, n: u32) -> Rate {
    if n == 0 {
        return Rate {
            k,
            n,
            rate: 0.0,
            low: 0.0,
            high: 1.0,
        };
    }
    let (kf, nf) = (f64::from(k), f64::from(n));
    let p = kf / nf;
    let z2 = Z95 * Z95;
    let denom = 1.0 + z2 / nf;
    let centre = (p + z2 / (2.0 * nf)) / denom;
    let half = Z95 * (p * (1.0 - p) / nf + z2 / (4.0 * nf * nf)).sqrt() / denom;
    Rate {
        k,
        n,
        rate: p,
        low: (centre - half).max(0.0),
        high: (centre + half).min(1.0),
    }
}

/// McNemar's exact test: the two-sided p-value of `b` and `c` discordant
/// pairs (binomial with p = 1/2 on `b + c`).
pub fn mcnemar(b: u32, c: u32) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    let m = b.min(c);
    // Sum in log space: n may be in the thousands.
    let log_half_n = f64::from(n) * 0.5f64.ln();
    let tail: f64 = (0..=m).map(|i| (ln_choose(n, i) + log_half_n).exp()).sum();
    (2.0 * tail).min(1.0)
}

fn ln_choose(n: u32, k: u32) -> f64 {
    ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k)
}

fn ln_factorial(n: u32) -> f64 {
    (2..=n).map(|i| f64::from(i).ln()).sum()
}

/// The unbiased pass@k of an instance with `c` correct of `n` samples:
/// `1 - C(n - c, k) / C(n, k)`.
pub fn pass_at_k(n: u32, c: u32, k: u32) -> f64 {
    if k > n || n == 0 {
        return f64::NAN;
    }
    if n - c < k {
        return 1.0;
    }
    1.0 - (ln_choose(n - c, k) - ln_choose(n, k)).exp()
}

/// pass@k averaged over instances (`(samples, correct)` each, those with
/// fewer than k samples left out), with a 95% percentile bootstrap interval
/// over instances (2,000 resamples, a fixed seed: the same inputs give the
/// same interval). `None` when no instance has k samples.
pub fn pass_at_k_mean(instances: &[(u32, u32)], k: u32) -> Option<(f64, f64, f64)> {
    let values: Vec<f64> = instances
        .iter()
        .map(|(n, c)| pass_at_k(*n, *c, k))
        .filter(|v| !v.is_nan())
        .collect();
    if values.is_empty() {
        return None;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ u64::from(k);
    // splitmix64: small, and the same everywhere.
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let n = values.len();
    let mut means: Vec<f64> = (0..2000)
        .map(|_| {
            let sample: Vec<f64> = (0..n)
                .map(|_| values[(next() % n as u64) as usize])
                .collect();
            mean(&sample)
        })
        .collect();
    means.sort_by(f64::total_cmp);
    Some((mean(&values), means[49], means[1949]))
}

/// The coupling factor of pairs `(test failed, fix failed)`: how much more
/// often both fail together than if they failed independently,
/// `P(both) / (P(test) * P(fix))`; `None` when a marginal is 0.
pub fn coupling(pairs: &[(bool, bool)]) -> Option<f64> {
    let n = pairs.len() as f64;
    if pairs.is_empty() {
        return None;
    }
    let test = pairs.iter().filter(|p| p.0).count() as f64 / n;
    let fix = pairs.iter().filter(|p| p.1).count() as f64 / n;
    let both = pairs.iter().filter(|p| p.0 && p.1).count() as f64 / n;
    (test > 0.0 && fix > 0.0).then(|| both / (test * fix))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-4
    }

    #[test]
    fn wilson_matches_published_values() {
        let r = wilson(5, 10);
        assert!(close(r.low, 0.2366) && close(r.high, 0.7634), "{r:?}");
        let r = wilson(0, 20);
        assert!(close(r.low, 0.0) && close(r.high, 0.1611), "{r:?}");
        let r = wilson(81, 263);
        assert!(
            close(r.rate, 0.3080) && close(r.low, 0.2553) && close(r.high, 0.3662),
            "{r:?}"
        );
        assert_eq!(wilson(0, 0).high, 1.0);
    }

    #[test]
    fn mcnemar_is_the_exact_binomial_test() {
        assert!(close(mcnemar(1, 6), 0.125));
        assert!(close(mcnemar(6, 1), 0.125));
        assert_eq!(mcnemar(0, 0), 1.0);
        assert_eq!(mcnemar(3, 3), 1.0);
        assert!(close(mcnemar(0, 10), 2.0 / 1024.0));
        assert!(mcnemar(400, 600) < 1e-9, "large counts stay finite");
    }

    #[test]
    fn pass_at_k_is_the_unbiased_estimator() {
        assert!(close(pass_at_k(5, 2, 1), 0.4));
        assert!(close(pass_at_k(5, 2, 2), 0.7));
        assert_eq!(pass_at_k(5, 4, 2), 1.0);
        assert_eq!(pass_at_k(3, 0, 2), 0.0);
        assert!(pass_at_k(2, 1, 3).is_nan());
    }

    #[test]
    fn pass_at_k_has_a_bootstrap_interval_over_instances() {
        let all = [(3, 3); 10];
        assert_eq!(pass_at_k_mean(&all, 1), Some((1.0, 1.0, 1.0)));
        let mixed: Vec<(u32, u32)> = (0..20).map(|i| (2, u32::from(i % 2 == 0))).collect();
        let (m, lo, hi) = pass_at_k_mean(&mixed, 1).unwrap();
        assert!((m - 0.25).abs() < 1e-9);
        assert!(lo < m && m < hi && lo >= 0.0 && hi <= 1.0, "{lo} {hi}");
        assert_eq!(
            pass_at_k_mean(&mixed, 1),
            Some((m, lo, hi)),
            "the same every time"
        );
        assert_eq!(
            pass_at_k_mean(&[(1, 1)], 2),
            None,
            "no instance has two samples"
        );
    }

    #[test]
    fn coupling_is_one_for_independent_failures() {
        let independent = [(true, true), (true, false), (false, true), (false, false)];
        assert!(close(coupling(&independent).unwrap(), 1.0));
        let coupled = [(true, true), (false, false), (false, false), (false, false)];
        assert!(close(coupling(&coupled).unwrap(), 4.0));
        assert_eq!(coupling(&[(false, true)]), None);
    }
}

//! The mutant pool C_k of a round: candidates from the deterministic
//! operators and/or the model, then the admission rules every variant must
//! pass (it parses, differs from the fix and from the base, is not a
//! duplicate). Rejected candidates become exclusions with a reason.

use crate::state::Exclusion;
use critic_sdk::mutants::{self, FixFile, Operator};
use critic_sdk::python::{normalized, syntax_error};
use std::collections::{BTreeMap, HashSet};

/// Where a candidate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A deterministic operator.
    Deterministic,
    /// A model sample.
    Llm,
}

impl Origin {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Origin::Deterministic => "deterministic",
            Origin::Llm => "llm",
        }
    }
}

/// A variant of the fix.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Operator.
    pub operator: Operator,
    /// Origin.
    pub origin: Origin,
    /// Model sample number.
    pub sample: Option<u32>,
    /// What it changes.
    pub description: String,
    /// Every Python file of the fix, with the variant's content.
    pub files: BTreeMap<String, String>,
}

/// Up to `n` mutants per operator from the deterministic operators, spread
/// evenly over each operator's candidates so a pick is not all from the
/// first hunk.
pub fn deterministic(
    fix: &[FixFile],
    tests: &[&str],
    operators: &[Operator],
    n: usize,
) -> Vec<Candidate> {
    mutants::sample(fix, tests, operators, n)
        .into_iter()
        .map(|m| Candidate {
            operator: m.operator,
            origin: Origin::Deterministic,
            sample: None,
            description: m.description,
            files: m.files,
        })
        .collect()
}

/// A stable content digest of a variant (FNV-1a over paths and contents).
pub fn digest(files: &BTreeMap<String, String>) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (path, content) in files {
        for b in path.bytes().chain([0]).chain(content.bytes()).chain([0]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// Keep the candidates that are real variants of the fix; the others become
/// exclusions saying why.
pub fn admit(candidates: Vec<Candidate>, fix: &[FixFile]) -> (Vec<Candidate>, Vec<Exclusion>) {
    let shape = |get: &dyn Fn(&FixFile) -> &str| -> Vec<Result<Vec<String>, String>> {
        fix.iter().map(|f| normalized(get(f))).collect()
    };
    let fixed = shape(&|f| &f.fixed);
    let base = shape(&|f| &f.base);
    let mut seen: HashSet<Vec<Result<Vec<String>, String>>> = HashSet::new();
    let mut admitted = Vec::new();
    let mut excluded = Vec::new();
    for c in candidates {
        let exclude = |reason: String| Exclusion {
            operator: c.operator,
            sample: c.sample,
            reason,
        };
        if let Some((path, err)) = c
            .files
            .iter()
            .find_map(|(p, text)| syntax_error(text).map(|e| (p.clone(), e)))
        {
            excluded.push(exclude(format!("`{path}` does not parse ({err})")));
            continue;
        }
        let variant: Vec<Result<Vec<String>, String>> = fix
            .iter()
            .map(|f| normalized(c.files.get(&f.path).unwrap_or(&f.fixed)))
            .collect();
        if variant == fixed {
            excluded.push(exclude("the same code as the fix (a no-op)".into()));
        } else if variant == base {
            excluded.push(exclude("the same code as the base (no fix at all)".into()));
        } else if !seen.insert(variant) {
            excluded.push(exclude("a duplicate of an earlier variant".into()));
        } else {
            admitted.push(c);
        }
    }
    (admitted, excluded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use critic_sdk::diff::parse;

    const BASE: &str = "def merge(xs):\n    out = []\n    for s, e in sorted(xs):\n        if out and s < out[-1][1]:\n            out[-1] = (out[-1][0], max(out[-1][1], e))\n        else:\n            out.append((s, e))\n    return out\n";

    fn fix() -> Vec<FixFile> {
        let fixed = BASE.replace("s < out", "s <= out");
        let diff = format!(
            "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n{}",
            critic_sdk::diff::unified("m.py", BASE, &fixed)
                .split_once("+++ b/m.py\n")
                .unwrap()
                .1
        );
        let hunks = parse(&diff).unwrap().remove(0).hunks;
        vec![FixFile {
            path: "m.py".into(),
            base: BASE.into(),
            fixed,
            hunks,
        }]
    }

    fn variant(text: &str) -> Candidate {
        Candidate {
            operator: Operator::BehaviorSubstitution,
            origin: Origin::Llm,
            sample: Some(0),
            description: "model variant".into(),
            files: BTreeMap::from([("m.py".to_string(), text.to_string())]),
        }
    }

    #[test]
    fn deterministic_picks_at_most_n_per_operator() {
        let ops = [Operator::BehaviorSubstitution, Operator::InputShortcut];
        let pool = deterministic(
            &fix(),
            &["assert merge([(1, 3), (3, 5)]) == [(1, 5)]"],
            &ops,
            2,
        );
        let subst = pool
            .iter()
            .filter(|c| c.operator == Operator::BehaviorSubstitution)
            .count();
        assert_eq!(subst, 2, "{pool:#?}");
        assert!(pool.iter().all(|c| ops.contains(&c.operator)));
        let (admitted, excluded) = admit(pool.clone(), &fix());
        assert_eq!((admitted.len(), excluded.len()), (pool.len(), 0));
    }

    #[test]
    fn admission_drops_unparseable_noop_reverted_and_duplicate_variants() {
        let f = fix();
        let other = BASE.replace("s < out", "s == out");
        let cands = vec![
            variant("def merge(:\n"),
            variant(&f[0].fixed.replace("    out = []", "    out = []  # same")),
            variant(BASE),
            variant(&other),
            variant(&other.replace("==", " == ")),
        ];
        let (admitted, excluded) = admit(cands, &f);
        assert_eq!(admitted.len(), 1);
        let reasons: Vec<&str> = excluded.iter().map(|e| e.reason.as_str()).collect();
        assert!(reasons[0].contains("does not parse"), "{reasons:?}");
        assert!(reasons[1].contains("no-op"), "{reasons:?}");
        assert!(reasons[2].contains("the base"), "{reasons:?}");
        assert!(reasons[3].contains("duplicate"), "{reasons:?}");
    }

    #[test]
    fn digests_are_stable_and_content_sensitive() {
        let a = BTreeMap::from([("a.py".to_string(), "x = 1\n".to_string())]);
        let b = BTreeMap::from([("a.py".to_string(), "x = 2\n".to_string())]);
        assert_eq!(digest(&a), digest(&a.clone()));
        assert_ne!(digest(&a), digest(&b));
    }
}

//! Deterministic mutation operators on a Python fix (feature `python`).
//!
//! A *fix* is the source side of a patch: for each changed file its content at
//! the base and after the fix, and the hunks between them. A [`Mutant`] is a
//! plausible-but-incorrect variant of the whole fix: every fixed file, with
//! one operator applied. Each mutant re-parses; duplicates, no-ops (equal to
//! the fix) and reversions to the base are dropped.
//!
//! Operators here: *incomplete fix* (proper subsets of the fix's hunks and
//! files) and *behavior substitution* (comparison, boolean and arithmetic
//! operators swapped, integer literals off by one, in the lines the fix
//! adds).

use crate::protocol::{Hunk, LineKind};
use crate::python::syntax_error;
use ruff_python_ast::token::TokenKind;
use ruff_python_parser::parse_module;
use ruff_text_size::Ranged;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// Which idea of a wrong fix a mutant implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operator {
    /// Only part of the fix.
    IncompleteFix,
    /// The fix's core expression replaced by a near alternative.
    BehaviorSubstitution,
}

/// One changed source file of a fix.
#[derive(Debug, Clone, PartialEq)]
pub struct FixFile {
    /// Workspace-relative path.
    pub path: String,
    /// Content at the base commit (empty for a new file).
    pub base: String,
    /// Content with the fix.
    pub fixed: String,
    /// The hunks from `base` to `fixed`, in file order.
    pub hunks: Vec<Hunk>,
}

/// A variant of the fix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mutant {
    /// The operator that made it.
    pub operator: Operator,
    /// One line saying what differs from the fix.
    pub description: String,
    /// Every file of the fix, path to full content, with the mutation.
    pub files: BTreeMap<String, String>,
}

/// Every mutant of both operators, in a stable order.
pub fn all(fix: &[FixFile]) -> Vec<Mutant> {
    let mut out = incomplete_fix(fix);
    out.extend(behavior_substitution(fix));
    dedupe(fix, out)
}

/// Proper subsets of the fix: each hunk left out, each hunk kept alone, and
/// (with several files) each file left at the base.
pub fn incomplete_fix(fix: &[FixFile]) -> Vec<Mutant> {
    let hunks: Vec<(usize, usize)> = fix
        .iter()
        .enumerate()
        .flat_map(|(f, file)| (0..file.hunks.len()).map(move |h| (f, h)))
        .collect();
    let mut out = Vec::new();
    if hunks.len() >= 2 {
        for &(f, h) in &hunks {
            let without: BTreeSet<(usize, usize)> = [(f, h)].into();
            let only: BTreeSet<(usize, usize)> =
                hunks.iter().copied().filter(|x| *x != (f, h)).collect();
            let line = fix[f].hunks[h].new_start;
            out.extend(subset(
                fix,
                &without,
                format!("leaves out the change at {}:{line}", fix[f].path),
            ));
            if hunks.len() > 2 {
                out.extend(subset(
                    fix,
                    &only,
                    format!("keeps only the change at {}:{line}", fix[f].path),
                ));
            }
        }
    }
    if fix.len() >= 2 {
        for (f, file) in fix.iter().enumerate() {
            let dropped: BTreeSet<(usize, usize)> = (0..file.hunks.len()).map(|h| (f, h)).collect();
            out.extend(subset(
                fix,
                &dropped,
                format!("leaves {} unfixed", file.path),
            ));
        }
    }
    out
}

/// The fix with the hunks in `dropped` (file index, hunk index) not applied.
fn subset(
    fix: &[FixFile],
    dropped: &BTreeSet<(usize, usize)>,
    description: String,
) -> Option<Mutant> {
    let mut files = BTreeMap::new();
    for (f, file) in fix.iter().enumerate() {
        let kept: Vec<Hunk> = file
            .hunks
            .iter()
            .enumerate()
            .filter(|(h, _)| !dropped.contains(&(f, *h)))
            .map(|(_, hunk)| hunk.clone())
            .collect();
        let content = if kept.len() == file.hunks.len() {
            file.fixed.clone()
        } else {
            let partial = crate::diff::apply(&file.base, &kept).ok()?;
            if syntax_error(&partial).is_some() {
                return None;
            }
            partial
        };
        files.insert(file.path.clone(), content);
    }
    Some(Mutant {
        operator: Operator::IncompleteFix,
        description,
        files,
    })
}

/// The replacements tried for an operator token.
fn substitutes(kind: TokenKind, text: &str) -> Vec<String> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect();
    match kind {
        TokenKind::Less => s(&["<=", ">"]),
        TokenKind::LessEqual => s(&["<", ">="]),
        TokenKind::Greater => s(&[">=", "<"]),
        TokenKind::GreaterEqual => s(&[">", "<="]),
        TokenKind::EqEqual => s(&["!="]),
        TokenKind::NotEqual => s(&["=="]),
        TokenKind::Plus => s(&["-"]),
        TokenKind::Minus => s(&["+"]),
        TokenKind::Star => s(&["//"]),
        TokenKind::And => s(&["or"]),
        TokenKind::Or => s(&["and"]),
        TokenKind::Int => match text.parse::<i64>() {
            Ok(n) if n > 0 => vec![(n + 1).to_string(), (n - 1).to_string()],
            Ok(n) => vec![(n + 1).to_string()],
            Err(_) => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// One token at a time in the lines the fix adds: a swapped comparison,
/// boolean or arithmetic operator, or an integer off by one.
pub fn behavior_substitution(fix: &[FixFile]) -> Vec<Mutant> {
    let mut out = Vec::new();
    for file in fix {
        let added: HashSet<u32> = file
            .hunks
            .iter()
            .flat_map(|h| &h.lines)
            .filter(|l| l.kind == LineKind::Added)
            .filter_map(|l| l.new_line)
            .collect();
        if added.is_empty() {
            continue;
        }
        let Ok(parsed) = parse_module(&file.fixed) else {
            continue;
        };
        let line_starts: Vec<usize> = std::iter::once(0)
            .chain(file.fixed.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        for token in parsed.tokens().iter() {
            let range = token.range();
            let start = range.start().to_usize();
            let line = line_starts.partition_point(|&s| s <= start) as u32;
            if !added.contains(&line) {
                continue;
            }
            let text = &file.fixed[range];
            for replacement in substitutes(token.kind(), text) {
                let mut content = String::with_capacity(file.fixed.len() + 2);
                content.push_str(&file.fixed[..start]);
                content.push_str(&replacement);
                content.push_str(&file.fixed[range.end().to_usize()..]);
                if syntax_error(&content).is_some() {
                    continue;
                }
                let mut files: BTreeMap<String, String> = fix
                    .iter()
                    .map(|f| (f.path.clone(), f.fixed.clone()))
                    .collect();
                files.insert(file.path.clone(), content);
                out.push(Mutant {
                    operator: Operator::BehaviorSubstitution,
                    description: format!("{}:{line}: `{text}` became `{replacement}`", file.path),
                    files,
                });
            }
        }
    }
    out
}

/// Drop mutants that equal the fix, revert it entirely, or repeat an earlier
/// one (each operator has already checked that what it changed parses).
fn dedupe(fix: &[FixFile], mutants: Vec<Mutant>) -> Vec<Mutant> {
    let fixed: BTreeMap<&str, &str> = fix
        .iter()
        .map(|f| (f.path.as_str(), f.fixed.as_str()))
        .collect();
    let base: BTreeMap<&str, &str> = fix
        .iter()
        .map(|f| (f.path.as_str(), f.base.as_str()))
        .collect();
    let mut seen = HashSet::new();
    mutants
        .into_iter()
        .filter(|m| {
            let view: BTreeMap<&str, &str> = m
                .files
                .iter()
                .map(|(p, c)| (p.as_str(), c.as_str()))
                .collect();
            view != fixed && view != base && seen.insert(m.files.clone())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "def merge(intervals):\n    ordered = sorted(intervals)\n    merged = []\n    for start, end in ordered:\n        if merged and start < merged[-1][1]:\n            merged[-1] = (merged[-1][0], max(merged[-1][1], end))\n        else:\n            merged.append((start, end))\n    return merged\n\n\ndef total(intervals):\n    return sum(e - s for s, e in merge(intervals))\n";

    fn fix_of(base: &str, fixed: &str) -> FixFile {
        let diff = format!(
            "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n{}",
            unified(base, fixed)
        );
        let files = crate::diff::parse(&diff).unwrap();
        FixFile {
            path: "m.py".into(),
            base: base.into(),
            fixed: fixed.into(),
            hunks: files[0].hunks.clone(),
        }
    }

    /// A minimal unified diff with one hunk per changed line (no context), enough for these tests.
    fn unified(a: &str, b: &str) -> String {
        let (a, b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
        assert_eq!(a.len(), b.len(), "the tests change lines in place");
        let mut out = String::new();
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            if x != y {
                out.push_str(&format!("@@ -{n} +{n} @@\n-{x}\n+{y}\n", n = i + 1));
            }
        }
        out
    }

    #[test]
    fn behavior_substitution_swaps_the_operator_the_fix_added() {
        let fixed = BASE.replace("start < merged", "start <= merged");
        let ms = behavior_substitution(&[fix_of(BASE, &fixed)]);
        let contents: Vec<&str> = ms.iter().map(|m| m.files["m.py"].as_str()).collect();
        assert!(
            contents.contains(&BASE),
            "`<=` back to `<` is one candidate"
        );
        assert!(contents.iter().any(|c| c.contains("start >= merged")));
        assert!(
            contents.iter().all(|c| !c.contains("e + s")),
            "lines the fix did not add are left alone"
        );
        assert!(
            ms.iter()
                .any(|m| m.description == "m.py:5: `<=` became `<`"),
            "{:#?}",
            ms.iter().map(|m| &m.description).collect::<Vec<_>>()
        );
        // `all` drops the reversion to the base.
        let kept = all(&[fix_of(BASE, &fixed)]);
        assert!(kept.iter().all(|m| m.files["m.py"] != BASE));
        assert!(kept
            .iter()
            .all(|m| syntax_error(&m.files["m.py"]).is_none()));
    }

    #[test]
    fn integers_move_by_one_and_booleans_flip() {
        let base = "def f(xs):\n    return xs[0]\n";
        let fixed = "def f(xs):\n    return xs[1] if xs and len(xs) > 1 else None\n";
        let ms = behavior_substitution(&[fix_of(base, fixed)]);
        let texts: Vec<&str> = ms.iter().map(|m| m.files["m.py"].as_str()).collect();
        for expected in [
            "xs[2]",
            "xs[0] if",
            "xs or len",
            "len(xs) > 2",
            "len(xs) > 0",
            "len(xs) >= 1",
        ] {
            assert!(
                texts.iter().any(|t| t.contains(expected)),
                "missing {expected}: {texts:#?}"
            );
        }
    }

    #[test]
    fn incomplete_fix_leaves_out_each_hunk() {
        let fixed = BASE.replace("start < merged", "start <= merged").replace(
            "sorted(intervals)",
            "sorted((min(a, b), max(a, b)) for a, b in intervals)",
        );
        let ms = incomplete_fix(&[fix_of(BASE, &fixed)]);
        assert_eq!(ms.len(), 2, "two hunks: each left out once");
        assert!(ms
            .iter()
            .any(|m| m.files["m.py"].contains("start < merged")
                && m.files["m.py"].contains("min(a, b)")));
        assert!(ms
            .iter()
            .any(|m| m.files["m.py"].contains("start <= merged")
                && !m.files["m.py"].contains("min(a, b)")));
        assert!(ms.iter().all(|m| m.operator == Operator::IncompleteFix));
        assert!(
            incomplete_fix(&[fix_of(BASE, &BASE.replace("start < m", "start <= m"))]).is_empty(),
            "one hunk has no proper subset"
        );
    }

    #[test]
    fn incomplete_fix_leaves_whole_files_unfixed() {
        let a = fix_of(BASE, &BASE.replace("start < merged", "start <= merged"));
        let mut b = fix_of("X = 1\n", "X = 2\n");
        b.path = "n.py".into();
        let ms = all(&[a.clone(), b.clone()]);
        assert!(ms
            .iter()
            .any(|m| m.files["m.py"] == a.fixed && m.files["n.py"] == b.base));
        assert!(ms
            .iter()
            .any(|m| m.files["m.py"] == a.base && m.files["n.py"] == b.fixed));
    }
}

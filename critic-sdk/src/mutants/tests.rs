//! Unit tests of `mutants`.

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

#[test]
fn input_shortcut_fixes_only_the_tests_input() {
    let fixed = BASE.replace("start < merged", "start <= merged");
    let test = "from m import merge\nassert merge([(1, 3), (3, 5)]) == [(1, 5)]\nassert merge(intervals=[(0, 1)]) == [(0, 1)]\n";
    let ms = input_shortcut(&[fix_of(BASE, &fixed)], &[test]);
    assert_eq!(ms.len(), 2, "{ms:#?}");
    let m = &ms[0].files["m.py"];
    assert!(m.contains("def _fixed_merge(intervals):"), "{m}");
    assert!(m.contains("def merge(intervals):\n    if intervals == [(1, 3), (3, 5)]:\n        return _fixed_merge(intervals)\n    ordered"), "{m}");
    assert!(m.contains("start < merged"), "the buggy code stays: {m}");
    assert_eq!(
        ms[0].description,
        "m.py: `merge` fixed only when intervals == [(1, 3), (3, 5)]"
    );
    assert!(ms.iter().all(|m| syntax_error(&m.files["m.py"]).is_none()));
    assert!(
        input_shortcut(&[fix_of(BASE, &fixed)], &["merge(make_input())\n"]).is_empty(),
        "no literal, no shortcut"
    );
}

#[test]
fn sample_picks_at_most_n_per_operator_from_what_all_admits() {
    let fixed = BASE
        .replace("start < merged", "start <= merged")
        .replace("e - s for", "(e - s) for");
    let fix = [fix_of(BASE, &fixed)];
    let tests = ["merge([(1, 3), (3, 5)])"];
    let every = all(&fix, &tests);
    let ops = [Operator::SymptomSuppression, Operator::BehaviorSubstitution];
    let picked = sample(&fix, &tests, &ops, 2);
    for op in ops {
        let of_op = picked.iter().filter(|m| m.operator == op).count();
        let available = every.iter().filter(|m| m.operator == op).count();
        assert_eq!(of_op, available.min(2), "{op:?}: {picked:#?}");
    }
    assert!(picked.iter().all(|m| every.contains(m)), "{picked:#?}");
    assert!(picked.iter().all(|m| ops.contains(&m.operator)));
    // Picks are spread: not simply the first two substitutions.
    let subst: Vec<&Mutant> = every
        .iter()
        .filter(|m| m.operator == Operator::BehaviorSubstitution)
        .collect();
    let firsts: Vec<&Mutant> = picked
        .iter()
        .filter(|m| m.operator == Operator::BehaviorSubstitution)
        .collect();
    assert!(subst.len() > 2 && firsts != subst[..2], "{firsts:#?}");
    assert!(sample(&fix, &tests, &ops, 0).is_empty());
}

#[test]
fn input_shortcut_keeps_the_docstring_first() {
    for doc in [
        "    \"\"\"Merge.\"\"\"\n",
        "    \"\"\"Merge.\n\n    More.\n    \"\"\"\n",
        "    'Merge.'\n",
    ] {
        let base = BASE.replacen(
            "def merge(intervals):\n",
            &format!("def merge(intervals):\n{doc}"),
            1,
        );
        let fixed = base.replace("start < merged", "start <= merged");
        let ms = input_shortcut(&[fix_of(&base, &fixed)], &["merge([(1, 3), (3, 5)])"]);
        let m = &ms[0].files["m.py"];
        let want = format!("def merge(intervals):\n{doc}    if intervals == [(1, 3), (3, 5)]:");
        assert!(m.contains(&want), "{m}");
    }
}

#[test]
fn a_star_that_is_not_multiplication_is_left_alone() {
    let base = "def f(*args):\n    return g(args) * 2\n";
    let fixed = "def f(*args):\n    return g(*args) * 2\n";
    let ms = behavior_substitution(&[fix_of(base, fixed)]);
    assert!(ms.iter().any(|m| m.files["m.py"].contains("g(*args) // 2")));
    assert!(!ms.iter().any(|m| m.files["m.py"].contains("g(//args)")));
    assert!(ms.iter().all(|m| syntax_error(&m.files["m.py"]).is_none()));
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
    let kept = all(&[fix_of(BASE, &fixed)], &[]);
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
    assert!(ms.iter().any(
        |m| m.files["m.py"].contains("start < merged") && m.files["m.py"].contains("min(a, b)")
    ));
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
fn symptom_suppression_swallows_errors_around_the_buggy_lines() {
    let base = "def parse(text):\n    value = int(text)\n    return value\n";
    let fixed = "def parse(text):\n    value = int(text.strip() or 0)\n    return value\n";
    let ms = symptom_suppression(&[fix_of(base, fixed)]);
    assert_eq!(ms.len(), 2, "{ms:#?}");
    let swallow = &ms[0].files["m.py"];
    assert_eq!(
            swallow,
            "def parse(text):\n    try:\n        value = int(text)\n    except Exception:\n        pass\n    return value\n"
        );
    assert!(ms[1].files["m.py"].starts_with("import warnings\n"));
    assert!(ms[1].files["m.py"]
        .contains("warnings.simplefilter(\"ignore\")\n        value = int(text)"));
    assert!(ms
        .iter()
        .all(|m| m.operator == Operator::SymptomSuppression));
}

#[test]
fn suppression_wraps_whole_blocks_and_skips_clauses() {
    let fixed = BASE.replace("start < merged", "start <= merged");
    let ms = symptom_suppression(&[fix_of(BASE, &fixed)]);
    let m = &ms[0].files["m.py"];
    assert!(
        m.contains("        try:\n            if merged and start < merged[-1][1]:"),
        "{m}"
    );
    assert!(
        m.contains("            else:\n                merged.append"),
        "the else clause goes with its if: {m}"
    );
    assert!(syntax_error(m).is_none());
}

#[test]
fn incomplete_fix_leaves_whole_files_unfixed() {
    let a = fix_of(BASE, &BASE.replace("start < merged", "start <= merged"));
    let mut b = fix_of("X = 1\n", "X = 2\n");
    b.path = "n.py".into();
    let ms = all(&[a.clone(), b.clone()], &[]);
    assert!(ms
        .iter()
        .any(|m| m.files["m.py"] == a.fixed && m.files["n.py"] == b.base));
    assert!(ms
        .iter()
        .any(|m| m.files["m.py"] == a.base && m.files["n.py"] == b.fixed));
}

//! Deterministic mutation operators on a Python fix (feature `python`).
//!
//! A *fix* is the source side of a patch: for each changed file its content at
//! the base and after the fix, and the hunks between them. A [`Mutant`] is a
//! plausible-but-incorrect variant of the whole fix: every fixed file, with
//! one operator applied. Each mutant re-parses; duplicates, no-ops (equal to
//! the fix) and reversions to the base are dropped.
//!
//! The four deterministic operators (the fifth, *vanilla*, is a model's
//! free-form repair and has no deterministic form): *incomplete fix* (proper subsets of the fix's hunks
//! and files), *behavior substitution* (comparison, boolean and arithmetic
//! operators swapped, integer literals off by one, in the lines the fix
//! adds), *symptom suppression* (the buggy code kept, the statements the fix
//! changed wrapped in an exception- or warning-swallowing guard), and
//! *input-specific shortcut* (the buggy function kept, the fixed one called
//! only when a parameter equals a literal the test passes).

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
    /// The bug kept, its symptom (an exception or warning) swallowed.
    SymptomSuppression,
    /// The fix applied only to the input the test uses.
    InputShortcut,
    /// A free-form plausible repair with no operator-specific guidance. Only
    /// a model can write one: it has no deterministic form, so
    /// [`sample`] and [`all`] make none.
    Vanilla,
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

/// Every mutant of every operator, in a stable order; `tests` are the
/// sources of the tests the fix is judged by (for the shortcut operator).
pub fn all(fix: &[FixFile], tests: &[&str]) -> Vec<Mutant> {
    let mut seen = Seen::new(fix);
    [
        Operator::IncompleteFix,
        Operator::BehaviorSubstitution,
        Operator::SymptomSuppression,
        Operator::InputShortcut,
    ]
    .into_iter()
    .flat_map(|op| drafts(op, fix, tests))
    .filter(|d| d.parses() && seen.admit(&d.mutant))
    .map(|d| d.mutant)
    .collect()
}

/// Up to `n` mutants of each operator in `operators` (in that order), spread
/// evenly over the operator's candidates, with the same rules as [`all`].
/// Only the candidates it picks are parsed, so a round's small pool costs a
/// fraction of the whole enumeration.
pub fn sample(fix: &[FixFile], tests: &[&str], operators: &[Operator], n: usize) -> Vec<Mutant> {
    let mut seen = Seen::new(fix);
    let mut out = Vec::new();
    for &op in operators {
        let mut drafts: Vec<Option<Draft>> = drafts(op, fix, tests).into_iter().map(Some).collect();
        let len = drafts.len();
        // The evenly spaced picks first; when one is rejected, the rest in order.
        let spread = (0..n.min(len)).map(|i| i * len / n.min(len).max(1));
        let mut taken = 0;
        for i in spread.chain(0..len) {
            if taken == n {
                break;
            }
            let Some(d) = drafts[i].take() else { continue };
            if d.parses() && seen.admit(&d.mutant) {
                out.push(d.mutant);
                taken += 1;
            }
        }
    }
    out
}

/// A mutant whose listed files still need the parser's word.
struct Draft {
    mutant: Mutant,
    unchecked: Vec<String>,
}

impl Draft {
    fn parses(&self) -> bool {
        self.unchecked
            .iter()
            .all(|p| syntax_error(&self.mutant.files[p]).is_none())
    }
}

/// An operator's candidates, unchecked.
fn drafts(op: Operator, fix: &[FixFile], tests: &[&str]) -> Vec<Draft> {
    match op {
        Operator::IncompleteFix => incomplete_drafts(fix),
        Operator::BehaviorSubstitution => substitution_drafts(fix),
        Operator::SymptomSuppression => suppression_drafts(fix),
        Operator::InputShortcut => shortcut_drafts(fix, tests),
        Operator::Vanilla => Vec::new(),
    }
}

/// The drafts that parse.
fn checked(drafts: Vec<Draft>) -> Vec<Mutant> {
    drafts
        .into_iter()
        .filter(Draft::parses)
        .map(|d| d.mutant)
        .collect()
}

/// Proper subsets of the fix: each hunk left out, each hunk kept alone, and
/// (with several files) each file left at the base.
pub fn incomplete_fix(fix: &[FixFile]) -> Vec<Mutant> {
    checked(incomplete_drafts(fix))
}

fn incomplete_drafts(fix: &[FixFile]) -> Vec<Draft> {
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
) -> Option<Draft> {
    let mut files = BTreeMap::new();
    let mut unchecked = Vec::new();
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
            unchecked.push(file.path.clone());
            crate::diff::apply(&file.base, &kept).ok()?
        };
        files.insert(file.path.clone(), content);
    }
    Some(Draft {
        mutant: Mutant {
            operator: Operator::IncompleteFix,
            description,
            files,
        },
        unchecked,
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
    checked(substitution_drafts(fix))
}

fn substitution_drafts(fix: &[FixFile]) -> Vec<Draft> {
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
                // Swapping an operator for one of its own class (comparison,
                // additive, boolean) or an integer for an integer keeps the
                // grammar; only `*` can be something else (`*args`,
                // `import *`), so only that needs the parser's word.
                let mut draft = variant(
                    fix,
                    &file.path,
                    content,
                    Operator::BehaviorSubstitution,
                    format!("{}:{line}: `{text}` became `{replacement}`", file.path),
                );
                if token.kind() != TokenKind::Star {
                    draft.unchecked.clear();
                }
                out.push(draft);
            }
        }
    }
    out
}

/// The file's fix undone, and the statements each hunk changed (at the base)
/// wrapped so an exception (or, for a second mutant, a warning) raised there
/// is swallowed: the test's error signal disappears, the bug stays.
pub fn symptom_suppression(fix: &[FixFile]) -> Vec<Mutant> {
    checked(suppression_drafts(fix))
}

fn suppression_drafts(fix: &[FixFile]) -> Vec<Draft> {
    let mut out = Vec::new();
    for file in fix {
        let lines: Vec<&str> = file.base.lines().collect();
        for hunk in &file.hunks {
            let Some((first, last)) = region(&lines, hunk) else {
                continue;
            };
            let indent: String = lines[first]
                .chars()
                .take_while(|c| c.is_whitespace())
                .collect();
            let body = |pad: &str| -> String {
                lines[first..=last]
                    .iter()
                    .map(|l| format!("{pad}{l}\n"))
                    .collect()
            };
            let before: String = lines[..first].iter().map(|l| format!("{l}\n")).collect();
            let after: String = lines[last + 1..].iter().map(|l| format!("{l}\n")).collect();
            let at = first + 1;
            let swallow = format!(
                "{before}{indent}try:\n{}{indent}except Exception:\n{indent}    pass\n{after}",
                body("    ")
            );
            let mut variants = vec![(
                swallow,
                format!(
                    "{}:{at}: the bug kept, exceptions from lines {at}-{} swallowed",
                    file.path,
                    last + 1
                ),
            )];
            if !file.base.contains("from __future__") {
                let quiet = format!(
                    "import warnings\n{before}{indent}with warnings.catch_warnings():\n{indent}    warnings.simplefilter(\"ignore\")\n{}{after}",
                    body("    ")
                );
                variants.push((
                    quiet,
                    format!(
                        "{}:{at}: the bug kept, warnings from lines {at}-{} silenced",
                        file.path,
                        last + 1
                    ),
                ));
            }
            for (content, description) in variants {
                out.push(variant(
                    fix,
                    &file.path,
                    content,
                    Operator::SymptomSuppression,
                    description,
                ));
            }
        }
    }
    out
}

/// For each function the fix changes and each literal argument a test
/// passes it: the base (buggy) function, with the fixed one kept beside it
/// under another name and called only when that parameter equals that
/// literal. The test's input is handled; every other input still hits the
/// bug.
pub fn input_shortcut(fix: &[FixFile], tests: &[&str]) -> Vec<Mutant> {
    checked(shortcut_drafts(fix, tests))
}

fn shortcut_drafts(fix: &[FixFile], tests: &[&str]) -> Vec<Draft> {
    let mut out = Vec::new();
    for file in fix {
        let fixed: Vec<&str> = file.fixed.lines().collect();
        let mut done = HashSet::new();
        for hunk in &file.hunks {
            let Some(at) = hunk.lines.iter().find_map(|l| l.new_line) else {
                continue;
            };
            let Some(def) = enclosing_def(&fixed, at as usize - 1) else {
                continue;
            };
            if !done.insert(def.name.clone()) {
                continue;
            }
            let base: Vec<&str> = file.base.lines().collect();
            let Some(buggy) = find_def(&base, &def.name, def.indent) else {
                continue;
            };
            for (param, literal) in test_literals(tests, &def) {
                let Some(content) = shortcut(&base, &buggy, &fixed, &def, &param, &literal) else {
                    continue;
                };
                out.push(variant(
                    fix,
                    &file.path,
                    content,
                    Operator::InputShortcut,
                    format!(
                        "{}: `{}` fixed only when {param} == {literal}",
                        file.path, def.name
                    ),
                ));
            }
        }
    }
    out
}

/// A one-line `def` and where its block ends.
struct Def {
    name: String,
    indent: usize,
    params: Vec<String>,
    first: usize,
    last: usize,
}

fn indent_of(l: &str) -> usize {
    l.len() - l.trim_start().len()
}

/// The block of the `def` starting at line `i`, if it is a one-line header.
fn def_at(lines: &[&str], i: usize) -> Option<Def> {
    let head = lines[i].trim_start();
    let rest = head
        .strip_prefix("def ")
        .or_else(|| head.strip_prefix("async def "))?;
    let (name, rest) = rest.split_once('(')?;
    let (params, _) = rest.rsplit_once(')')?;
    if !head.trim_end().ends_with(':') {
        return None;
    }
    let indent = indent_of(lines[i]);
    let mut last = i;
    while last + 1 < lines.len()
        && (lines[last + 1].trim().is_empty() || indent_of(lines[last + 1]) > indent)
    {
        last += 1;
    }
    while last > i && lines[last].trim().is_empty() {
        last -= 1;
    }
    Some(Def {
        name: name.trim().to_string(),
        indent,
        params: split_top(params)
            .into_iter()
            .map(|p| {
                let p = p.split([':', '=']).next().unwrap_or("").trim();
                p.to_string()
            })
            .filter(|p| !p.is_empty() && p != "/")
            .collect(),
        first: i,
        last,
    })
}

/// The innermost one-line `def` whose block holds line `at`.
fn enclosing_def(lines: &[&str], at: usize) -> Option<Def> {
    (0..=at.min(lines.len().saturating_sub(1)))
        .rev()
        .filter_map(|i| def_at(lines, i))
        .find(|d| d.first <= at && at <= d.last)
}

fn find_def(lines: &[&str], name: &str, indent: usize) -> Option<Def> {
    (0..lines.len())
        .filter_map(|i| def_at(lines, i))
        .find(|d| d.name == name && d.indent == indent)
}

/// Split at top-level commas (outside brackets and strings).
fn split_top(text: &str) -> Vec<String> {
    let (mut parts, mut cur, mut depth, mut quote) = (Vec::new(), String::new(), 0i32, None);
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                parts.push(std::mem::take(&mut cur).trim().to_string());
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        parts.push(cur.trim().to_string());
    }
    parts
}

/// Whether `arg` is a literal a shortcut can compare against.
fn is_literal(arg: &str) -> bool {
    let a = arg.trim();
    matches!(a, "True" | "False" | "None")
        || a.parse::<f64>().is_ok()
        || (a.len() >= 2 && (a.starts_with('"') || a.starts_with('\'')) && a.ends_with(&a[..1]))
        || ((a.starts_with('(') && a.ends_with(')')) || (a.starts_with('[') && a.ends_with(']')))
            && split_top(&a[1..a.len() - 1]).iter().all(|x| is_literal(x))
}

/// (parameter, literal) pairs from calls `name(...)` in the tests.
fn test_literals(tests: &[&str], def: &Def) -> Vec<(String, String)> {
    let params: Vec<&str> = def
        .params
        .iter()
        .map(String::as_str)
        .filter(|p| !matches!(*p, "self" | "cls") && !p.starts_with('*'))
        .collect();
    let mut out: Vec<(String, String)> = Vec::new();
    let needle = format!("{}(", def.name);
    for test in tests {
        for (i, _) in test.match_indices(&needle) {
            let before = test[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let args = &test[i + needle.len()..];
            let mut depth = 1i32;
            let Some(end) = args.char_indices().find_map(|(j, c)| {
                match c {
                    '(' | '[' | '{' => depth += 1,
                    ')' | ']' | '}' => depth -= 1,
                    _ => {}
                }
                (depth == 0).then_some(j)
            }) else {
                continue;
            };
            for (k, arg) in split_top(&args[..end]).iter().enumerate() {
                let pair = match arg.split_once('=') {
                    Some((p, v)) if params.contains(&p.trim()) && !v.starts_with('=') => {
                        (p.trim().to_string(), v.trim().to_string())
                    }
                    _ => match params.get(k) {
                        Some(p) => (p.to_string(), arg.clone()),
                        None => continue,
                    },
                };
                if is_literal(&pair.1) && !out.contains(&pair) {
                    out.push(pair);
                }
            }
        }
    }
    out
}

/// The base file with the fixed function beside the buggy one as
/// `_fixed_<name>`, called from the buggy one's first line on `param == literal`.
fn shortcut(
    base: &[&str],
    buggy: &Def,
    fixed: &[&str],
    def: &Def,
    param: &str,
    literal: &str,
) -> Option<String> {
    let body_pad = base
        .get(buggy.first + 1..=buggy.last)?
        .iter()
        .find(|l| !l.trim().is_empty())
        .map(|l| " ".repeat(indent_of(l)))?;
    let renamed = format!("_fixed_{}", def.name);
    let mut copy: Vec<String> = fixed[def.first..=def.last]
        .iter()
        .map(|l| l.to_string())
        .collect();
    copy[0] = copy[0].replacen(&format!("def {}(", def.name), &format!("def {renamed}("), 1);
    let (receiver, params) = match def.params.first().map(String::as_str) {
        Some(s @ ("self" | "cls")) => (format!("{s}."), &def.params[1..]),
        _ => (String::new(), &def.params[..]),
    };
    // Forward every parameter as the signature requires: after `*` or
    // `*args`, by keyword.
    let mut keyword_only = false;
    let call_args: Vec<String> = params
        .iter()
        .filter_map(|p| {
            if p == "*" {
                keyword_only = true;
                None
            } else if p.starts_with("**") {
                Some(p.clone())
            } else if p.starts_with('*') {
                keyword_only = true;
                Some(p.clone())
            } else if keyword_only {
                Some(format!("{p}={p}"))
            } else {
                Some(p.clone())
            }
        })
        .collect();
    let head = docstring_end(base, buggy);
    let mut out: Vec<String> = base[..buggy.first].iter().map(|l| l.to_string()).collect();
    out.extend(copy);
    out.push(String::new());
    out.extend(base[buggy.first..=head].iter().map(|l| l.to_string()));
    out.push(format!("{body_pad}if {param} == {literal}:"));
    out.push(format!(
        "{body_pad}    return {receiver}{renamed}({})",
        call_args.join(", ")
    ));
    out.extend(base[head + 1..].iter().map(|l| l.to_string()));
    Some(out.join("\n") + "\n")
}

/// The last line of `def`'s header and docstring, so a statement inserted
/// after it leaves the docstring in place.
fn docstring_end(lines: &[&str], def: &Def) -> usize {
    let Some(first) = (def.first + 1..=def.last).find(|&i| !lines[i].trim().is_empty()) else {
        return def.first;
    };
    let text = lines[first].trim_start();
    let body = text.trim_start_matches(['r', 'R', 'u', 'U']);
    let Some(quote) = ["\"\"\"", "'''", "\"", "'"]
        .into_iter()
        .find(|q| body.starts_with(q))
    else {
        return def.first;
    };
    if body[quote.len()..].contains(quote) {
        return first;
    }
    if quote.len() == 1 {
        return def.first;
    }
    (first + 1..=def.last)
        .find(|&i| lines[i].contains(quote))
        .unwrap_or(def.first)
}

/// The 0-based first and last base lines of the statements `hunk` changes:
/// its removed lines (or, for a pure insertion, the line after it), widened
/// to whole blocks (the lines indented deeper that follow).
fn region(lines: &[&str], hunk: &Hunk) -> Option<(usize, usize)> {
    let removed: Vec<usize> = hunk
        .lines
        .iter()
        .filter(|l| l.kind == LineKind::Removed)
        .filter_map(|l| l.old_line)
        .map(|n| n as usize - 1)
        .collect();
    let (mut first, mut last) = match (removed.first(), removed.last()) {
        (Some(&a), Some(&b)) => (a, b),
        _ => {
            let at = hunk.old_start as usize;
            (at, at)
        }
    };
    let indent = |l: &str| l.len() - l.trim_start().len();
    // Start at a statement: skip blank lines, and never begin on a clause
    // keyword that continues a compound statement.
    while first < lines.len() && lines[first].trim().is_empty() {
        first += 1;
    }
    if first >= lines.len() || first > last.max(first) {
        return None;
    }
    let clause = |l: &str| {
        let head = l.trim_start();
        ["else", "elif", "except", "finally", "case"]
            .iter()
            .any(|k| {
                head.starts_with(k)
                    && !head[k.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
            })
    };
    if clause(lines[first]) {
        return None;
    }
    let base_indent = indent(lines[first]);
    last = last.max(first);
    // Whole blocks, and the clauses (`else:`, `except:`...) of a compound
    // statement, which cannot be split from it.
    while last + 1 < lines.len() {
        let next = lines[last + 1];
        let inside = next.trim().is_empty() || indent(next) > base_indent;
        if !(inside || indent(next) == base_indent && clause(next)) {
            break;
        }
        last += 1;
    }
    while last > first && lines[last].trim().is_empty() {
        last -= 1;
    }
    Some((first, last))
}

/// The fix with `path` replaced by `content`.
/// The fix with `path` replaced by `content`; that file still needs parsing.
fn variant(
    fix: &[FixFile],
    path: &str,
    content: String,
    operator: Operator,
    description: String,
) -> Draft {
    let mut files: BTreeMap<String, String> = fix
        .iter()
        .map(|f| (f.path.clone(), f.fixed.clone()))
        .collect();
    files.insert(path.to_string(), content);
    Draft {
        mutant: Mutant {
            operator,
            description,
            files,
        },
        unchecked: vec![path.to_string()],
    }
}

/// Admission by content: not the fix, not the base, not an earlier mutant.
struct Seen {
    fixed: u64,
    base: u64,
    earlier: HashSet<u64>,
}

impl Seen {
    fn new(fix: &[FixFile]) -> Seen {
        let of = |get: fn(&FixFile) -> &str| digest(fix.iter().map(|f| (f.path.as_str(), get(f))));
        Seen {
            fixed: of(|f| &f.fixed),
            base: of(|f| &f.base),
            earlier: HashSet::new(),
        }
    }

    /// Whether `m` is new; remembers it.
    fn admit(&mut self, m: &Mutant) -> bool {
        let d = digest(m.files.iter().map(|(p, c)| (p.as_str(), c.as_str())));
        d != self.fixed && d != self.base && self.earlier.insert(d)
    }
}

/// A 64-bit digest of (path, content) pairs in order.
fn digest<'a>(files: impl Iterator<Item = (&'a str, &'a str)>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for (p, c) in files {
        (p, c).hash(&mut h);
    }
    h.finish()
}

#[cfg(test)]
mod tests;

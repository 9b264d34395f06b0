//! Which lines of a Python function coverage.py may and must report as
//! statements, decided from the source alone. The covered-code-elimination
//! skill compares what coverage.py measured with these bounds before it
//! trusts what coverage.py says is left to cover: lines taken out of
//! measurement (by configuration, by a test, by a rewritten file) show up as
//! required statements coverage.py did not count.
//!
//! coverage.py names a statement by the first line of its logical line, and
//! counts a line only when CPython compiles code for it. CPython compiles
//! none for some statements (`global`, an annotation without a value, a
//! constant expression; `pass` before 3.10) and drops code it proves
//! unreachable, and what it proves has grown from version to version (3.10
//! drops the code after a `try` whose every way out returns). So the
//! slicer's statements ([`Statements::lines`], the nodes of
//! [`super::cfg::Cfg`]) bound coverage.py's from above, and the statements
//! that compile to code on every CPython from 3.9 on
//! ([`Statements::required`]) bound them from below.

use super::cfg::Cfg;
use super::eliminate::{compound_body_start, find, functions, without_docstring, Lines};
use super::EliminateError;
use ruff_python_ast::token::{TokenKind, Tokens};
use ruff_python_ast::{ExceptHandler, Expr, Number, Pattern, Stmt, UnaryOp};
use ruff_python_parser::parse_module;
use ruff_text_size::{Ranged, TextRange, TextSize};
use std::collections::BTreeSet;
use std::ops::RangeInclusive;

/// A function's statement lines, as coverage.py names them (the first line
/// of each statement's logical line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statements {
    /// The function's body: from its first statement (after the docstring)
    /// to its last line. Empty when the body is a docstring alone.
    pub body: RangeInclusive<usize>,
    /// The lines of the slicer's statements (clause headers such as `elif`,
    /// `except` and `case` included, a nested definition once, by its first
    /// line). coverage.py reports no statement of the body outside these
    /// and [`Statements::nested`].
    pub lines: BTreeSet<usize>,
    /// The lines of nested definitions past their first: coverage.py reports
    /// the statements of a nested function's body, which the slicer counts
    /// as one statement.
    pub nested: BTreeSet<usize>,
    /// The statements coverage.py reports on every CPython from 3.9 when it
    /// excludes only lines marked with its default pragma
    /// ([`no_cover_pragma`]): those of [`Statements::lines`] that compile to
    /// code and that CPython cannot drop as unreachable, less the excluded.
    pub required: BTreeSet<usize>,
}

/// The statements of function `name` (`func` or `Class.method`; of several
/// definitions of the name, the first, as [`super::eliminate`] takes it
/// without uncovered lines).
pub fn statements(source: &str, name: &str) -> Result<Statements, EliminateError> {
    super::with_stack_for(source, || statements_here(source, name))
}

fn statements_here(source: &str, name: &str) -> Result<Statements, EliminateError> {
    let parsed = parse_module(source).map_err(|e| {
        EliminateError::Syntax(super::syntax_error(source).unwrap_or_else(|| e.error.to_string()))
    })?;
    let mut defs = Vec::new();
    find(&parsed.syntax().body, name, &mut defs);
    let def = *defs.first().ok_or_else(|| EliminateError::NotFound {
        name: name.to_string(),
        available: functions(&parsed.syntax().body, ""),
    })?;
    let body = without_docstring(&def.body);
    let at = At {
        source,
        tokens: parsed.tokens(),
        lines: Lines::new(source),
    };
    let last = at.line(def.end() - TextSize::from(1));
    let first = body.first().map_or(last + 1, |s| at.logical(s.start()));
    let cfg = Cfg::of(body);
    // Every node but the entry and the exit has a range.
    let lines: BTreeSet<usize> = cfg
        .ranges
        .iter()
        .flatten()
        .map(|range| at.logical(range.start()))
        .collect();
    let mut walk = Walk {
        at: &at,
        reached: BTreeSet::new(),
        excluded: BTreeSet::new(),
        nested: BTreeSet::new(),
        loops: Vec::new(),
    };
    walk.block(body, Reach::Yes);
    // The pragma on a decorator or the signature of the function, or of a
    // class around it, excludes the whole function.
    let excluded = at.pragma_in(at.signature(def.start(), &def.decorator_list, &def.body))
        || enclosing_classes(&parsed.syntax().body, def.start())
            .iter()
            .any(|c| at.pragma_in(at.signature(c.start(), &c.decorator_list, &c.body)));
    walk.exclude_block(body, excluded);
    Ok(Statements {
        body: first..=last,
        lines,
        required: walk.reached.difference(&walk.excluded).copied().collect(),
        nested: walk.nested,
    })
}

/// coverage.py's default exclusion, the regular expression
/// `#\s*(pragma|PRAGMA)[:\s]?\s*(no|NO)\s*(cover|COVER)`, searched for in one
/// line (Python's `\s` takes the Unicode spaces and `\x1c`-`\x1f`).
pub fn no_cover_pragma(line: &str) -> bool {
    let space = |c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c);
    let word = |rest: &'_ str, words: [&str; 2]| -> Option<usize> {
        words
            .iter()
            .find(|w| rest.starts_with(**w))
            .map(|w| w.len())
    };
    line.match_indices('#').any(|(i, _)| {
        let rest = line[i + 1..].trim_start_matches(space);
        let Some(n) = word(rest, ["pragma", "PRAGMA"]) else {
            return false;
        };
        let rest = &rest[n..];
        let rest = rest
            .strip_prefix(':')
            .unwrap_or(rest)
            .trim_start_matches(space);
        let Some(n) = word(rest, ["no", "NO"]) else {
            return false;
        };
        word(rest[n..].trim_start_matches(space), ["cover", "COVER"]).is_some()
    })
}

/// Places in the source.
struct At<'a> {
    source: &'a str,
    tokens: &'a Tokens,
    lines: Lines,
}

impl At<'_> {
    fn line(&self, offset: TextSize) -> usize {
        self.lines.of(offset)
    }

    /// The first line of the logical line holding `offset`: a statement
    /// written after a compound statement's colon, on its line, is named by
    /// the header's first line.
    fn logical(&self, offset: TextSize) -> usize {
        let before = self.tokens.partition_point(|t| t.end() <= offset);
        let start = self.tokens[..before]
            .iter()
            .rposition(|t| matches!(t.kind(), TokenKind::Newline))
            .map_or(0, |i| i + 1);
        self.tokens[start..]
            .iter()
            .find(|t| {
                !matches!(
                    t.kind(),
                    TokenKind::Comment
                        | TokenKind::NonLogicalNewline
                        | TokenKind::Indent
                        | TokenKind::Dedent
                )
            })
            .map_or_else(|| self.line(offset), |t| self.line(t.start()))
    }

    /// The lines of the header from `start` to the colon before `body`
    /// (where the body starts): from `start`'s logical line to the colon's.
    fn header_lines(&self, start: TextSize, body: TextSize) -> RangeInclusive<usize> {
        let colon = compound_body_start(self.tokens, TextRange::new(start, body.max(start)))
            .unwrap_or(body);
        // The colon's own line: the one of its last byte.
        let end = colon
            .checked_sub(TextSize::from(1))
            .unwrap_or(colon)
            .max(start);
        self.logical(start)..=self.line(end)
    }

    /// The lines of a definition's decorators and signature, from `start`
    /// to the first colon after its `def` or `class`.
    fn signature(
        &self,
        start: TextSize,
        decorators: &[ruff_python_ast::Decorator],
        body: &[Stmt],
    ) -> RangeInclusive<usize> {
        let after = decorators.last().map_or(start, Ranged::end);
        let from = self.tokens.partition_point(|t| t.start() < after);
        let keyword = self.tokens[from..]
            .iter()
            .find(|t| matches!(t.kind(), TokenKind::Def | TokenKind::Class))
            .map_or(start, Ranged::start);
        let colon = self.header_lines(keyword, body_start(body));
        self.logical(start)..=*colon.end()
    }

    /// Whether a line of `lines` holds coverage.py's pragma.
    fn pragma_in(&self, lines: RangeInclusive<usize>) -> bool {
        lines.into_iter().any(|l| {
            let start = self
                .lines
                .starts
                .get(l - 1)
                .copied()
                .unwrap_or(self.source.len());
            let end = self
                .lines
                .starts
                .get(l)
                .copied()
                .unwrap_or(self.source.len());
            no_cover_pragma(&self.source[start..end])
        })
    }
}

/// Whether control can reach a point on every CPython: surely, perhaps (what
/// CPython proves unreachable differs by version, or the test of a branch is
/// a constant it folds), or never.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Reach {
    No,
    Maybe,
    Yes,
}

/// The walk of a function's statements.
struct Walk<'a> {
    at: &'a At<'a>,
    /// The statements reached for sure that compile to code.
    reached: BTreeSet<usize>,
    /// The statements coverage.py's pragma excludes.
    excluded: BTreeSet<usize>,
    /// The lines of nested definitions past their first.
    nested: BTreeSet<usize>,
    /// For each enclosing loop, how surely a `break` of it is reached, and
    /// the most a `finally` it crosses lets through (a `finally` that never
    /// falls through turns the `break` into its own way out).
    loops: Vec<(Reach, Reach)>,
}

impl Walk<'_> {
    /// `stmts`, entered as surely as `reach`; how surely their end is
    /// reached.
    fn block(&mut self, stmts: &[Stmt], mut reach: Reach) -> Reach {
        for stmt in stmts {
            reach = self.stmt(stmt, reach);
        }
        reach
    }

    /// A statement or clause header with code, at `start`.
    fn code(&mut self, start: TextSize, reach: Reach) {
        if reach == Reach::Yes {
            self.reached.insert(self.at.logical(start));
        }
    }

    fn stmt(&mut self, stmt: &Stmt, reach: Reach) -> Reach {
        match stmt {
            Stmt::Return(_) | Stmt::Raise(_) | Stmt::Continue(_) => {
                self.code(stmt.start(), reach);
                Reach::No
            }
            Stmt::Break(_) => {
                self.code(stmt.start(), reach);
                if let Some((broken, through)) = self.loops.last_mut() {
                    *broken = (*broken).max(reach.min(*through));
                }
                Reach::No
            }
            Stmt::If(s) => {
                let tests = std::iter::once(Some(&*s.test))
                    .chain(s.elif_else_clauses.iter().map(|c| c.test.as_ref()));
                // A folded test removes its branch or the others: nothing of
                // the chain is sure.
                let inner = if tests.flatten().any(folds) {
                    reach.min(Reach::Maybe)
                } else {
                    reach
                };
                self.code(s.start(), inner);
                let mut end = self.block(&s.body, inner);
                for clause in &s.elif_else_clauses {
                    if clause.test.is_some() {
                        self.code(clause.start(), inner);
                    }
                    end = end.max(self.block(&clause.body, inner));
                }
                if !s.elif_else_clauses.iter().any(|c| c.test.is_none()) {
                    end = end.max(inner);
                }
                end
            }
            Stmt::While(s) if folds(&s.test) => {
                // `while True:` loops until a `break`; another constant test
                // is folded one way or the other.
                let forever = truthy(&s.test);
                let inner = if forever {
                    reach
                } else {
                    reach.min(Reach::Maybe)
                };
                let broken = self.looping(&s.body, inner);
                let orelse = self.block(&s.orelse, if forever { Reach::No } else { inner });
                if forever {
                    broken
                } else {
                    orelse.max(broken).min(Reach::Maybe)
                }
            }
            Stmt::For(_) | Stmt::While(_) => {
                let (body, orelse) = match stmt {
                    Stmt::For(s) => (&s.body, &s.orelse),
                    Stmt::While(s) => (&s.body, &s.orelse),
                    _ => unreachable!("matched above"),
                };
                self.code(stmt.start(), reach);
                let broken = self.looping(body, reach);
                self.block(orelse, reach).max(broken)
            }
            Stmt::With(s) => {
                self.code(s.start(), reach);
                self.block(&s.body, reach);
                // A context manager may swallow the exception that left the
                // body: what follows stays reachable.
                reach
            }
            Stmt::Try(s) => self.try_stmt(s, reach),
            Stmt::Match(s) => {
                self.code(s.start(), reach);
                let mut end = Reach::No;
                for case in &s.cases {
                    // `case _:` tests nothing, so it may have no code.
                    let wildcard = case.guard.is_none() && is_wildcard(&case.pattern);
                    if !wildcard {
                        self.code(case.start(), reach);
                    }
                    end = end.max(self.block(&case.body, reach));
                }
                let exhaustive = s
                    .cases
                    .iter()
                    .any(|c| c.guard.is_none() && c.pattern.is_irrefutable());
                if !exhaustive {
                    end = end.max(reach);
                }
                end
            }
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {
                self.code(stmt.start(), reach);
                let first = self.at.line(stmt.start());
                let last = self.at.line(stmt.end() - TextSize::from(1));
                self.nested.extend(first + 1..=last);
                reach
            }
            Stmt::Assert(s) if folds(&s.test) => reach.min(Reach::Maybe),
            _ if without_code(stmt) => reach,
            _ => {
                self.code(stmt.start(), reach);
                reach
            }
        }
    }

    /// A loop's body; how surely a `break` of it is reached.
    fn looping(&mut self, body: &[Stmt], reach: Reach) -> Reach {
        self.loops.push((Reach::No, Reach::Yes));
        self.block(body, reach);
        self.loops.pop().map_or(Reach::No, |(broken, _)| broken)
    }

    fn try_stmt(&mut self, s: &ruff_python_ast::StmtTry, reach: Reach) -> Reach {
        // `try:` itself may compile to nothing.
        let finally = if s.finalbody.is_empty() {
            Reach::Yes
        } else {
            self.block(&s.finalbody, reach)
        };
        let saved: Vec<Reach> = self.loops.iter().map(|l| l.1).collect();
        for l in &mut self.loops {
            l.1 = l.1.min(finally);
        }
        let body = self.block(&s.body, reach);
        // A handler is reached by an exception from the body: CPython may
        // drop it when nothing in the body can raise.
        let raises = s.body.iter().any(|b| !without_code(b));
        let caught = if raises {
            reach
        } else {
            reach.min(Reach::Maybe)
        };
        let mut end = self.block(&s.orelse, body);
        for ExceptHandler::ExceptHandler(h) in &s.handlers {
            self.code(h.start(), caught);
            end = end.max(self.block(&h.body, caught));
        }
        for (l, through) in self.loops.iter_mut().zip(saved) {
            l.1 = through;
        }
        end.min(finally)
    }

    /// Mark the statements of `stmts` coverage.py's pragma excludes, all of
    /// them when the clause they are the body of is (`excluded`).
    fn exclude_block(&mut self, stmts: &[Stmt], excluded: bool) {
        for stmt in stmts {
            self.exclude_stmt(stmt, excluded);
        }
    }

    /// A clause: its header's `lines` holding the pragma exclude the
    /// statement that opens it (`node`; an `else:` or `finally:` is none)
    /// and its whole body, as they do in coverage.py.
    fn exclude_clause(
        &mut self,
        node: Option<TextSize>,
        lines: RangeInclusive<usize>,
        body: &[Stmt],
        excluded: bool,
    ) {
        let out = excluded || self.at.pragma_in(lines);
        if let (true, Some(start)) = (out, node) {
            self.excluded.insert(self.at.logical(start));
        }
        self.exclude_block(body, out);
    }

    /// coverage.py excludes a statement whose lines hold the pragma, and a
    /// clause's whole body when its header's lines do.
    fn exclude_stmt(&mut self, stmt: &Stmt, excluded: bool) {
        let at = self.at;
        let header = |start: TextSize, body: &[Stmt]| at.header_lines(start, body_start(body));
        match stmt {
            Stmt::If(s) => {
                self.exclude_clause(
                    Some(s.start()),
                    header(s.start(), &s.body),
                    &s.body,
                    excluded,
                );
                for c in &s.elif_else_clauses {
                    let node = c.test.as_ref().map(|_| c.start());
                    self.exclude_clause(node, header(c.start(), &c.body), &c.body, excluded);
                }
            }
            Stmt::For(_) | Stmt::While(_) => {
                let (body, orelse) = match stmt {
                    Stmt::For(s) => (&s.body, &s.orelse),
                    Stmt::While(s) => (&s.body, &s.orelse),
                    _ => unreachable!("matched above"),
                };
                self.exclude_clause(
                    Some(stmt.start()),
                    header(stmt.start(), body),
                    body,
                    excluded,
                );
                let after = body.last().map_or(stmt.start(), Ranged::end);
                self.exclude_keyword(TokenKind::Else, orelse, after, excluded);
            }
            Stmt::With(s) => {
                self.exclude_clause(
                    Some(s.start()),
                    header(s.start(), &s.body),
                    &s.body,
                    excluded,
                );
            }
            Stmt::Try(s) => {
                self.exclude_clause(
                    Some(s.start()),
                    header(s.start(), &s.body),
                    &s.body,
                    excluded,
                );
                let mut after = s.body.last().map_or(s.start(), Ranged::end);
                for ExceptHandler::ExceptHandler(h) in &s.handlers {
                    self.exclude_clause(
                        Some(h.start()),
                        header(h.start(), &h.body),
                        &h.body,
                        excluded,
                    );
                    after = h.end();
                }
                self.exclude_keyword(TokenKind::Else, &s.orelse, after, excluded);
                let after = s.orelse.last().map_or(after, Ranged::end);
                self.exclude_keyword(TokenKind::Finally, &s.finalbody, after, excluded);
            }
            Stmt::Match(s) => {
                let cases = s.cases.first().map_or(s.end(), Ranged::start);
                let out = excluded || at.pragma_in(at.header_lines(s.start(), cases));
                if out {
                    self.excluded.insert(at.logical(s.start()));
                }
                for case in &s.cases {
                    let lines = header(case.start(), &case.body);
                    self.exclude_clause(Some(case.start()), lines, &case.body, out);
                }
            }
            // A simple statement, or a nested definition (whose lines past
            // the first are not the function's own).
            _ => {
                let lines = at.logical(stmt.start())..=at.line(stmt.end() - TextSize::from(1));
                self.exclude_clause(Some(stmt.start()), lines, &[], excluded);
            }
        }
    }

    /// A loop's or `try`'s `else:` or `finally:` block after `after`: its
    /// header is the last `keyword` before the block.
    fn exclude_keyword(
        &mut self,
        keyword: TokenKind,
        block: &[Stmt],
        after: TextSize,
        excluded: bool,
    ) {
        let Some(first) = block.first() else {
            return;
        };
        let tokens = self.at.tokens;
        let from = tokens.partition_point(|t| t.start() < after);
        let start = tokens[from..]
            .iter()
            .take_while(|t| t.start() < first.start())
            .filter(|t| t.kind() == keyword)
            .last()
            .map_or(first.start(), Ranged::start);
        let lines = self.at.header_lines(start, first.start());
        self.exclude_clause(None, lines, block, excluded);
    }
}

/// The classes among `stmts`, and in them, that hold `offset`.
fn enclosing_classes(stmts: &[Stmt], offset: TextSize) -> Vec<&ruff_python_ast::StmtClassDef> {
    let mut found = Vec::new();
    let mut level = stmts;
    while let Some(class) = level.iter().find_map(|s| match s {
        Stmt::ClassDef(c) if c.range().contains(offset) => Some(c),
        _ => None,
    }) {
        found.push(class);
        level = &class.body;
    }
    found
}

/// Where a clause's body starts (Python allows no empty one).
fn body_start(body: &[Stmt]) -> TextSize {
    body.first().map_or(TextSize::from(0), Ranged::start)
}

/// Statements CPython compiles no code for, in some version or all:
/// `global`, `nonlocal`, `pass`, an annotation without a value, and an
/// expression that is a constant (a string, a number, `...`).
fn without_code(stmt: &Stmt) -> bool {
    match stmt {
        Stmt::Global(_) | Stmt::Nonlocal(_) | Stmt::Pass(_) => true,
        Stmt::AnnAssign(s) => s.value.is_none(),
        Stmt::Expr(s) => s.value.is_literal_expr(),
        _ => false,
    }
}

/// Whether CPython may fold a test to a constant: it is one (a literal, a
/// tuple of literals, arithmetic on them, `__debug__`), or a `not`, `and` or
/// `or` that has one among its operands.
fn folds(test: &Expr) -> bool {
    match test {
        Expr::UnaryOp(u) if u.op == UnaryOp::Not => folds(&u.operand),
        Expr::BoolOp(b) => b.values.iter().any(folds),
        _ => constant(test),
    }
}

fn constant(e: &Expr) -> bool {
    match e {
        Expr::Name(n) => n.id.as_str() == "__debug__",
        Expr::UnaryOp(u) => constant(&u.operand),
        Expr::BinOp(b) => constant(&b.left) && constant(&b.right),
        Expr::BoolOp(b) => b.values.iter().all(constant),
        Expr::Compare(c) => constant(&c.left) && c.comparators.iter().all(constant),
        Expr::Tuple(t) => t.elts.iter().all(constant),
        Expr::List(l) => l.elts.iter().all(constant),
        Expr::Set(s) => s.elts.iter().all(constant),
        _ => e.is_literal_expr(),
    }
}

/// `True` or a non-zero integer: a `while` on it runs until a `break`.
fn truthy(test: &Expr) -> bool {
    match test {
        Expr::BooleanLiteral(b) => b.value,
        Expr::NumberLiteral(n) => {
            matches!(&n.value, Number::Int(i) if *i != ruff_python_ast::Int::ZERO)
        }
        _ => false,
    }
}

/// `_`, which matches without testing anything.
fn is_wildcard(pattern: &Pattern) -> bool {
    matches!(pattern, Pattern::MatchAs(p) if p.pattern.is_none() && p.name.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(source: &str, name: &str) -> Statements {
        statements(source, name).unwrap()
    }

    fn set(lines: &[usize]) -> BTreeSet<usize> {
        lines.iter().copied().collect()
    }

    #[test]
    fn the_pragma_is_coverages_default_expression() {
        for yes in [
            "x = 1  # pragma: no cover",
            "#pragma:no cover",
            "# PRAGMA NO COVER",
            "#   pragma nocover",
            "s = '# pragma: no cover'",
            "# pragma:\tno\tCOVER and more",
        ] {
            assert!(no_cover_pragma(yes), "{yes}");
        }
        for no in [
            "x = 1",
            "# Pragma: no cover",
            "# pragma:: no cover",
            "# pragma: no branch",
            "# pragma: not covered",
            "pragma: no cover",
        ] {
            assert!(!no_cover_pragma(no), "{no}");
        }
    }

    // Each source below was measured with coverage.py 7.8 on CPython 3.9 to
    // 3.13: every required line is reported, and none outside `lines` and
    // `nested`.

    #[test]
    fn statements_without_code_are_counted_but_not_required() {
        let source = "\
def f(x):
    \"\"\"Doc.\"\"\"
    global g
    y: int
    \"a string\"
    ...
    pass
    z = [
        1,
    ]; w = 2
    if x: return 3
    return z
";
        let s = of(source, "f");
        assert_eq!(s.body, 3..=12);
        assert_eq!(s.lines, set(&[3, 4, 5, 6, 7, 8, 11, 12]));
        assert_eq!(s.required, set(&[8, 11, 12]));
        assert!(s.nested.is_empty());
    }

    #[test]
    fn code_cpython_proves_unreachable_is_not_required() {
        let source = "\
def f(x):
    try:
        return x
    finally:
        x = 2
    w = 3

def g(x):
    while True:
        if x:
            return 1
    else:
        y = 1
    z = 2

def h(x):
    while True:
        if x:
            break
    z = 2
    if x:
        return 1
    elif x > 1:
        return 2
    else:
        raise ValueError
    q = 1
";
        assert_eq!(of(source, "f").required, set(&[3, 5]));
        assert_eq!(of(source, "g").required, set(&[10, 11]));
        assert_eq!(
            of(source, "h").required,
            set(&[18, 19, 20, 21, 22, 23, 24, 26])
        );
    }

    #[test]
    fn folded_tests_make_their_branches_and_what_follows_unsure() {
        let source = "\
def f(x):
    a = 1
    try:
        assert False
    except AssertionError:
        b = 2
    else:
        return False
    c = 3
    if 0 and x:
        d = 4
    e = 5
";
        let s = of(source, "f");
        assert_eq!(s.required, set(&[2, 5, 6, 9]));
        assert_eq!(s.lines.len(), 10);
    }

    #[test]
    fn a_break_through_a_finally_that_returns_does_not_leave_the_loop() {
        let source = "\
def f(x):
    while True:
        try:
            break
        finally:
            return 1
    return 2
";
        assert_eq!(of(source, "f").required, set(&[4, 6]));
    }

    #[test]
    fn nested_definitions_match_and_one_line_bodies() {
        let source = "\
class C:
    @staticmethod
    def m(x):
        @wrap(
            1)
        def inner():
            return x
        match x:
            case 1:
                return inner
            case _:
                pass
        if (x or
                x): raise ValueError(
            'no')
";
        let s = of(source, "C.m");
        assert_eq!(s.body, 4..=15);
        assert_eq!(s.lines, set(&[4, 8, 9, 10, 11, 12, 13]));
        assert_eq!(s.nested, set(&[5, 6, 7]));
        assert_eq!(s.required, set(&[4, 8, 9, 10, 13]));
    }

    #[test]
    fn lines_under_the_pragma_are_not_required() {
        let source = "\
def f(x):
    if x:  # pragma: no cover
        a = 1
        b = 2
    elif x > 1:
        c = 3  # pragma: no cover
    else:  # pragma: no cover
        d = 4
    e = f(
        x)  # pragma: no cover
    try:
        g = 5
    except ValueError:  # pragma: no cover
        h = 6
    return e
";
        let s = of(source, "f");
        assert_eq!(s.required, set(&[5, 12, 15]));
        let whole = "def f(x):  # pragma: no cover\n    return x\n";
        assert!(of(whole, "f").required.is_empty());
        let class = "@dataclass(\n    frozen=True)  # pragma: no cover\nclass C:\n    def m(self):\n        return 1\n";
        assert!(of(class, "C.m").required.is_empty());
        assert_eq!(
            of(&class.replace("# pragma", "#"), "C.m").required,
            set(&[5])
        );
    }

    #[test]
    fn a_docstring_alone_has_no_statements() {
        let s = of("def f():\n    \"\"\"Only this.\"\"\"\n", "f");
        assert!(s.body.is_empty() && s.lines.is_empty() && s.required.is_empty());
        assert!(matches!(
            statements("def f(): pass\n", "g"),
            Err(EliminateError::NotFound { .. })
        ));
    }
}

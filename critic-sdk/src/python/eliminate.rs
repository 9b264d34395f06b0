//! Covered-code elimination (Algorithm 2 of the covered-code-elimination
//! method): the part of a Python function that still matters for its
//! uncovered lines.
//!
//! Every uncovered statement stays, and so does every statement on some
//! path of the function's control-flow graph through it: a backward search
//! from it to the entry and a forward search from it to the exit. The rest
//! is removed, and the function rebuilt so that it parses and keeps its
//! logic on every run that reaches an uncovered line:
//!
//! - the dead clauses of an `if` chain before its first live one become
//!   `if not (a) and not (b):` with the rest of the chain nested inside, so
//!   the tests are still evaluated in their order; when those clauses all
//!   leave the block (a guard clause such as `if x: return`), what follows
//!   the chain nests inside too; dead clauses between live ones keep their
//!   tests, dead trailing ones go;
//! - loops keep their headers, a `try` keeps a clause Python needs, a block
//!   left empty gets `pass`;
//! - the signature and decorators stay; the docstring and comments go.

use super::cfg::{Cfg, Part, ENTRY, EXIT};
use ruff_python_ast::token::{TokenKind, Tokens};
use ruff_python_ast::{ExceptHandler, Expr, Stmt, StmtFunctionDef};
use ruff_python_parser::parse_module;
use ruff_text_size::{Ranged, TextLen, TextRange, TextSize};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, VecDeque};
use std::fmt;

/// A function with its covered code eliminated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Elimination {
    /// The function, as named (`func` or `Class.method`).
    pub function: String,
    /// The reduced function's source, dedented, from its first decorator
    /// or its `def`.
    pub slice: String,
    /// `[slice line, file line]` for every line of the slice (1-based): the
    /// file line each came from (a synthesized `pass` or merged test names
    /// the line of the clause it stands for).
    pub line_map: Vec<(usize, usize)>,
    /// The first file line of every statement kept.
    pub kept: Vec<usize>,
    /// Statements in the function (clause headers count, the docstring
    /// does not).
    pub original_statements: usize,
    /// Statements in the slice.
    pub slice_statements: usize,
}

/// Why a function could not be reduced.
#[derive(Debug, Clone, PartialEq)]
pub enum EliminateError {
    /// The source does not parse.
    Syntax(String),
    /// No function of that name.
    NotFound {
        /// The name asked for.
        name: String,
        /// The functions and methods there are.
        available: Vec<String>,
    },
    /// An uncovered line is not in the function.
    Outside {
        /// The line.
        line: usize,
        /// The function's first and last lines.
        lines: (usize, usize),
    },
    /// An uncovered line holds no statement of the function.
    NotAStatement {
        /// The line.
        line: usize,
    },
    /// The slice would nest deeper than Python can parse (each dead guard
    /// clause nests what follows it one level deeper).
    TooDeep {
        /// The first line that would be too deep.
        line: usize,
    },
}

/// The deepest a slice's statements may be indented: CPython's tokenizer
/// refuses more than 100 levels of indentation, and a statement's own
/// continuation lines may add one.
const MAX_DEPTH: usize = 98;

impl fmt::Display for EliminateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EliminateError::Syntax(e) => write!(f, "the file does not parse: {e}"),
            EliminateError::NotFound { name, available } if available.is_empty() => {
                write!(f, "no function {name:?}: the file defines no function")
            }
            EliminateError::NotFound { name, available } => write!(
                f,
                "no function {name:?}; the file defines: {} (name a method `Class.method`)",
                available.join(", ")
            ),
            EliminateError::Outside { line, lines } => write!(
                f,
                "line {line} is outside the function (lines {}-{})",
                lines.0, lines.1
            ),
            EliminateError::NotAStatement { line } => write!(
                f,
                "line {line} holds no statement of the function (a blank line, a comment, the \
                 signature, the docstring, or an `else:`/`finally:`); coverage names a statement \
                 by its first line"
            ),
            EliminateError::TooDeep { line } => write!(
                f,
                "the slice would nest line {line} more than {MAX_DEPTH} levels deep, past what \
                 Python parses (each removed guard clause nests what follows it); cover some of \
                 the early guard clauses first"
            ),
        }
    }
}

impl std::error::Error for EliminateError {}

/// Reduce function `name` (`func` or `Class.method`) of `source` to what
/// the lines `uncovered` (1-based line numbers of `source`) need. With no
/// uncovered lines nothing is removed but the docstring and comments.
pub fn eliminate(
    source: &str,
    name: &str,
    uncovered: &[usize],
) -> Result<Elimination, EliminateError> {
    super::with_stack_for(source, || eliminate_here(source, name, uncovered))
}

fn eliminate_here(
    source: &str,
    name: &str,
    uncovered: &[usize],
) -> Result<Elimination, EliminateError> {
    let parsed = parse_module(source).map_err(|e| {
        EliminateError::Syntax(super::syntax_error(source).unwrap_or_else(|| e.error.to_string()))
    })?;
    let lines = Lines::new(source);
    let mut defs = Vec::new();
    find(&parsed.syntax().body, name, &mut defs);
    let span_of = |def: &StmtFunctionDef| {
        (
            lines.of(def.start()),
            lines.of(def.end() - TextSize::from(1)),
        )
    };
    // Of several definitions, the one holding the uncovered lines.
    let def = defs
        .iter()
        .find(|d| {
            let span = span_of(d);
            uncovered.iter().all(|l| (span.0..=span.1).contains(l))
        })
        .or(defs.first())
        .copied()
        .ok_or_else(|| EliminateError::NotFound {
            name: name.to_string(),
            available: functions(&parsed.syntax().body, ""),
        })?;
    let body = without_docstring(&def.body);
    let cfg = Cfg::of(body);
    let span = span_of(def);
    let mut targets = BTreeSet::new();
    for &line in uncovered {
        if line < span.0 || line > span.1 {
            return Err(EliminateError::Outside { line, lines: span });
        }
        let mut found = false;
        for (id, range) in cfg.ranges.iter().enumerate() {
            let Some(range) = *range else { continue };
            // A compound statement is a target by its header's lines.
            let end = match cfg.compound[id] {
                true => compound_body_start(parsed.tokens(), range).unwrap_or(range.end()),
                false => range.end(),
            };
            if (lines.of(range.start())..=lines.of(end - TextSize::from(1))).contains(&line) {
                targets.insert(id);
                found = true;
            }
        }
        if !found {
            return Err(EliminateError::NotAStatement { line });
        }
    }
    let keep = if uncovered.is_empty() {
        (0..cfg.succ.len()).collect()
    } else {
        necessary(&cfg, &targets)
    };
    let mut out = Slice {
        source,
        tokens: parsed.tokens(),
        lines: &lines,
        cfg: &cfg,
        keep: &keep,
        text: Vec::new(),
        too_deep: None,
    };
    out.function(def, body);
    if let Some(line) = out.too_deep {
        return Err(EliminateError::TooDeep { line });
    }
    let slice: Vec<String> = out.text.iter().map(|(text, _)| text.clone()).collect();
    let mut kept: Vec<usize> = keep
        .iter()
        .filter_map(|&id| cfg.ranges[id])
        .map(|r| lines.of(r.start()))
        .collect();
    kept.sort_unstable();
    kept.dedup();
    Ok(Elimination {
        function: name.to_string(),
        slice: slice.join("\n") + "\n",
        line_map: out
            .text
            .iter()
            .enumerate()
            .map(|(i, (_, line))| (i + 1, *line))
            .collect(),
        kept,
        original_statements: cfg.succ.len() - 2,
        slice_statements: keep.iter().filter(|&&id| id != ENTRY && id != EXIT).count(),
    })
}

/// Where the header of the compound part at `range` ends: the end of its
/// first colon outside brackets (and outside a lambda) before the logical
/// line ends; `None` when there is none.
pub(super) fn compound_body_start(tokens: &Tokens, range: TextRange) -> Option<TextSize> {
    let mut depth = 0i32;
    for token in tokens.in_range(range) {
        match token.kind() {
            TokenKind::Lpar | TokenKind::Lsqb | TokenKind::Lbrace => depth += 1,
            TokenKind::Rpar | TokenKind::Rsqb | TokenKind::Rbrace => depth -= 1,
            TokenKind::Lambda if depth == 0 => depth += 1000,
            TokenKind::Colon if depth >= 1000 => depth -= 1000,
            TokenKind::Colon if depth == 0 => return Some(token.end()),
            TokenKind::Newline => return None,
            _ => {}
        }
    }
    None
}

/// The nodes that lie on a path from the entry through a target to the
/// exit: what reaches a target, what a target reaches, and the targets.
fn necessary(cfg: &Cfg, targets: &BTreeSet<usize>) -> BTreeSet<usize> {
    let pred = cfg.predecessors();
    // Code no path from the entry reaches (after a `return` in its block)
    // never runs: it stays only if it is a target itself.
    let live = reached(&cfg.succ, ENTRY);
    let mut keep: BTreeSet<usize> = targets.clone();
    for &target in targets {
        for edges in [&cfg.succ, &pred] {
            let seen = reached(edges, target);
            keep.extend((0..seen.len()).filter(|&n| seen[n] && live[n]));
        }
    }
    keep
}

/// Which nodes a walk along `edges` from `start` reaches, `start` included.
fn reached(edges: &[Vec<usize>], start: usize) -> Vec<bool> {
    let mut seen = vec![false; edges.len()];
    let mut queue = VecDeque::from([start]);
    seen[start] = true;
    while let Some(node) = queue.pop_front() {
        for &next in &edges[node] {
            if !seen[next] {
                seen[next] = true;
                queue.push_back(next);
            }
        }
    }
    seen
}

/// The functions named `name` (`f`, `Class.f`, `Outer.Inner.f`) among
/// `stmts`, in order: a name may be defined more than once (a property's
/// getter and setter, `singledispatch` registrations).
pub(super) fn find<'a>(stmts: &'a [Stmt], name: &str, found: &mut Vec<&'a StmtFunctionDef>) {
    let (head, rest) = match name.split_once('.') {
        Some((head, rest)) => (head, Some(rest)),
        None => (name, None),
    };
    for stmt in stmts {
        match (stmt, rest) {
            (Stmt::FunctionDef(f), None) if f.name.as_str() == head => found.push(f),
            (Stmt::ClassDef(c), Some(rest)) if c.name.as_str() == head => {
                find(&c.body, rest, found)
            }
            _ => {}
        }
    }
}

/// Every function and method name among `stmts`, for messages.
pub(super) fn functions(stmts: &[Stmt], prefix: &str) -> Vec<String> {
    stmts
        .iter()
        .flat_map(|stmt| match stmt {
            Stmt::FunctionDef(f) => vec![format!("{prefix}{}", f.name)],
            Stmt::ClassDef(c) => functions(&c.body, &format!("{prefix}{}.", c.name)),
            _ => Vec::new(),
        })
        .collect()
}

/// A body without its docstring.
pub(super) fn without_docstring(body: &[Stmt]) -> &[Stmt] {
    match body.first() {
        Some(Stmt::Expr(e)) if e.value.is_string_literal_expr() => &body[1..],
        _ => body,
    }
}

/// Line numbers of offsets.
pub(super) struct Lines {
    pub(super) starts: Vec<usize>,
}

impl Lines {
    pub(super) fn new(source: &str) -> Lines {
        let starts = std::iter::once(0)
            .chain(source.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Lines { starts }
    }

    /// The 1-based line of `offset`.
    pub(super) fn of(&self, offset: TextSize) -> usize {
        let offset = offset.to_usize();
        match self.starts.binary_search(&offset) {
            Ok(i) => i + 1,
            Err(i) => i,
        }
    }
}

/// The slice being written: lines of text, each with its file line. Every
/// line that starts a statement or clause is indented anew, four spaces a
/// level from the `def` at column 0 (an `if not (...)` nests what follows
/// it one level deeper); the continuation lines of a statement are copied
/// as they are, since a string may span them.
struct Slice<'a> {
    source: &'a str,
    tokens: &'a Tokens,
    lines: &'a Lines,
    cfg: &'a Cfg,
    keep: &'a BTreeSet<usize>,
    text: Vec<(String, usize)>,
    /// The first line that would go deeper than [`MAX_DEPTH`]; nothing is
    /// written from there on.
    too_deep: Option<usize>,
}

/// One clause of an `if` chain.
struct Branch<'b> {
    start: TextSize,
    test: Option<&'b Expr>,
    body: &'b [Stmt],
}

/// One clause of a `try` or `match` that Python checks in order.
struct Arm<'b> {
    start: TextSize,
    body: &'b [Stmt],
}

impl Slice<'_> {
    fn kept(&self, start: TextSize, part: Part) -> bool {
        self.cfg
            .node(start, part)
            .is_some_and(|id| self.keep.contains(&id))
    }

    /// Whether anything of `stmts` stays: a compound statement stays when
    /// anything in it does, so their own nodes tell.
    fn alive(&self, stmts: &[Stmt]) -> bool {
        stmts.iter().any(|s| self.kept(s.start(), Part::Stmt))
    }

    /// Write `text` (which may span lines) at `depth`, its lines mapped from
    /// `line` on.
    fn push(&mut self, depth: usize, text: &str, line: usize) {
        if self.deeper_than_python_reads(depth, line) {
            return;
        }
        for (i, part) in text.split('\n').enumerate() {
            let part = part.trim_end_matches('\r');
            if i == 0 {
                self.text
                    .push((format!("{}{part}", "    ".repeat(depth)), line));
            } else {
                self.text.push((part.to_string(), line + i));
            }
        }
    }

    /// Write the source from `start` to `end` at `depth`. Its other lines
    /// move with its first (a nested `def`'s body must stay inside it),
    /// except those that start inside a string, whose text is the string's.
    fn push_source(&mut self, depth: usize, start: TextSize, end: TextSize) {
        if self.deeper_than_python_reads(depth, self.lines.of(start)) {
            return;
        }
        let line_start = self.lines.starts[self.lines.of(start) - 1];
        let original: &str = {
            let lead = &self.source[line_start..];
            &lead[..lead.len() - lead.trim_start_matches([' ', '\t']).len()]
        };
        let indent = "    ".repeat(depth);
        let mut offset = start.to_usize();
        let first = self.lines.of(start);
        for (i, part) in self.source[start.to_usize()..end.to_usize()]
            .split('\n')
            .enumerate()
        {
            let text = part.trim_end_matches('\r');
            let shown = match part.strip_prefix(original) {
                _ if i == 0 => format!("{indent}{text}"),
                Some(rest) if !self.in_string(offset) => {
                    format!("{indent}{}", rest.trim_end_matches('\r'))
                }
                _ => text.to_string(),
            };
            self.text.push((shown, first + i));
            offset += part.len() + 1;
        }
    }

    /// Whether a statement at `depth` (from `line`) would be too deep, or
    /// one before it was: the slice is then refused.
    fn deeper_than_python_reads(&mut self, depth: usize, line: usize) -> bool {
        if depth > MAX_DEPTH && self.too_deep.is_none() {
            self.too_deep = Some(line);
        }
        self.too_deep.is_some()
    }

    /// Whether `offset` lies inside a string token (past its first byte).
    fn in_string(&self, offset: usize) -> bool {
        let at = self
            .tokens
            .partition_point(|t| t.end().to_usize() <= offset);
        self.tokens.get(at).is_some_and(|t| {
            t.start().to_usize() < offset
                && matches!(
                    t.kind(),
                    TokenKind::String | TokenKind::FStringMiddle | TokenKind::TStringMiddle
                )
        })
    }

    fn src(&self, range: TextRange) -> &str {
        &self.source[range.start().to_usize()..range.end().to_usize()]
    }

    /// The header of a compound part from `start`: its text up to and
    /// including the first colon that ends a header before `end`.
    fn header(&self, start: TextSize, end: TextSize) -> TextSize {
        compound_body_start(self.tokens, TextRange::new(start, end)).unwrap_or(end)
    }

    /// A part with a header from `start` and a body, at `depth`.
    fn compound(&mut self, start: TextSize, body: &[Stmt], depth: usize) {
        let end = body.first().map_or(self.source.text_len(), Ranged::start);
        let colon = self.header(start, end);
        self.push_source(depth, start, colon);
        self.body(body, depth + 1, self.lines.of(start));
    }

    /// A block at `depth`, `pass` when nothing of it stays (`line`: the
    /// header it belongs to).
    fn body(&mut self, stmts: &[Stmt], depth: usize, line: usize) {
        if !self.alive(stmts) {
            self.push(depth, "pass", line);
            return;
        }
        // A statement may open a block the rest of this one goes in (see
        // `Slice::if_chain`): it gets `pass` if nothing else stays.
        let mut at = depth;
        let mut opened = Vec::new();
        for stmt in stmts {
            let (next, empty) = self.stmt(stmt, at);
            if next > at && empty {
                opened.push((self.text.len(), next));
            }
            at = next;
        }
        for (len, inner) in opened.into_iter().rev() {
            if self.text.len() == len {
                self.push(inner, "pass", line);
            }
        }
    }

    fn function(&mut self, def: &StmtFunctionDef, body: &[Stmt]) {
        for decorator in &def.decorator_list {
            self.push_source(0, decorator.start(), decorator.end());
        }
        // The signature starts at `def` (or `async`) after the decorators.
        let after = def.decorator_list.last().map_or(def.start(), Ranged::end);
        let start = self
            .tokens
            .iter()
            .find(|t| t.start() >= after && matches!(t.kind(), TokenKind::Def | TokenKind::Async))
            .map_or(def.start(), Ranged::start);
        self.compound(start, body, 0);
    }

    /// A loop's or `try`'s `else:` or `finally:` and its block: the keyword
    /// is the last such token before the block.
    fn clause(&mut self, keyword: TokenKind, block: &[Stmt], depth: usize) {
        let at = block.first().map_or(self.source.text_len(), Ranged::start);
        let start = self
            .tokens
            .iter()
            .take_while(|t| t.start() < at)
            .filter(|t| t.kind() == keyword)
            .last()
            .map_or(at, Ranged::start);
        self.compound(start, block, depth);
    }

    /// Write `stmt` at `depth`; the depth of what follows it in its block,
    /// and whether the block it opened for that is still empty.
    fn stmt(&mut self, stmt: &Stmt, depth: usize) -> (usize, bool) {
        if !self.kept(stmt.start(), Part::Stmt) {
            return (depth, false);
        }
        match stmt {
            Stmt::If(s) => {
                let branches: Vec<Branch> = std::iter::once(Branch {
                    start: s.start(),
                    test: Some(&*s.test),
                    body: &s.body,
                })
                .chain(s.elif_else_clauses.iter().map(|c| Branch {
                    start: c.start(),
                    test: c.test.as_ref(),
                    body: &c.body,
                }))
                .collect();
                return self.if_chain(&branches, depth);
            }
            Stmt::For(_) | Stmt::While(_) => {
                let (body, orelse) = match stmt {
                    Stmt::For(s) => (&s.body, &s.orelse),
                    Stmt::While(s) => (&s.body, &s.orelse),
                    _ => unreachable!("matched above"),
                };
                self.compound(stmt.start(), body, depth);
                if self.alive(orelse) {
                    self.clause(TokenKind::Else, orelse, depth);
                }
            }
            Stmt::With(s) => self.compound(s.start(), &s.body, depth),
            Stmt::Try(s) => {
                self.compound(s.start(), &s.body, depth);
                let handlers: Vec<Arm> = s
                    .handlers
                    .iter()
                    .map(|ExceptHandler::ExceptHandler(h)| Arm {
                        start: h.start(),
                        body: &h.body,
                    })
                    .collect();
                let finally = self.alive(&s.finalbody);
                let orelse = self.alive(&s.orelse);
                // Python needs a handler after `try` unless a `finally`
                // follows (and always before an `else`): without a live
                // one, the first stays, doing nothing.
                let required = usize::from((!finally || orelse) && !s.handlers.is_empty());
                self.arms(&handlers, required, depth);
                if !finally && s.handlers.is_empty() {
                    self.clause(TokenKind::Finally, &s.finalbody, depth);
                }
                if orelse {
                    self.clause(TokenKind::Else, &s.orelse, depth);
                }
                if finally {
                    self.clause(TokenKind::Finally, &s.finalbody, depth);
                }
            }
            Stmt::Match(s) => {
                let end = s.cases.first().map_or(s.end(), Ranged::start);
                let colon = self.header(s.start(), end);
                self.push_source(depth, s.start(), colon);
                let cases: Vec<Arm> = s
                    .cases
                    .iter()
                    .map(|c| Arm {
                        start: c.start(),
                        body: &c.body,
                    })
                    .collect();
                self.arms(&cases, 1, depth + 1);
            }
            _ => self.push_source(depth, stmt.start(), stmt.end()),
        }
        (depth, false)
    }

    /// Clauses checked in order (handlers, cases): those up to the last
    /// live one stay, a dead one doing nothing so the checks before a live
    /// one are unchanged; at least the first `required` stay.
    fn arms(&mut self, arms: &[Arm], required: usize, depth: usize) {
        let last_live = arms.iter().rposition(|a| self.alive(a.body));
        let upto = last_live.map_or(required.min(arms.len()), |i| i + 1);
        for arm in &arms[..upto] {
            self.compound(arm.start, arm.body, depth);
        }
    }

    /// An `if` chain; the depth of what follows it in its block, and
    /// whether the block it opened for that is empty.
    ///
    /// The tests of the dead clauses before the first live one become
    /// `if not (a) and not (b):`, and the rest of the chain nests inside it,
    /// so every test is still evaluated in its order and only when it was.
    /// When each of those dead clauses leaves the block (`return`, `raise`,
    /// `break`, `continue`), what follows the chain was reached only past
    /// them, so it nests inside too (a guard clause turned inside out). After
    /// the first live clause, a dead clause before a live one keeps its test
    /// and does nothing, and the dead clauses after the last live one go.
    fn if_chain(&mut self, branches: &[Branch], depth: usize) -> (usize, bool) {
        let first_live = branches.iter().position(|b| self.alive(b.body));
        let dead = &branches[..first_live.unwrap_or(branches.len())];
        let guards = dead.iter().all(|b| b.test.is_some() && leaves(b.body));
        let Some(first_live) = first_live else {
            if !guards {
                // Only the first test is needed.
                self.compound(branches[0].start, &[], depth);
                return (depth, false);
            }
            self.push_not(dead, depth);
            return (depth + 1, true);
        };
        let mut inner = depth;
        let live = &branches[first_live..];
        if first_live > 0 {
            self.push_not(dead, depth);
            inner += 1;
            if live[0].test.is_none() {
                // The `else` alone is left: its body is the `if not`'s.
                self.body(live[0].body, inner, self.lines.of(live[0].start));
                return (if guards { inner } else { depth }, false);
            }
        }
        let last_live = live.iter().rposition(|b| self.alive(b.body)).unwrap_or(0);
        for (i, branch) in live[..=last_live].iter().enumerate() {
            let end = branch
                .body
                .first()
                .map_or(self.source.text_len(), Ranged::start);
            let colon = self.header(branch.start, end);
            let first_line = self.text.len();
            self.push_source(inner, branch.start, colon);
            if i == 0 && first_live > 0 {
                // An `elif` that now opens the chain.
                let opened = &mut self.text[first_line].0;
                *opened = opened.replacen("elif", "if", 1);
            }
            self.body(branch.body, inner + 1, self.lines.of(branch.start));
        }
        (
            if first_live > 0 && guards {
                inner
            } else {
                depth
            },
            false,
        )
    }

    /// `if not (a) and not (b):` for the dead clauses `dead`, at `depth`.
    fn push_not(&mut self, dead: &[Branch], depth: usize) {
        let tests: Vec<String> = dead
            .iter()
            .filter_map(|b| b.test)
            .map(|t| format!("not ({})", self.src(t.range())))
            .collect();
        let line = self.lines.of(dead[0].start);
        self.push(depth, &format!("if {}:", tests.join(" and ")), line);
    }
}

/// Whether a block always leaves its enclosing block: one of its own
/// statements returns, raises, breaks or continues (what follows that one
/// never runs).
fn leaves(body: &[Stmt]) -> bool {
    body.iter().any(|s| {
        matches!(
            s,
            Stmt::Return(_) | Stmt::Raise(_) | Stmt::Break(_) | Stmt::Continue(_)
        )
    })
}

#[cfg(test)]
mod tests;

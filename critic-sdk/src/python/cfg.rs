//! A statement-level control-flow graph of one Python function, built from
//! Ruff's AST: every statement is a node (a compound statement by its
//! header: the `if` test, the loop header, `try:`, `with`, the `match`
//! subject), and so is every clause that decides where control goes (each
//! `elif` test, each `except` header, each `case`). Edges follow Python's
//! control flow: sequence, branches, loop back edges and `else` clauses,
//! `break` and `continue`, exceptions from a `try` body into its handlers
//! and `finally`, `return` and `raise` to the exit.
//!
//! The graph over-approximates where it must (any statement of a `try` or
//! `with` body may raise; a `finally` may continue after its statement):
//! an extra edge only keeps more code in a slice, never less.

use ruff_python_ast::{ExceptHandler, Stmt};
use ruff_text_size::{Ranged, TextRange, TextSize};
use std::collections::HashMap;

/// The function's entry node.
pub const ENTRY: usize = 0;
/// The function's exit node (returns, raises, and the end of the body).
pub const EXIT: usize = 1;

/// What a node stands for in the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Part {
    /// A statement (a compound statement's header).
    Stmt,
    /// An `elif` or `else` clause of an `if`.
    Clause,
    /// An `except` clause.
    Handler,
    /// A `case` of a `match`.
    Case,
}

/// The control-flow graph: nodes with their source ranges, and edges.
pub struct Cfg {
    /// Each node's range in the source (the entry and exit have none).
    pub ranges: Vec<Option<TextRange>>,
    /// Whether each node heads a body of its own (a compound statement or a
    /// clause); its range then covers the body too.
    pub compound: Vec<bool>,
    /// Successors of each node.
    pub succ: Vec<Vec<usize>>,
    /// Each AST part's node, by its start offset and kind.
    pub nodes: HashMap<(TextSize, Part), usize>,
}

/// Where `break`, `continue` and raised exceptions go from inside a block.
#[derive(Clone, Default)]
struct Context {
    /// The innermost loop: its header and what follows it.
    looping: Option<(usize, usize)>,
    /// Where an exception raised here may be caught: the first handler of
    /// each enclosing `try` and each enclosing `finally`.
    catchers: Vec<usize>,
}

impl Cfg {
    /// The graph of a function whose body (docstring left out) is `body`.
    pub fn of(body: &[Stmt]) -> Cfg {
        let mut cfg = Cfg {
            ranges: vec![None, None],
            compound: vec![false, false],
            succ: vec![Vec::new(), Vec::new()],
            nodes: HashMap::new(),
        };
        let first = cfg.block(body, EXIT, &Context::default());
        cfg.edge(ENTRY, first);
        cfg
    }

    /// The node of an AST part, if it is one.
    pub fn node(&self, start: TextSize, part: Part) -> Option<usize> {
        self.nodes.get(&(start, part)).copied()
    }

    /// The predecessors of every node.
    pub fn predecessors(&self) -> Vec<Vec<usize>> {
        let mut pred = vec![Vec::new(); self.succ.len()];
        for (from, tos) in self.succ.iter().enumerate() {
            for &to in tos {
                pred[to].push(from);
            }
        }
        pred
    }

    fn add(&mut self, range: TextRange, part: Part, compound: bool) -> usize {
        let id = self.ranges.len();
        self.ranges.push(Some(range));
        self.compound.push(compound);
        self.succ.push(Vec::new());
        self.nodes.insert((range.start(), part), id);
        id
    }

    fn edge(&mut self, from: usize, to: usize) {
        if !self.succ[from].contains(&to) {
            self.succ[from].push(to);
        }
    }

    /// Build `stmts`, followed by `next`; their first node (`next` when
    /// there are none). Built from the last statement back, so each knows
    /// what follows it.
    fn block(&mut self, stmts: &[Stmt], next: usize, ctx: &Context) -> usize {
        stmts
            .iter()
            .rev()
            .fold(next, |next, stmt| self.stmt(stmt, next, ctx))
    }

    /// A node `range` that may raise: an edge to every catcher around it.
    fn raising(&mut self, range: TextRange, part: Part, ctx: &Context) -> usize {
        let compound = part != Part::Stmt;
        let id = self.add(range, part, compound);
        for &catcher in &ctx.catchers {
            self.edge(id, catcher);
        }
        id
    }

    /// The header node of a compound statement (it may raise).
    fn head(&mut self, range: TextRange, ctx: &Context) -> usize {
        let id = self.raising(range, Part::Stmt, ctx);
        self.compound[id] = true;
        id
    }

    fn stmt(&mut self, stmt: &Stmt, next: usize, ctx: &Context) -> usize {
        let range = stmt.range();
        match stmt {
            Stmt::Return(_) | Stmt::Raise(_) => {
                let id = self.raising(range, Part::Stmt, ctx);
                self.edge(id, EXIT);
                id
            }
            Stmt::Break(_) | Stmt::Continue(_) => {
                let id = self.raising(range, Part::Stmt, ctx);
                match ctx.looping {
                    Some((header, after)) => {
                        let to = if matches!(stmt, Stmt::Break(_)) {
                            after
                        } else {
                            header
                        };
                        self.edge(id, to);
                    }
                    // Outside a loop neither compiles; keep the graph whole.
                    None => self.edge(id, next),
                }
                id
            }
            Stmt::If(s) => {
                let test = self.head(range, ctx);
                // The clauses, from the last back: each test falls through
                // to the clause after it, the last to what follows the `if`.
                let mut otherwise = next;
                for clause in s.elif_else_clauses.iter().rev() {
                    let body = self.block(&clause.body, next, ctx);
                    otherwise = match &clause.test {
                        Some(_) => {
                            let id = self.raising(clause.range, Part::Clause, ctx);
                            self.edge(id, body);
                            self.edge(id, otherwise);
                            id
                        }
                        None => body,
                    };
                }
                let body = self.block(&s.body, next, ctx);
                self.edge(test, body);
                self.edge(test, otherwise);
                test
            }
            Stmt::For(_) | Stmt::While(_) => {
                let (body, orelse) = match stmt {
                    Stmt::For(s) => (&s.body, &s.orelse),
                    Stmt::While(s) => (&s.body, &s.orelse),
                    _ => unreachable!("matched above"),
                };
                let header = self.head(range, ctx);
                let inner = Context {
                    looping: Some((header, next)),
                    catchers: ctx.catchers.clone(),
                };
                let first = self.block(body, header, &inner);
                let orelse = self.block(orelse, next, ctx);
                self.edge(header, first);
                self.edge(header, orelse);
                header
            }
            Stmt::Try(s) => {
                let head = self.add(range, Part::Stmt, true);
                let finally = self.block(&s.finalbody, next, ctx);
                let after = if s.finalbody.is_empty() {
                    next
                } else {
                    finally
                };
                // An exception no handler matches leaves through `finally`,
                // or, without one, to whatever catches around the `try`.
                let unhandled = if s.finalbody.is_empty() {
                    ctx.catchers.clone()
                } else {
                    vec![finally]
                };
                let mut chain: Option<usize> = None;
                for handler in s.handlers.iter().rev() {
                    let ExceptHandler::ExceptHandler(h) = handler;
                    let body = self.block(&h.body, after, ctx);
                    let id = self.raising(h.range, Part::Handler, ctx);
                    self.edge(id, body);
                    match chain {
                        Some(next_handler) => self.edge(id, next_handler),
                        None => {
                            for &to in &unhandled {
                                self.edge(id, to);
                            }
                            self.edge(id, EXIT);
                        }
                    }
                    chain = Some(id);
                }
                let orelse = self.block(&s.orelse, after, ctx);
                let mut inner = ctx.clone();
                inner.catchers = chain.into_iter().collect();
                if !s.finalbody.is_empty() {
                    inner.catchers.push(finally);
                }
                if inner.catchers.is_empty() {
                    inner.catchers = ctx.catchers.clone();
                }
                let body = self.block(&s.body, orelse, &inner);
                self.edge(head, body);
                head
            }
            Stmt::With(s) => {
                let head = self.head(range, ctx);
                let body = self.block(&s.body, next, ctx);
                self.edge(head, body);
                // A context manager may swallow the body's exception.
                self.edge(head, next);
                head
            }
            Stmt::Match(s) => {
                let subject = self.head(range, ctx);
                let mut otherwise = next;
                for case in s.cases.iter().rev() {
                    let body = self.block(&case.body, next, ctx);
                    let id = self.raising(case.range, Part::Case, ctx);
                    self.edge(id, body);
                    self.edge(id, otherwise);
                    otherwise = id;
                }
                self.edge(subject, otherwise);
                subject
            }
            // Everything else, nested definitions included, runs in
            // sequence (and may raise).
            _ => {
                let id = self.raising(range, Part::Stmt, ctx);
                self.edge(id, next);
                id
            }
        }
    }
}

//! Whether two versions of a test check and run the same things: their syntax
//! trees compared after what cannot change a verdict is normalized away.
//!
//! Normalized away: comments and layout (the tree has none), docstrings and
//! other bare string statements, `pass`, `print(...)` and logging calls
//! (`logging.info(...)`, `logger.warning(...)`, `sys.stdout.write(...)`),
//! assertion messages, and the names of variables the file binds (alpha
//! equivalence: each bound name becomes its order of first appearance). Kept:
//! everything else, including imports, function and class names, parameter
//! names (pytest reads them as fixtures) and attribute and keyword names.

use super::with_stack_for;
use ruff_python_ast::comparable::ComparableModModule;
use ruff_python_ast::name::Name;
use ruff_python_ast::visitor::transformer::{walk_except_handler, walk_expr, Transformer};
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, ExceptHandler, Expr, ExprContext, Stmt};
use ruff_python_parser::parse_module;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

/// Whether `a` and `b` are the same test up to the cosmetic edits above.
/// Sources that do not parse are compared byte for byte.
pub fn same_test(a: &str, b: &str) -> bool {
    match (canonical(a), canonical(b)) {
        (Some(x), Some(y)) => ComparableModModule::from(&x) == ComparableModModule::from(&y),
        _ => a == b,
    }
}

/// The normalized tree of `source`, `None` when it does not parse.
fn canonical(source: &str) -> Option<ast::ModModule> {
    with_stack_for(source, || {
        let mut module = parse_module(source).ok()?.into_syntax();
        strip(&mut module.body);
        let bound = bound_names(&module.body);
        let renamer = Renamer {
            bound,
            names: RefCell::new(HashMap::new()),
        };
        for stmt in module.body.iter_mut() {
            renamer.visit_stmt(stmt);
        }
        Some(module)
    })
}

/// Drop the statements that cannot change a verdict, in every nested body,
/// and assertion messages.
fn strip(body: &mut ast::Suite) {
    body.retain(|s| !cosmetic(s));
    for stmt in body.iter_mut() {
        match stmt {
            Stmt::FunctionDef(f) => strip(&mut f.body),
            Stmt::ClassDef(c) => strip(&mut c.body),
            Stmt::For(f) => {
                strip(&mut f.body);
                strip(&mut f.orelse);
            }
            Stmt::While(w) => {
                strip(&mut w.body);
                strip(&mut w.orelse);
            }
            Stmt::If(i) => {
                strip(&mut i.body);
                for clause in &mut i.elif_else_clauses {
                    strip(&mut clause.body);
                }
            }
            Stmt::With(w) => strip(&mut w.body),
            Stmt::Match(m) => {
                for case in &mut m.cases {
                    strip(&mut case.body);
                }
            }
            Stmt::Try(t) => {
                strip(&mut t.body);
                for ExceptHandler::ExceptHandler(h) in &mut t.handlers {
                    strip(&mut h.body);
                }
                strip(&mut t.orelse);
                strip(&mut t.finalbody);
            }
            Stmt::Assert(a) => a.msg = None,
            _ => {}
        }
    }
}

/// Loggers by the names people give them.
const LOGGERS: &[&str] = &[
    "logging", "logger", "log", "LOGGER", "LOG", "_logger", "_log",
];

/// The methods of a logger that only write a message.
const LOG_METHODS: &[&str] = &[
    "debug",
    "info",
    "warning",
    "warn",
    "error",
    "exception",
    "critical",
    "log",
];

/// A statement with no bearing on what the test checks: a bare string,
/// `pass`, or an output call (`print`, a logger's message, a write to
/// `sys.stdout`/`sys.stderr`) whose arguments call nothing, so the call
/// cannot be what runs the code under test.
fn cosmetic(stmt: &Stmt) -> bool {
    let Stmt::Expr(e) = stmt else {
        return matches!(stmt, Stmt::Pass(_));
    };
    let call = match e.value.as_ref() {
        Expr::StringLiteral(_) => return true,
        Expr::Call(call) => call,
        _ => return false,
    };
    let output = match call.func.as_ref() {
        Expr::Name(n) => n.id.as_str() == "print",
        Expr::Attribute(attr) => match attr.value.as_ref() {
            Expr::Name(n) => {
                LOGGERS.contains(&n.id.as_str()) && LOG_METHODS.contains(&attr.attr.as_str())
            }
            // sys.stdout.write(...), sys.stderr.write(...)
            Expr::Attribute(inner) => {
                attr.attr.as_str() == "write"
                    && matches!(inner.attr.as_str(), "stdout" | "stderr")
                    && matches!(inner.value.as_ref(), Expr::Name(n) if n.id.as_str() == "sys")
            }
            _ => false,
        },
        _ => false,
    };
    let arguments = call
        .arguments
        .args
        .iter()
        .chain(call.arguments.keywords.iter().map(|k| &k.value));
    output && !arguments.into_iter().any(calls_something)
}

/// Whether evaluating `expr` calls a function (or awaits, or yields).
fn calls_something(expr: &Expr) -> bool {
    struct Finder(bool);
    impl<'a> Visitor<'a> for Finder {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if matches!(
                expr,
                Expr::Call(_) | Expr::Await(_) | Expr::Yield(_) | Expr::YieldFrom(_)
            ) {
                self.0 = true;
            } else {
                visitor::walk_expr(self, expr);
            }
        }
    }
    let mut finder = Finder(false);
    finder.visit_expr(expr);
    finder.0
}

/// The variables the file binds (stored to, or named by `except ... as`),
/// less the names it imports or defines with `def`/`class`, dunder names and
/// pytest's module-level `pytestmark`, whose names mean something.
fn bound_names(body: &[Stmt]) -> HashSet<Name> {
    #[derive(Default)]
    struct Collect {
        stored: HashSet<Name>,
        fixed: HashSet<Name>,
    }
    impl<'a> Visitor<'a> for Collect {
        fn visit_stmt(&mut self, stmt: &'a Stmt) {
            match stmt {
                Stmt::FunctionDef(f) => {
                    self.fixed.insert(f.name.id.clone());
                }
                Stmt::ClassDef(c) => {
                    self.fixed.insert(c.name.id.clone());
                }
                Stmt::Import(i) => self.aliases(&i.names),
                Stmt::ImportFrom(i) => self.aliases(&i.names),
                Stmt::Global(g) => self.fixed.extend(g.names.iter().map(|n| n.id.clone())),
                _ => {}
            }
            visitor::walk_stmt(self, stmt);
        }
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Name(n) = expr {
                if n.ctx == ExprContext::Store {
                    self.stored.insert(n.id.clone());
                }
            }
            visitor::walk_expr(self, expr);
        }
        fn visit_except_handler(&mut self, handler: &'a ExceptHandler) {
            let ExceptHandler::ExceptHandler(h) = handler;
            if let Some(name) = &h.name {
                self.stored.insert(name.id.clone());
            }
            visitor::walk_except_handler(self, handler);
        }
    }
    impl Collect {
        fn aliases(&mut self, names: &[ast::Alias]) {
            self.fixed.extend(
                names
                    .iter()
                    .map(|a| a.asname.as_ref().unwrap_or(&a.name).id.clone()),
            );
        }
    }
    let mut collect = Collect::default();
    collect.visit_body(body);
    let Collect { stored, fixed } = collect;
    stored
        .into_iter()
        .filter(|n| {
            let s = n.as_str();
            let dunder = s.starts_with("__") && s.ends_with("__");
            !fixed.contains(n) && !dunder && s != "pytestmark"
        })
        .collect()
}

/// Renames every bound variable to `_v<N>`, N its order of first appearance.
struct Renamer {
    bound: HashSet<Name>,
    names: RefCell<HashMap<Name, Name>>,
}

impl Renamer {
    fn rename(&self, id: &mut Name) {
        if !self.bound.contains(id) {
            return;
        }
        let mut names = self.names.borrow_mut();
        let next = names.len();
        let new = names
            .entry(id.clone())
            .or_insert_with(|| Name::new(format!("_v{next}")))
            .clone();
        *id = new;
    }
}

impl Transformer for Renamer {
    fn visit_expr(&self, expr: &mut Expr) {
        if let Expr::Name(n) = expr {
            self.rename(&mut n.id);
        }
        walk_expr(self, expr);
    }

    fn visit_except_handler(&self, handler: &mut ExceptHandler) {
        let ExceptHandler::ExceptHandler(h) = handler;
        if let Some(name) = &mut h.name {
            self.rename(&mut name.id);
        }
        walk_except_handler(self, handler);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: &str = r#""""Reproduce the merge bug."""
import sys
from intervals import merge

def touching():
    got = merge([(1, 3), (3, 5)])
    return got

result = touching()
bug = result != [(1, 5)]
assert isinstance(result, list), "merge returns a list"
sys.exit(1 if bug else 0)
"#;

    #[test]
    fn cosmetic_edits_are_the_same_test() {
        let edits = [
            // docstring and comments
            T.replace("Reproduce the merge bug.", "Touching intervals merge.")
                .replace("import sys\n", "import sys  # exit code\n# the check\n"),
            // a print and a logging call that call nothing
            T.replace(
                "    return got\n",
                "    print('got', got, f'{got!r}')\n    logging.info('x %s', got)\n    return got\n",
            ),
            // local variables renamed consistently
            T.replace("got", "merged")
                .replace("result", "out")
                .replace("bug =", "buggy =")
                .replace("if bug", "if buggy"),
            // an assertion message
            T.replace("merge returns a list", "a list, please"),
            // a docstring in the function, and `pass`
            T.replace(
                "def touching():\n",
                "def touching():\n    \"\"\"The reported input.\"\"\"\n    pass\n",
            ),
        ];
        for (i, edit) in edits.iter().enumerate() {
            assert_ne!(edit, T);
            assert!(same_test(T, edit), "edit {i} counted as a change:\n{edit}");
        }
    }

    #[test]
    fn a_change_in_what_is_checked_or_run_is_not() {
        let edits = [
            // a changed input
            T.replace("(3, 5)", "(3, 6)"),
            // a changed expected value
            T.replace("[(1, 5)]", "[(1, 6)]"),
            // an added assertion
            T.replace("sys.exit", "assert merge([]) == []\nsys.exit"),
            // a changed comparison
            T.replace("result != [(1, 5)]", "result == [(1, 5)]"),
            // names swapped: not a renaming
            T.replace("result != [(1, 5)]", "bug != [(1, 5)]"),
            // a renamed function is another test
            T.replace("touching", "adjacent"),
            // a print that runs the code under test, with another input
            T.replace(
                "result = touching()",
                "result = touching()\nprint(merge([(2, 4)]))",
            ),
            // a results list that happens to be called `log`
            T.replace(
                "result = touching()",
                "result = touching()\nlog = []\nlog.append(merge([]))",
            ),
        ];
        for (i, edit) in edits.iter().enumerate() {
            assert!(!same_test(T, edit), "edit {i} counted as cosmetic:\n{edit}");
        }
    }

    #[test]
    fn unparseable_sources_compare_by_bytes() {
        assert!(same_test("def f(:\n", "def f(:\n"));
        assert!(!same_test("def f(:\n", "def f(: \n"));
    }
}

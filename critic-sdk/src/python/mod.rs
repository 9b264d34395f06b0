//! Python source helpers (feature `python`): syntax checks and a comparison
//! that ignores what does not change behavior (comments, blank lines, spacing
//! inside a line), built on Ruff's parser, which compiles for `wasm32-wasip2`.

pub mod cfg;
pub mod edit_file;
pub mod eliminate;
pub mod equivalence;
pub mod statements;

pub use eliminate::{eliminate, EliminateError, Elimination};
pub use equivalence::same_test;
pub use statements::{no_cover_pragma, statements, Statements};

use ruff_python_ast::token::TokenKind;
use ruff_python_parser::parse_module;
use ruff_text_size::Ranged;

/// Run `f`, which parses `source` and drops its syntax tree, on a stack deep
/// enough for that tree. Ruff's parser grows its own stack as it nests, but
/// dropping a tree nested thousands of levels deep (a long run of `~` or of
/// `(`: every byte can open a level) recurses once per level. Inside a
/// WebAssembly detector the stack is not grown (it would be allocated from
/// the detector's bounded memory for every large source): a tree too deep
/// traps the detector, which the host reports as its error.
pub(crate) fn with_stack_for<R>(source: &str, f: impl FnOnce() -> R) -> R {
    const PER_BYTE: usize = 512;
    const ENOUGH_ANYWHERE: usize = 2 << 20;
    let needed = source.len().saturating_mul(PER_BYTE);
    if cfg!(target_arch = "wasm32") || needed <= ENOUGH_ANYWHERE {
        return f();
    }
    stacker::maybe_grow(needed, needed, f)
}

/// `None` when `source` parses as a Python module; otherwise where and why
/// it does not (`line L, column C: message`).
pub fn syntax_error(source: &str) -> Option<String> {
    let err = with_stack_for(source, || parse_module(source).err())?;
    let offset = err.location.start().to_usize().min(source.len());
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    Some(format!("line {line}, column {column}: {}", err.error))
}

/// The tokens that carry meaning, as text: comments and non-logical newlines
/// (blank lines, line continuations inside brackets) are dropped, and so is
/// all spacing between tokens; indentation survives as indent and dedent
/// tokens. `Err` when the source does not parse.
pub fn normalized(source: &str) -> Result<Vec<String>, String> {
    with_stack_for(source, || normalized_here(source))
}

fn normalized_here(source: &str) -> Result<Vec<String>, String> {
    let parsed = parse_module(source).map_err(|e| e.error.to_string())?;
    Ok(parsed
        .tokens()
        .iter()
        .filter(|t| !matches!(t.kind(), TokenKind::Comment | TokenKind::NonLogicalNewline))
        .map(|t| match t.kind() {
            TokenKind::Newline => "\n".to_string(),
            TokenKind::Indent => "<indent>".to_string(),
            TokenKind::Dedent => "<dedent>".to_string(),
            _ => source[t.range()].to_string(),
        })
        .collect())
}

/// Whether two sources are the same program up to comments and layout.
/// Sources that do not parse are compared byte for byte.
pub fn same_code(a: &str, b: &str) -> bool {
    match (normalized(a), normalized(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_blank_lines_and_spacing_do_not_count() {
        let a = "def f(x):\n    return x+1\n";
        let b = "# helper\ndef f( x ):\n\n    return x + 1  # one more\n";
        assert!(same_code(a, b));
        assert!(!same_code(a, "def f(x):\n    return x+2\n"));
        assert!(!same_code(a, "def f(x):\n    pass\n    return x+1\n"));
    }

    #[test]
    fn syntax_errors_are_located() {
        assert_eq!(syntax_error("x = 1\n"), None);
        let e = syntax_error("x = 1\ny = )\n").unwrap();
        assert!(e.starts_with("line 2, column 5"), "{e}");
        let e = syntax_error("def f(:\n    pass\n").unwrap();
        assert!(e.starts_with("line 1, column 7"), "{e}");
    }
}

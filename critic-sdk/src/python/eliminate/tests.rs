//! Unit tests of `eliminate`.

use super::*;

/// The slice of `name` in `source` for `uncovered`, checked to parse
/// and to map every line.
fn slice(source: &str, name: &str, uncovered: &[usize]) -> String {
    let e = eliminate(source, name, uncovered).unwrap();
    assert!(
        super::super::syntax_error(&e.slice).is_none(),
        "the slice does not parse: {:?}\n{}",
        super::super::syntax_error(&e.slice),
        e.slice
    );
    assert_eq!(e.line_map.len(), e.slice.lines().count(), "{}", e.slice);
    e.slice
}

const CHAIN: &str = "\
def f(x):
    if x == 1:
        a = 1
    elif x == 2:
        a = 2
    elif x == 3:
        a = 3
    else:
        a = 4
    return a
";

#[test]
fn dead_clauses_before_a_live_one_become_if_not_and_the_rest_nests() {
    assert_eq!(
        slice(CHAIN, "f", &[7]),
        "\
def f(x):
    if not (x == 1) and not (x == 2):
        if x == 3:
            a = 3
    return a
"
    );
    assert_eq!(
        slice(CHAIN, "f", &[9]),
        "\
def f(x):
    if not (x == 1) and not (x == 2) and not (x == 3):
        a = 4
    return a
"
    );
    let e = eliminate(CHAIN, "f", &[7]).unwrap();
    assert_eq!(e.line_map, vec![(1, 1), (2, 2), (3, 6), (4, 7), (5, 10)]);
    assert_eq!(e.kept, vec![2, 4, 6, 7, 10]);
    assert_eq!((e.original_statements, e.slice_statements), (8, 5));
}

#[test]
fn a_dead_clause_between_live_ones_keeps_its_test_and_trailing_ones_go() {
    assert_eq!(
        slice(CHAIN, "f", &[5, 9]),
        "\
def f(x):
    if not (x == 1):
        if x == 2:
            a = 2
        elif x == 3:
            pass
        else:
            a = 4
    return a
"
    );
    assert_eq!(
        slice(CHAIN, "f", &[3]),
        "def f(x):\n    if x == 1:\n        a = 1\n    return a\n"
    );
    // A line after the chain needs every path through it.
    let all = slice(CHAIN, "f", &[10]);
    assert_eq!(all, CHAIN);
    assert_eq!(slice(CHAIN, "f", &[]), CHAIN);
}

const LOOP: &str = "\
def f(xs):
    total = 0
    for x in xs:
        if x < 0:
            continue
        if x > 100:
            break
        total += x
    else:
        total = -1
    return total
";

#[test]
fn loops_keep_their_headers_back_edges_and_else() {
    // Reaching the `else` means no `break`: the loop body stays (it is
    // run again and again before), the `break` goes, and what followed
    // its guard nests under the guard's negation.
    assert_eq!(
        slice(LOOP, "f", &[10]),
        "\
def f(xs):
    total = 0
    for x in xs:
        if x < 0:
            continue
        if not (x > 100):
            total += x
    else:
        total = -1
    return total
"
    );
    // Reaching the `break` never runs the `else`.
    assert_eq!(
        slice(LOOP, "f", &[7]),
        "\
def f(xs):
    total = 0
    for x in xs:
        if x < 0:
            continue
        if x > 100:
            break
        total += x
    return total
"
    );
    let src = "\
def g(n):
    i = 0
    while i < n:
        i += 1
        if i == 7:
            return 'seven'
    return 'done'
";
    assert_eq!(
            slice(src, "g", &[6]),
            "def g(n):\n    i = 0\n    while i < n:\n        i += 1\n        if i == 7:\n            return 'seven'\n"
        );
}

const TRY: &str = "\
def h(s):
    try:
        v = int(s)
    except ValueError:
        v = -1
    except TypeError:
        v = -2
    else:
        v += 1
    finally:
        done = True
    return v
";

#[test]
fn try_keeps_the_handlers_checked_before_a_live_one() {
    assert_eq!(
        slice(TRY, "h", &[7]),
        "\
def h(s):
    try:
        v = int(s)
    except ValueError:
        pass
    except TypeError:
        v = -2
    finally:
        done = True
    return v
"
    );
    assert_eq!(
        slice(TRY, "h", &[5]),
        "\
def h(s):
    try:
        v = int(s)
    except ValueError:
        v = -1
    finally:
        done = True
    return v
"
    );
    // An `else` needs a handler before it.
    assert_eq!(
        slice(TRY, "h", &[9]),
        "\
def h(s):
    try:
        v = int(s)
    except ValueError:
        pass
    else:
        v += 1
    finally:
        done = True
    return v
"
    );
}

#[test]
fn with_and_match() {
    let src = "\
def w(path):
    with open(path) as f:
        data = f.read()
    if not data:
        raise ValueError('empty')
    return data
";
    assert_eq!(
        slice(src, "w", &[5]),
        "\
def w(path):
    with open(path) as f:
        data = f.read()
    if not data:
        raise ValueError('empty')
"
    );
    let src = "\
def m(cmd):
    match cmd:
        case 'go':
            r = 1
        case ['stop', n]:
            r = n
        case _:
            r = 0
    return r
";
    assert_eq!(
        slice(src, "m", &[6]),
        "\
def m(cmd):
    match cmd:
        case 'go':
            pass
        case ['stop', n]:
            r = n
    return r
"
    );
}

const METHOD: &str = "\
class C:
    @staticmethod
    @other(
        1)
    def f(a, b):
        \"\"\"Doc
        string.\"\"\"
        x = compute(a,
                    b)  # trailing
        if a: return x
        if b: y = 1; z = 2
        else: raise KeyError(
            'no')
        return y + z
";

#[test]
fn methods_inline_bodies_multi_line_statements_and_decorators() {
    assert_eq!(
        slice(METHOD, "C.f", &[12]),
        "\
@staticmethod
@other(
    1)
def f(a, b):
    x = compute(a,
                b)
    if not (a):
        if not (b):
            raise KeyError(
                'no')
"
    );
    // A line names every statement on it: here the `if` test too, and
    // what follows an unrun test is needed whichever way it goes.
    assert_eq!(
        slice(METHOD, "C.f", &[11]),
        "\
@staticmethod
@other(
    1)
def f(a, b):
    x = compute(a,
                b)
    if not (a):
        if b:
            y = 1
            z = 2
        else:
            raise KeyError(
                'no')
        return y + z
"
    );
    // The second line of a statement names it too.
    assert_eq!(slice(METHOD, "C.f", &[9]), slice(METHOD, "C.f", &[8]));
}

#[test]
fn a_nested_definition_is_one_statement() {
    let src = "\
def outer(k):
    def inner(v):
        return v * k
    if k:
        return inner
    return None
";
    assert_eq!(
            slice(src, "outer", &[3]),
            "def outer(k):\n    def inner(v):\n        return v * k\n    if k:\n        return inner\n    return None\n"
        );
    assert_eq!(
            slice(src, "outer", &[6]),
            "def outer(k):\n    def inner(v):\n        return v * k\n    if not (k):\n        return None\n"
        );
}

#[test]
fn a_nested_definition_moves_with_its_first_line_but_strings_do_not() {
    let src = "\
class K:
    def m(self, x):
        if x:
            @wraps(x)
            def inner():
                return '''a
  b'''
            return inner
        return None
";
    assert_eq!(
            slice(src, "K.m", &[8]),
            "def m(self, x):\n    if x:\n        @wraps(x)\n        def inner():\n            return '''a\n  b'''\n        return inner\n"
        );
}

#[test]
fn of_two_definitions_of_a_name_the_one_holding_the_lines_is_reduced() {
    let src = "\
class P:
    @property
    def v(self):
        return self._v

    @v.setter
    def v(self, value):
        if value:
            self._v = value
";
    assert!(slice(src, "P.v", &[9]).contains("def v(self, value):"));
    assert!(slice(src, "P.v", &[4]).contains("return self._v"));
}

#[test]
fn code_after_a_return_in_its_block_goes_with_the_return() {
    let source = "def g(x):\n    if x:\n        return 1\n        x = 5\n    return x * 2\n";
    let e = eliminate(source, "g", &[5]).unwrap();
    assert_eq!(
        e.slice,
        "def g(x):\n    if not (x):\n        return x * 2\n"
    );
    let inline = "def g(x):\n    if x: return 1; x = 5\n    return x * 2\n";
    let e = eliminate(inline, "g", &[3]).unwrap();
    assert!(!e.slice.contains("x = 5"), "{}", e.slice);
}

#[test]
fn a_slice_deeper_than_python_parses_is_refused() {
    let guards = |n: usize| {
        let body: String = (0..n)
            .map(|i| format!("    if x == {i}:\n        return {i}\n    y = x\n"))
            .collect();
        format!("def f(x):\n{body}    return -x\n")
    };
    let last = |n: usize| 2 + 3 * n;
    let fits = eliminate(&guards(MAX_DEPTH - 1), "f", &[last(MAX_DEPTH - 1)]).unwrap();
    assert!(fits
        .slice
        .contains(&format!("{}return -x", "    ".repeat(MAX_DEPTH))));
    let err = eliminate(&guards(MAX_DEPTH), "f", &[last(MAX_DEPTH)]).unwrap_err();
    assert_eq!(
        err,
        EliminateError::TooDeep {
            line: last(MAX_DEPTH) - 1
        }
    );
    // Thousands of guards stop at the limit instead of writing a
    // slice the square of the source's size.
    let err = eliminate(&guards(5_000), "f", &[last(5_000)]).unwrap_err();
    assert!(matches!(err, EliminateError::TooDeep { .. }), "{err}");
}

#[test]
fn a_dead_guard_clause_takes_what_follows_it_under_its_negation() {
    let src = "\
def g(x):
    if x:
        return 1
    y = 2
    return y
";
    assert_eq!(
        slice(src, "g", &[4]),
        "def g(x):\n    if not (x):\n        y = 2\n        return y\n"
    );
    // Nothing follows the guard in its block: the block gets `pass`.
    let src = "\
def k(xs):
    for x in xs:
        if x:
            return 1
    done = True
";
    assert_eq!(
        slice(src, "k", &[5]),
        "def k(xs):\n    for x in xs:\n        if not (x):\n            pass\n    done = True\n"
    );
}

#[test]
fn bad_requests_say_what_is_wrong() {
    let e = eliminate(METHOD, "f", &[12]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "no function \"f\"; the file defines: C.f (name a method `Class.method`)"
    );
    let e = eliminate(METHOD, "C.f", &[1]).unwrap_err();
    assert_eq!(e.to_string(), "line 1 is outside the function (lines 2-14)");
    for line in [5, 6, 7] {
        let e = eliminate(METHOD, "C.f", &[line]).unwrap_err();
        assert_eq!(e, EliminateError::NotAStatement { line }, "line {line}");
    }
    let e = eliminate(CHAIN, "f", &[8]).unwrap_err();
    assert_eq!(e, EliminateError::NotAStatement { line: 8 });
    let e = eliminate("def f(:\n", "f", &[1]).unwrap_err();
    assert!(
        e.to_string().starts_with("the file does not parse: line 1"),
        "{e}"
    );
    let e = eliminate("x = 1\n", "f", &[]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "no function \"f\": the file defines no function"
    );
}

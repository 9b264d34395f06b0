"""Proposition 3.1 of covered-code elimination, checked on real functions.

For a function of a PyPI package and a set U of its lines, `critic eliminate`
gives a slice. Both the original and the slice run on a grid of inputs under
`sys.settrace`; every time either reaches a line of U, the values of the
names that line uses are recorded. On every input on which the original
reaches a line of U, the slice must record the same sequence (and end the
same way). Slices are compiled with the module's globals (a method inside a
class of its name, so private names mangle alike) and swapped in for the
original while the grid runs.

Usage: python3 property.py CRITIC   (prints a JSON report; exit 1 on a
counterexample)
"""

import ast
import importlib
import inspect
import json
import random
import re
import subprocess
import sys
import textwrap

CRITIC = sys.argv[1]


# -- the functions and their input grids --------------------------------------

def bump_version_grid():
    versions = ["1.2.3", "1.2.3a0", "1.2.3b1", "1.2a1", "1.2b0", "0.9", "2.0.0", "1.2.4a1", "1.0b3", "1.2"]
    for v in versions:
        for position in (0, 1, 2, -1, -2, -3, 3, -4):
            for pre in (None, "a", "alpha", "b", "beta", "x"):
                yield (v, position, pre), {}


EPYDOC = [
    "", "Short.", "Short.\n\nLong text\nover lines.",
    "Sum.\n\n@param x: the x\n@type x: int\n@return: result\n@rtype: str",
    "Sum.\n@param x: first\n    continued\n@param y: second\n@raise ValueError: bad\n@keyword z: kw",
    "@param: missing name", "@type x: int", "Text\n@rtype: bool\n@return: yes\n@returns: again",
    "Sum.\n\n@param x: x\n@type x: int, optional\n@param y: y\n@type y: str\n@yield: items\n@ytype: int",
    "Sum.\n@raise: bare\n@raises KeyError: k\n@bogus thing: value",
    "Head\n\n  indented\n@param a: A\n\n  more",
]

REST = [
    "", "Short.", "Short.\n\nLong.", "Sum.\n\n:param x: the x\n:type x: int\n:returns: r\n:rtype: str",
    "Sum.\n:param int x: typed\n:param y: y, defaults to 3.\n:raises ValueError: bad\n:raises: bare",
    ":param x: only", ":type x: int", "Sum.\n:param str? x: optional\n:yields: things\n:ytype: int",
    "Sum.\n:param x:\n    multi\n    line\n:return: r\n:returns: again", ":meta: thing\n:keyword a: b",
    "Sum.\n:param x y z: too many", "Sum.\n:unknown:",
]

GOOGLE = [
    "", "Short.", "Short.\n\nLong.",
    "Sum.\n\nArgs:\n    x (int): the x.\n    y: the y.\n\nReturns:\n    str: result.",
    "Sum.\n\nArgs:\n    x (int, optional): x. Defaults to 3.\n\nRaises:\n    ValueError: bad.\n\nYields:\n    int: items",
    "Args:\n    x: only", "Sum.\n\nExample:\n    >>> f()\n\nNote:\n    a note",
    "Sum.\n\nArgs:\n    x (int):\n        multi\n        line\n    *args: rest\n    **kw: more",
    "Sum.\n\nReturns:\n    a thing\n\nAttributes:\n    a (str): attr", "Sum.\n\nArgs:\nbroken",
    "Sum.\n\nArguments:\n    a: A\nParameters:\n    b: B",
]


def epydoc_grid():
    for text in EPYDOC:
        yield (text,), {}


def rest_grid():
    for text in REST:
        yield (text,), {}


def google_grid():
    for text in GOOGLE:
        yield (text,), {}


def wrap_grid():
    texts = ["", "word", "a b c d e f g h", "\x1b[1mbold\x1b[0m text that is long enough to wrap " * 3,
             "supercalifragilisticexpialidocious is long", "  lead and trail  ", "x" * 50]
    for text in texts:
        for width in (5, 12, 30):
            for max_lines in (None, 1, 2):
                for ph in (" [...]", "...", " " * 40):
                    yield (text, width, max_lines, ph), {}


def numpydoc_grid():
    numpydoc = importlib.import_module("docstring_parser.numpydoc")
    common = importlib.import_module("docstring_parser.common")
    texts = [
        "", "Short.", "Short.\n\nLong text.",
        "Sum.\n\nParameters\n----------\nx : int\n    the x\ny : str, optional\n    the y\n\nReturns\n-------\nstr\n    r",
        "Sum.\n\nRaises\n------\nValueError\n    bad\n\nYields\n------\nint\n    items",
        "Sum.\n\nParameters\n----------\nx\n    no type\n\nExamples\n--------\n>>> f()",
        "Sum.\n\nReturns\n-------\nname : int\n    named\n\nWarns\n-----\nUserWarning\n    w",
        "Sum.\n\nOther Parameters\n----------------\nq : float, default 1.0\n    q\n\nAttributes\n----------\na : int",
    ]
    for text in texts:
        parsed = numpydoc.parse(text)
        for style in common.RenderingStyle:
            yield (parsed, style, "    "), {}


def call_plain(module, qualname):
    def run(fn, args, kwargs):
        return fn(*args, **kwargs)
    return run


def call_google(module, qualname):
    def run(fn, args, kwargs):
        cls = module.GoogleParser
        saved = cls.parse
        cls.parse = fn
        try:
            return cls().parse(*args)
        finally:
            cls.parse = saved
    return run


def call_wrap(module, qualname):
    def run(fn, args, kwargs):
        cls = module.AnsiTextWrapper
        text, width, max_lines, placeholder = args
        saved = cls._wrap_chunks
        cls._wrap_chunks = fn
        try:
            return cls(width=width, max_lines=max_lines, placeholder=placeholder).wrap(text)
        finally:
            cls._wrap_chunks = saved
    return run


TARGETS = [
    ("flutils.packages", "bump_version", bump_version_grid, call_plain),
    ("docstring_parser.epydoc", "parse", epydoc_grid, call_plain),
    ("docstring_parser.rest", "parse", rest_grid, call_plain),
    ("docstring_parser.google", "GoogleParser.parse", google_grid, call_google),
    ("flutils.txtutils", "AnsiTextWrapper._wrap_chunks", wrap_grid, call_wrap),
    ("docstring_parser.numpydoc", "compose", numpydoc_grid, call_plain),
]


# -- tracing -------------------------------------------------------------------

ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def shown(value):
    try:
        text = repr(value)
    except Exception as e:  # a repr that fails is a value too
        text = f"<repr failed: {type(e).__name__}>"
    return ADDRESS.sub(" at 0x?", text)


def names_by_line(source, first_line):
    """The names each statement line uses, by file line: a compound
    statement's header only."""
    tree = ast.parse(textwrap.dedent(source))
    offset = first_line - 1
    used = {}

    def header_parts(node):
        for field in ("test", "iter", "items", "subject", "context_expr", "type", "pattern", "guard"):
            part = getattr(node, field, None)
            if part is None:
                continue
            yield from part if isinstance(part, list) else [part]

    for node in ast.walk(tree):
        if not isinstance(node, (ast.stmt, ast.excepthandler, ast.match_case)) or not hasattr(node, "lineno"):
            continue
        compound = hasattr(node, "body") and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        parts = list(header_parts(node)) if compound else [node]
        names = {n.id for p in parts for n in ast.walk(p) if isinstance(n, ast.Name)}
        used.setdefault(node.lineno + offset, set()).update(names)
    return used


def trace(code, line_of, lines, names, run):
    """Run `run()` tracing frames of `code`; the visits of `lines` (file
    lines, through `line_of`) with the values of the names each uses."""
    seen = []

    def local(frame, event, arg):
        if event == "line":
            line = line_of.get(frame.f_lineno)
            if line in lines:
                values = {n: shown(frame.f_locals[n]) for n in sorted(names.get(line, ())) if n in frame.f_locals}
                seen.append((line, values))
        return local

    def tracer(frame, event, arg):
        return local if frame.f_code is code else None

    sys.settrace(tracer)
    try:
        run()
        end = "returned"
    except Exception as e:
        end = type(e).__name__
    finally:
        sys.settrace(None)
    return seen, end


def eliminate(path, qualname, lines):
    out = subprocess.run([CRITIC, "eliminate", path, "--function", qualname,
                          "--uncovered", ",".join(map(str, sorted(lines)))],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip()
    return json.loads(out.stdout), None


def compiled_slice(result, module, qualname):
    """The slice's function object and code, compiled with the module's
    globals (a method inside a class of its own name)."""
    tree = ast.parse(result["slice"])
    parts = qualname.split(".")
    if len(parts) > 1:
        tree.body = [ast.ClassDef(name=parts[-2], bases=[], keywords=[], body=tree.body, decorator_list=[],
                                  type_params=[])]
        ast.fix_missing_locations(tree)
    namespace = dict(vars(module))
    exec(compile(tree, f"<slice of {qualname}>", "exec"), namespace)
    fn = namespace[parts[-2]].__dict__[parts[-1]] if len(parts) > 1 else namespace[parts[-1]]
    return fn, inspect.unwrap(getattr(fn, "__func__", fn)).__code__


def check(module_name, qualname, grid, caller, rng):
    module = importlib.import_module(module_name)
    parts = qualname.split(".")
    owner = getattr(module, parts[0]) if len(parts) > 1 else module
    original = owner.__dict__[parts[-1]] if len(parts) > 1 else getattr(module, parts[-1])
    code = inspect.unwrap(getattr(original, "__func__", original)).__code__
    path = inspect.getsourcefile(code)
    source, first = inspect.getsourcelines(code)
    names = names_by_line("".join(source), first)
    run = caller(module, qualname)
    inputs = list(grid())
    identity = {line: line for line in range(first, first + len(source))}

    # The statement lines the grid reaches: each alone, then random sets.
    reached = set()
    for args, kwargs in inputs:
        visits, _ = trace(code, identity, set(identity), names, lambda: run(original, args, kwargs))
        reached.update(line for line, _ in visits)
    statements = sorted(line for line in reached if eliminate(path, qualname, [line])[0] is not None)
    sets = [[line] for line in statements]
    sets += [rng.sample(statements, min(len(statements), rng.randint(2, 4))) for _ in range(12)]

    report = {"function": f"{module_name}.{qualname}", "file_lines": len(source), "inputs": len(inputs),
              "uncovered_sets": len(sets), "checked_runs": 0, "sizes": []}
    for lines in sets:
        result, error = eliminate(path, qualname, lines)
        if error:
            return report, f"{qualname} {lines}: critic eliminate failed: {error}"
        report["sizes"].append((result["original_statements"], result["slice_statements"], len(result["slice"].splitlines())))
        try:
            fn, slice_code = compiled_slice(result, module, qualname)
        except SyntaxError as e:
            return report, f"{qualname} {lines}: the slice does not compile: {e}\n{result['slice']}"
        line_of = {s: f for s, f in result["line_map"]}
        wanted = set(lines)
        for args, kwargs in inputs:
            want, want_end = trace(code, identity, wanted, names, lambda: run(original, args, kwargs))
            if not want:
                continue
            got, got_end = trace(slice_code, line_of, wanted, names, lambda: run(fn, args, kwargs))
            report["checked_runs"] += 1
            if (got, got_end) != (want, want_end):
                return report, (f"{qualname} uncovered {sorted(lines)}, input {args!r}:\n"
                                f"original: {want} then {want_end}\nslice:    {got} then {got_end}\n"
                                f"{result['slice']}")
    return report, None


def sweep(rng, budget=1500):
    """Every function and method of both packages, a random statement line of
    each at a time: the slice must come out and compile."""
    import pathlib
    calls, failures = 0, []
    for package in ("flutils", "docstring_parser"):
        root = pathlib.Path(importlib.import_module(package).__file__).parent
        for path in sorted(root.rglob("*.py")):
            tree = ast.parse(path.read_text())
            scopes = [("", tree.body)] + [(c.name + ".", c.body) for c in tree.body if isinstance(c, ast.ClassDef)]
            for prefix, body in scopes:
                for fn in body:
                    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        continue
                    lines = sorted({n.lineno for n in ast.walk(fn) if isinstance(n, ast.stmt) and n is not fn
                                    and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))})
                    for line in rng.sample(lines, min(3, len(lines))):
                        calls += 1
                        result, error = eliminate(str(path), prefix + fn.name, [line])
                        if error:
                            failures.append(f"{path.name} {prefix}{fn.name} [{line}]: {error}")
                            continue
                        try:
                            compile(result["slice"], "<slice>", "exec")
                        except SyntaxError as e:
                            failures.append(f"{path.name} {prefix}{fn.name} [{line}]: {e}\n{result['slice']}")
                    if calls >= budget:
                        return calls, failures
    return calls, failures


def main():
    rng = random.Random(31)
    reports, failures = [], []
    for module_name, qualname, grid, caller in TARGETS:
        report, failure = check(module_name, qualname, grid, caller, rng)
        sizes = report.pop("sizes")
        if sizes:
            report["statements"] = sizes[0][0]
            kept = sorted(s for _, s, _ in sizes)
            report["slice_statements_min_median_max"] = [kept[0], kept[len(kept) // 2], kept[-1]]
        reports.append(report)
        if failure:
            failures.append(failure)
    calls, swept = sweep(rng)
    failures += swept
    print(json.dumps({"functions": reports, "swept_slices": calls, "failures": failures}, indent=2))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

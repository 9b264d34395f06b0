# The runner's pytest: pytest as the instance's test command would start it,
# plus a report of every test's outcome written to the stderr pytest started
# with, so grading never depends on how the repository configured pytest's
# terminal output. Passed to `python -c`; argv: MODE ORIGIN ARGS..., MODE
# `module` for `python -m pytest`, `script` for the `pytest` script; ORIGIN
# `environment` (pytest is the environment's, imported before the copy is
# on the path) or `copy` (the repository under test is pytest itself: the
# graded pytest is the copy's, as SWE-bench's editable install of the
# checkout makes it). The runner
# starts it without PYTHONPATH (kept in CRITIC_PYTHONPATH), so nothing of
# the copy under test runs while the interpreter starts.
# Written for Python 3.5 and later: SWE-bench's oldest environments.
import sys


def _critic_pytest():
    import os

    mode, origin, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    cwd = os.path.realpath(os.getcwd())

    def in_copy(entry):
        path = os.path.realpath(entry or ".")
        return path == cwd or path.startswith(cwd + os.sep)

    # The copy on the path as PYTHONPATH and `python -m` put it.
    path = [p for p in sys.path if not in_copy(p)]
    extra = [p for p in os.environ.pop("CRITIC_PYTHONPATH", "").split(os.pathsep) if p]
    extra.append(cwd)
    if os.path.isdir(os.path.join(cwd, "src")):
        extra.append(os.path.join(cwd, "src"))
    first = os.path.dirname(sys.executable) if mode == "script" else ""
    if origin == "copy":
        # pytest under test: its own code is the runner.
        sys.path[:] = [os.path.join(cwd, "src"), first] + extra + path
    else:
        # Nothing of the copy is on the path while this file's own modules
        # and pytest are imported: a module there cannot stand in for them.
        sys.path[:] = path
    import json
    import pytest

    # pytest's installed plugins are the environment's: while pytest loads
    # them (entry point group pytest11), nothing of the copy is on the path,
    # so a module of the copy by the same name (`anyio/pytest_plugin.py`)
    # cannot stand in for one. pytest still imports each itself, so it
    # rewrites their asserts. (`-p` names in the base's settings may be the
    # project's own, such as scikit-learn's: they resolve as pytest would.)
    if origin != "copy":
        from _pytest.config import PytestPluginManager

        def without_copy(real):
            def call(self, *a, **kw):
                kept = sys.path[:]
                sys.path[:] = path
                try:
                    return real(self, *a, **kw)
                finally:
                    sys.path[:] = kept

            return call

        PytestPluginManager.load_setuptools_entrypoints = without_copy(
            PytestPluginManager.load_setuptools_entrypoints
        )

    # A collected test module's `pytest_plugins` counts in the test files
    # the run was given (CRITIC_TEST_FILES), not in another module of the
    # copy; a plugin's own (a conftest's, a module a plugin names) counts:
    # pytest registers a plugin before it reads its `pytest_plugins`.
    given = os.environ.pop("CRITIC_TEST_FILES", None)
    if given is not None:
        allowed = set(os.path.realpath(os.path.join(cwd, f)) for f in given.split("\n") if f)
        from _pytest.config import PytestPluginManager

        real_consider = PytestPluginManager.consider_module

        def consider_module(self, mod):
            where = os.path.realpath(getattr(mod, "__file__", None) or "")
            if (
                in_copy(where)
                and not self.is_registered(mod)
                and where not in allowed
            ):
                return None
            return real_consider(self, mod)

        PytestPluginManager.consider_module = consider_module

    sys.path[:] = [first] + extra + path
    os.environ["PYTHONPATH"] = os.pathsep.join(extra)
    if mode == "script":
        sys.argv = [os.path.join(first, "pytest")] + args
    else:
        sys.argv = [os.path.join(os.path.dirname(pytest.__file__), "__main__.py")] + args

    # pytest's plugins come from the environment: a distribution in the copy
    # (a *.dist-info with a pytest11 entry point) is not one of them.
    swapped = []
    for name in ("importlib.metadata", "importlib_metadata"):
        try:
            metadata = __import__(name, fromlist=["distributions"])
        except ImportError:
            continue

        def outside(*a, _real=metadata.distributions, **kw):
            for dist in _real(*a, **kw):
                where = getattr(dist, "_path", None)
                if where is None or not in_copy(str(where)):
                    yield dist

        swapped.append((metadata, metadata.distributions))
        metadata.distributions = outside

    out = os.dup(2)
    kept = os.fstat(out)
    seen = []

    class Report(object):
        def pytest_configure(self, config):
            # Plugins are loaded: the tests see importlib.metadata as it is.
            for metadata, real in swapped:
                metadata.distributions = real

        def pytest_runtest_logreport(self, report):
            subtest = "subtest" in type(report).__name__.lower()
            if report.when != "call" and report.passed and not subtest:
                return
            entry = {"id": report.nodeid, "when": report.when, "outcome": report.outcome}
            if hasattr(report, "wasxfail"):
                entry["xfail"] = True
            if subtest:
                entry["subtest"] = True
            seen.append(entry)

        def pytest_collectreport(self, report):
            if report.failed:
                seen.append({"id": report.nodeid, "when": "collect", "outcome": "failed"})

    code = int(pytest.main(args, plugins=[Report()]))
    line = json.dumps({"pytest": pytest.__version__, "exit": code, "reports": seen})
    data = ("\n@@critic-pytest-report v1 " + line + "\n").encode("utf-8", "replace")
    # A test that closed descriptors may have left another file at `out`'s.
    try:
        now = os.fstat(out)
        same = (now.st_dev, now.st_ino) == (kept.st_dev, kept.st_ino)
    except OSError:
        same = False
    fd = out if same else 2
    while data:
        data = data[os.write(fd, data):]
    sys.stdout.flush()
    sys.exit(code)


_critic_pytest()

# The runner's pytest: pytest as the instance's test command would start it,
# plus a report of every test's outcome written to the stderr pytest started
# with, so grading never depends on how the repository configured pytest's
# terminal output. Passed to `python -c`; argv: MODE ARGS..., MODE `module`
# for `python -m pytest`, `script` for the `pytest` script.
# Written for Python 3.5 and later: SWE-bench's oldest environments.
import sys


def _critic_pytest():
    import os

    mode, args = sys.argv[1], sys.argv[2:]
    cwd = os.path.realpath(os.getcwd())

    def in_copy(entry):
        path = os.path.realpath(entry or ".")
        return path == cwd or path.startswith(cwd + os.sep)

    # Nothing of the copy under test is on the path while this file's own
    # modules and pytest are imported: a module there cannot stand in for
    # them.
    path = list(sys.path)
    sys.path[:] = [p for p in path if not in_copy(p)]
    import json
    import pytest

    sys.path[:] = path
    if mode == "script" and sys.path and sys.path[0] == "":
        # The `pytest` script's first entry is its own directory.
        sys.path[0] = os.path.dirname(sys.executable)
    out = os.dup(2)
    seen = []

    class Report(object):
        def pytest_runtest_logreport(self, report):
            entry = {"id": report.nodeid, "when": report.when, "outcome": report.outcome}
            if hasattr(report, "wasxfail"):
                entry["xfail"] = True
            if "subtest" in type(report).__name__.lower():
                entry["subtest"] = True
            seen.append(entry)

        def pytest_collectreport(self, report):
            if report.failed:
                seen.append({"id": report.nodeid, "when": "collect", "outcome": "failed"})

    code = pytest.main(args, plugins=[Report()])
    code = int(code)
    line = json.dumps({"pytest": pytest.__version__, "exit": code, "reports": seen})
    data = ("\n@@critic-pytest-report v1 " + line + "\n").encode("utf-8", "replace")
    while data:
        data = data[os.write(out, data):]
    sys.stdout.flush()
    sys.exit(code)


_critic_pytest()

"""Record the CoHarden demo: a real OpenHands agent under the coharden skill.

Same setup as record_demo.py (real SDK, real tools, scripted model, critic in
the loop), with the Round 0 task prompt shipped in skills/coharden/templates
rendered as the agent's first message. The scripted agent writes a lax
reproduction first (Round 0), then fixes the code without touching the test
(Round 1: mutants survive), then hardens the test (Round 2: accepted).

Usage (from the repository root, after `cargo build --release`):

    PATH=/tmp/oh/bin:$PATH /tmp/oh/bin/python examples/openhands/record_coharden.py

It rewrites examples/coharden-run/ (events and patches per finish, run.json).
"""

import shutil

import jinja2

from recording import ROOT, call, new_workspace, record

SKILL = ROOT / "skills" / "coharden"
RUN_DIR = ROOT / "examples" / "coharden-run"
ISSUE = (
    "Touching intervals such as (1, 3) and (3, 5) are not merged by "
    "intervals.merge(), although they share the point 3."
)

LAX = """import sys

from intervals import merge

# Observed in the report: (1, 3) and (3, 5) share the point 3 but stay apart.
got = merge([(1, 3), (3, 5)])
print("merge([(1, 3), (3, 5)]) =", got)
bug_present = got != [(1, 5)]
sys.exit(1 if bug_present else 0)
"""

STRONG = """import sys

from intervals import merge

# Closed intervals that share at least one point must come out as one.
cases = [
    ([(1, 3), (3, 5)], [(1, 5)]),              # the report: touching
    ([(7, 9), (9, 12)], [(7, 12)]),            # touching, other values
    ([(3, 5), (1, 3)], [(1, 5)]),              # touching, unsorted input
    ([(1, 4), (2, 6)], [(1, 6)]),              # overlapping
    ([(1, 2), (4, 5)], [(1, 2), (4, 5)]),      # disjoint stay apart
    ([(0, 10), (2, 3)], [(0, 10)]),            # nested
    ([(1, 2), (4, 5), (5, 7)], [(1, 2), (4, 7)]),  # the last merge is not the first
]
wrong = [(given, merge(given), want) for given, want in cases if merge(given) != want]
for given, got, want in wrong:
    print(f"merge({given}) = {got}, expected {want}")
bug_present = bool(wrong)
sys.exit(1 if bug_present else 0)
"""


def task(ws):
    """The skill's Round 0 task prompt, as a user would render it."""
    template = (SKILL / "templates" / "task.md.j2").read_text()
    return jinja2.Template(template).render(
        workspace=str(ws), issue=ISSUE, test_file="reproduction.py",
        test_command="python3 reproduction.py", bug_exit="a non-zero code",
    )


def script(ws):
    merge = f"{ws}/intervals/merge.py"
    repro = f"{ws}/reproduction.py"
    run_repro = f"cd {ws} && python3 reproduction.py; echo exit=$?"
    return [
        # Round 0: read the code, write the reproduction only, see it fail.
        call(1, "file_editor", command="view", path=merge),
        call(2, "file_editor", command="create", path=repro, file_text=LAX),
        call(3, "terminal", command=run_repro),
        call(4, "finish", message="reproduction.py exits 1 on the buggy code."),
        # Round 1: fix the comparison; the test stays as it was.
        call(5, "file_editor", command="str_replace", path=merge,
             old_str="if merged and start < merged[-1][1]:",
             new_str="if merged and start <= merged[-1][1]:"),
        call(6, "terminal", command=run_repro),
        call(7, "finish", message="Fixed the comparison; reproduction.py passes now."),
        # Round 2: harden the test against the surviving mutants.
        call(8, "file_editor", command="str_replace", path=repro, old_str=LAX, new_str=STRONG),
        call(9, "terminal", command=run_repro),
        call(10, "finish", message="The test now covers touching, overlapping, nested and chained intervals."),
    ]


def main():
    ws = new_workspace()
    titles = [
        "Round 0: the agent wrote a reproduction that checks the reported input",
        "Round 1: the agent fixed the comparison and kept its test",
        "Round 2: the agent hardened the test against the surviving mutants",
    ]
    _, persist = record(ws, script(ws), task(ws), SKILL, RUN_DIR, titles, "../../skills/coharden")
    shutil.rmtree(ws)
    shutil.rmtree(persist)


if __name__ == "__main__":
    main()

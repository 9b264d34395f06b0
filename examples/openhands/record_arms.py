"""Record one short session per arm of the paper's experiment for
`critic demo arms`: the real OpenHands agent (real tools, scripted model)
under each baseline skill, with the critic in the loop after every finish
(see recording.py). CoHarden's session is examples/coharden-run
(record_coharden.py).

Usage (from the repository root, after `cargo build --release`, with pytest
importable by `python3`, which the skills' test runs use):

    PATH=/tmp/oh/bin:$PATH /tmp/oh/bin/python examples/openhands/record_arms.py

It rewrites examples/arms-run/<arm>/ (events and patches per finish, run.json)
and examples/arms-run/arms.json.
"""

import json
import shutil

import jinja2

from recording import ROOT, call, git, new_workspace, record

ARMS = ROOT / "examples" / "arms-run"
ISSUE = (
    "Touching intervals such as (1, 3) and (3, 5) are not merged by "
    "intervals.merge(), although they share the point 3."
)
BUGGY = "if merged and start < merged[-1][1]:"
FIXED = "if merged and start <= merged[-1][1]:"

# A test in the project's framework that passes on the buggy code: it pins the
# bug instead of detecting it.
PINS_THE_BUG = """from intervals import merge


def test_touching_intervals():
    assert merge([(1, 3), (3, 5)]) == [(1, 3), (3, 5)]
"""

DETECTS_THE_BUG = """from intervals import merge


def test_touching_intervals_are_merged():
    assert merge([(1, 3), (3, 5)]) == [(1, 5)]
    assert merge([(7, 9), (9, 12)]) == [(7, 12)]
"""


def task(skill, ws, **extra):
    template = (ROOT / "skills" / skill / "templates" / "task.md.j2").read_text()
    return jinja2.Template(template, undefined=jinja2.StrictUndefined).render(
        workspace=str(ws), issue=ISSUE, base_commit=git(ws, "rev-parse", "HEAD").strip(), **extra
    )


def fix(n, ws):
    return call(n, "file_editor", command="str_replace", path=f"{ws}/intervals/merge.py",
                old_str=BUGGY, new_str=FIXED)


def write(n, ws, rel, text):
    return call(n, "file_editor", command="create", path=f"{ws}/{rel}", file_text=text)


def pytest(n, ws):
    return call(n, "terminal", command=f"cd {ws} && python3 -m pytest -q tests; echo exit=$?")


def fix_only(ws):
    script = [
        call(1, "file_editor", command="view", path=f"{ws}/intervals/merge.py"),
        call(2, "finish", message="merge() looks right to me; nothing to change."),
        fix(3, ws),
        pytest(4, ws),
        call(5, "finish", message="Touching intervals are merged now."),
    ]
    titles = ["The agent finished without changing anything",
              "The agent fixed the comparison"]
    return script, task("fix-only", ws), titles


def brt_only(ws):
    rel = "tests/test_touching.py"
    script = [
        write(1, ws, rel, PINS_THE_BUG),
        pytest(2, ws),
        call(3, "finish", message="Added a test for touching intervals."),
        call(4, "file_editor", command="str_replace", path=f"{ws}/{rel}",
             old_str=PINS_THE_BUG, new_str=DETECTS_THE_BUG),
        pytest(5, ws),
        call(6, "finish", message="The test now fails on the buggy code."),
    ]
    titles = ["The agent wrote a test that passes on the buggy code",
              "The agent wrote a test that detects the bug"]
    return script, task("brt-only", ws), titles


def tdd(ws):
    rel = "tests/test_touching.py"
    script = [
        write(1, ws, rel, DETECTS_THE_BUG),
        pytest(2, ws),
        fix(3, ws),
        pytest(4, ws),
        call(5, "finish", message="Applied the reproduction test and fixed merge()."),
    ]
    brt = {"files": {rel: DETECTS_THE_BUG}, "command": f"python3 -m pytest -q {rel}"}
    return script, task("tdd", ws, brt=brt), ["The agent applied the injected test and fixed the bug"]


def cogen(ws):
    rel = "tests/test_touching.py"
    script = [
        fix(1, ws),
        call(2, "finish", message="Fixed the comparison."),
        write(3, ws, rel, DETECTS_THE_BUG),
        pytest(4, ws),
        call(5, "finish", message="Fixed, with a test that fails without the fix."),
    ]
    titles = ["The agent fixed the bug but wrote no test",
              "The agent added a test that fails without the fix"]
    return script, task("cogen", ws), titles


def ralph(ws):
    rel = "tests/test_touching.py"
    script = [fix(1, ws), write(2, ws, rel, DETECTS_THE_BUG), pytest(3, ws),
              call(4, "finish", message="Fixed, with a test.")]
    for i in range(5):
        n = 5 + 2 * i
        script += [pytest(n, ws), call(n + 1, "finish", message="Reviewed again; nothing to improve.")]
    titles = ["The agent fixed the bug and wrote a test"] + [
        f"The agent reviewed its work again ({i + 1})" for i in range(5)
    ]
    return script, task("ralph", ws), titles


SESSIONS = [
    ("fix-only", fix_only, "../../../skills/fix-only"),
    ("brt-only", brt_only, "../../../skills/brt-only"),
    ("tdd", tdd, "skill"),
    ("cogen", cogen, "../../../skills/cogen"),
    ("ralph", ralph, "../../../skills/ralph"),
]


def main():
    arms = []
    for arm, make, skill_rel in SESSIONS:
        run_dir = ARMS / arm
        ws = new_workspace()
        script, prompt, titles = make(ws)
        skill = (run_dir / skill_rel).resolve()
        print(f"== {arm}")
        _, persist = record(ws, script, prompt, skill, run_dir, titles, skill_rel)
        shutil.rmtree(ws)
        shutil.rmtree(persist)
        arms.append({"arm": arm, "run": arm})
    arms.append({"arm": "coharden", "run": "../coharden-run"})
    (ARMS / "arms.json").write_text(json.dumps({"arms": arms}, indent=2) + "\n")


if __name__ == "__main__":
    main()

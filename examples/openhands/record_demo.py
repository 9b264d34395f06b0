"""Record the demo run with the real OpenHands SDK and the critic in the loop.

The agent is an OpenHands `Agent` with the real terminal and file-editor tools;
only its model is scripted (`openhands.sdk.testing.TestLLM`), so no API key is
needed and the run is reproducible. After every finish this script asks
`critic check` for a verdict and, on rejection, sends the follow-up as the next
user message, exactly as an integration would.

Usage (from the repository root, after `cargo build --release`):

    PYENV_VERSION=3.12.1 python3 -m venv /tmp/oh && /tmp/oh/bin/pip install \
        openhands-sdk==1.58.2 openhands-tools==1.58.2 pytest
    PATH=/tmp/oh/bin:$PATH /tmp/oh/bin/python examples/openhands/record_demo.py

It rewrites examples/demo-run/ (events and patches per finish, run.json) and
tests/fixtures/openhands/ (the persisted events directory and a JSON array).
"""

import json
import shutil
import sys
from pathlib import Path

from recording import ROOT, call, new_workspace, record

SKILL = ROOT / "examples" / "demo-skill"
RUN_DIR = ROOT / "examples" / "demo-run"
FIXTURES = ROOT / "tests" / "fixtures" / "openhands"
TASK = (
    "Touching intervals such as (1, 3) and (3, 5) are not merged by "
    "intervals.merge(), although they share the point 3. Fix the bug."
)


def script(ws):
    # The agent's shell may not see this virtualenv on PATH; name the interpreter.
    pytest = f"{sys.executable} -m pytest -q"
    merge = f"{ws}/intervals/merge.py"
    test = f"{ws}/tests/test_touching.py"
    return [
        # Finish 1: looks, runs the old tests, and declares victory without a change.
        call(1, "file_editor", command="view", path=merge),
        call(2, "terminal", command=pytest),
        call(3, "finish", message="The existing tests pass; the code looks correct to me."),
        # Finish 2: fixes the comparison and adds a test, but never runs it.
        call(4, "file_editor", command="str_replace", path=merge,
             old_str="if merged and start < merged[-1][1]:",
             new_str="if merged and start <= merged[-1][1]:"),
        call(5, "file_editor", command="create", path=test, file_text=(
            "from intervals import merge\n\n\n"
            "def test_touching_intervals_are_merged():\n"
            "    assert merge([(1, 3), (3, 5)]) == [(1, 5)]\n"
        )),
        call(6, "finish", message="Fixed: touching intervals now merge."),
        # Finish 3: runs the tests after the last edit, then finishes.
        call(7, "terminal", command=pytest),
        call(8, "finish", message="Fixed and verified: all tests pass."),
    ]


def main():
    ws = new_workspace()
    titles = [
        "the agent ran the old tests and finished without changing anything",
        "the agent fixed the comparison and added a test, but did not run it",
        "the agent ran the tests after its last edit",
    ]
    conv, persist = record(ws, script(ws), TASK, SKILL, RUN_DIR, titles, "../demo-skill")

    # Fixtures for the adapter tests: the SDK's own persisted layout and a JSON array.
    conv_dir = next(p for p in persist.iterdir() if (p / "events").is_dir())
    shutil.rmtree(FIXTURES / "events", ignore_errors=True)
    FIXTURES.mkdir(parents=True, exist_ok=True)
    shutil.copytree(conv_dir / "events", FIXTURES / "events")
    with (FIXTURES / "events.json").open("w") as f:
        json.dump([json.loads(e.model_dump_json()) for e in conv.state.events], f, indent=1)
    shutil.rmtree(ws)
    shutil.rmtree(persist)


if __name__ == "__main__":
    main()

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
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from openhands.sdk import Agent, Conversation, Tool
from openhands.sdk.llm import Message, MessageToolCall, TextContent
from openhands.sdk.testing import TestLLM
from openhands.tools.file_editor import FileEditorTool
from openhands.tools.terminal import TerminalTool

ROOT = Path(__file__).resolve().parents[2]
CRITIC = ROOT / "target" / "release" / "critic"
SKILL = ROOT / "examples" / "demo-skill"
RUN_DIR = ROOT / "examples" / "demo-run"
FIXTURES = ROOT / "tests" / "fixtures" / "openhands"
TASK = (
    "Touching intervals such as (1, 3) and (3, 5) are not merged by "
    "intervals.merge(), although they share the point 3. Fix the bug."
)


def git(repo, *args):
    return subprocess.run(
        ["git", "-c", "user.name=rec", "-c", "user.email=rec@localhost", *args],
        cwd=repo, check=True, capture_output=True, text=True,
    ).stdout


def worktree_patch(repo):
    """The working-tree diff including untracked files, as the critic sees it."""
    git(repo, "add", "-A")
    diff = git(repo, "diff", "--cached", "--binary", "HEAD")
    git(repo, "reset", "-q")
    return diff


def call(n, name, **args):
    return Message(
        role="assistant",
        content=[TextContent(text="")],
        tool_calls=[MessageToolCall(id=f"call_{n}", name=name,
                                    arguments=json.dumps(args), origin="completion")],
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
    if not CRITIC.exists():
        sys.exit(f"{CRITIC} not found: run `cargo build --release` first")
    ws = Path(tempfile.mkdtemp(prefix="critic-record-"))
    shutil.copytree(ROOT / "examples" / "demo-repo", ws, dirs_exist_ok=True)
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "base")
    persist = Path(tempfile.mkdtemp(prefix="critic-record-state-"))

    agent = Agent(llm=TestLLM.from_messages(script(ws)),
                  tools=[Tool(name=TerminalTool.name), Tool(name=FileEditorTool.name)])
    conv = Conversation(agent=agent, workspace=str(ws), persistence_dir=str(persist),
                        visualizer=None)
    conv.send_message(TASK)
    if RUN_DIR.exists():
        for f in RUN_DIR.glob("finish-*"):
            f.unlink()
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    finishes = []
    titles = [
        "the agent ran the old tests and finished without changing anything",
        "the agent fixed the comparison and added a test, but did not run it",
        "the agent ran the tests after its last edit",
    ]
    for n, title in enumerate(titles, start=1):
        conv.run()
        events = RUN_DIR / f"finish-{n}.jsonl"
        with events.open("w") as f:
            for e in conv.state.events:
                f.write(e.model_dump_json() + "\n")
        (RUN_DIR / f"finish-{n}.patch").write_text(worktree_patch(ws))
        finishes.append({"title": title, "events": events.name, "patch": f"finish-{n}.patch"})
        state = persist / "critic-state"
        res = subprocess.run(
            [str(CRITIC), "check", "--skill", str(SKILL), "--workspace", str(ws),
             "--events", str(events), "--session", "record", "--state-dir", str(state)],
            capture_output=True, text=True,
        )
        if res.returncode not in (0, 1):
            sys.exit(f"critic check failed: {res.stderr}")
        verdict = json.loads(res.stdout)
        print(f"finish {n}: {'accepted' if verdict['accepted'] else 'rejected'}: {verdict['message']}")
        if verdict["accepted"]:
            break
        conv.send_message(verdict["followup"])

    run = {"skill": "../demo-skill", "task": TASK, "session": "demo", "finishes": finishes}
    (RUN_DIR / "run.json").write_text(json.dumps(run, indent=2) + "\n")

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

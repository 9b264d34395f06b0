"""Shared by the recording scripts: a real OpenHands agent (real terminal and
file-editor tools, model scripted with `openhands.sdk.testing.TestLLM`) works
on a fresh git copy of examples/demo-repo, and after every `finish` the real
`critic check` judges the working tree; a rejection's follow-up becomes the
agent's next user message, exactly as an integration would wire it.
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
CRITIC = Path(os.environ.get("CRITIC", ROOT / "target" / "release" / "critic"))


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
    """An assistant turn that calls tool `name`."""
    return Message(
        role="assistant",
        content=[TextContent(text="")],
        tool_calls=[MessageToolCall(id=f"call_{n}", name=name,
                                    arguments=json.dumps(args), origin="completion")],
    )


def new_workspace(source=ROOT / "examples" / "demo-repo"):
    """A git repository holding `source` (the demo package) as its base commit."""
    ws = Path(tempfile.mkdtemp(prefix="critic-record-"))
    shutil.copytree(source, ws, dirs_exist_ok=True)
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "base")
    return ws


def record(ws, script, task, skill, run_dir, titles, skill_rel, repo_rel=None):
    """Run the scripted agent on `ws` with the critic in the loop; write each
    finish's events and patch plus run.json into `run_dir`. Returns the
    conversation and its persistence directory."""
    if not CRITIC.exists():
        sys.exit(f"{CRITIC} not found: run `cargo build --release` first")
    persist = Path(tempfile.mkdtemp(prefix="critic-record-state-"))
    agent = Agent(llm=TestLLM.from_messages(script),
                  tools=[Tool(name=TerminalTool.name), Tool(name=FileEditorTool.name)])
    conv = Conversation(agent=agent, workspace=str(ws), persistence_dir=str(persist),
                        visualizer=None)
    conv.send_message(task)
    if run_dir.exists():
        for f in run_dir.glob("finish-*"):
            f.unlink()
    run_dir.mkdir(parents=True, exist_ok=True)
    finishes = []
    for n, title in enumerate(titles, start=1):
        conv.run()
        events = run_dir / f"finish-{n}.jsonl"
        with events.open("w") as f:
            for e in conv.state.events:
                f.write(e.model_dump_json() + "\n")
        (run_dir / f"finish-{n}.patch").write_text(worktree_patch(ws))
        finishes.append({"title": title, "events": events.name, "patch": f"finish-{n}.patch"})
        res = subprocess.run(
            [str(CRITIC), "check", "--skill", str(skill), "--workspace", str(ws),
             "--events", str(events), "--session", "record",
             "--state-dir", str(persist / "critic-state")],
            capture_output=True, text=True,
        )
        if res.returncode not in (0, 1):
            sys.exit(f"critic check failed: {res.stderr}")
        verdict = json.loads(res.stdout)
        print(f"finish {n}: {'accepted' if verdict['accepted'] else 'rejected'}: {verdict['message']}")
        if verdict["accepted"]:
            break
        conv.send_message(verdict["followup"])
    run = {"skill": skill_rel, "task": task, "session": "demo", "finishes": finishes}
    if repo_rel:
        run["repo"] = repo_rel
    (run_dir / "run.json").write_text(json.dumps(run, indent=2) + "\n")
    return conv, persist

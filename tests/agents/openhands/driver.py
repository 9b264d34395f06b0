#!/usr/bin/env python3
"""The agent program of the OpenHands tests: one real OpenHands SDK
Conversation (openhands-sdk + openhands-tools' terminal and file_editor, the
versions of requirements.lock), run non-interactively and offline, its model
the SDK's own scripted TestLLM, fed the turn format every stand-in in
tests/agents/*/standin.py reads.

  venv/bin/python oh_driver.py --workspace DIR --persist DIR --prompt "..." \
      --script SCRIPT.json --log REQUESTS.jsonl            # in-process TestLLM
  venv/bin/python oh_driver.py ... --base-url http://127.0.0.1:PORT/v1
      # real litellm HTTP path against an OpenAI-compatible stand-in
      # (e.g. ../mini-swe-agent/standin.py); --script/--log are then unused

  --hooks auto|none|PATH   auto (default): HookConfig.load(working_dir=workspace),
                           i.e. WORKSPACE/.openhands/hooks.json, else
                           $OH_PERSISTENCE_DIR|~/.openhands/hooks.json
  --max-iter N             Conversation max_iteration_per_run (default 50)
  --critic-skill DIR       the agent's critic: pluggable_critic.openhands.PluggableCritic
                           (examples/openhands, installed in this environment) with
                           this skill, --critic-bin and --critic-state, in the SDK's
                           IterativeRefinementConfig loop

SCRIPT.json: list of turns; {"text": "..."} = plain assistant text (the SDK
treats a text-only answer as finishing the run), or {"tool_calls": [{"name":
"terminal"|"file_editor"|"finish"|"think", "input": {...}}], "text": optional}.
When exhausted, the answer is a `finish` tool call with message
"done (script exhausted)" (a plain text answer would also end the run).
Each model call is appended to --log as {"method":"CALL","path":"testllm",
"body":{"model":..., "messages":[OpenAI-style dicts], "tools":[names]}}.

Prints one JSON line on stdout at the end: {"conversation_id", "events_dir",
"execution_status", "llm_calls"}. Exit code 0 if the run finished, 1 otherwise.
Set HOME / OH_PERSISTENCE_DIR yourself for isolation (the driver sets
OPENHANDS_SUPPRESS_BANNER and LITELLM_LOCAL_MODEL_COST_MAP if unset).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LOG_LEVEL", "WARNING")

ap = argparse.ArgumentParser()
ap.add_argument("--workspace", required=True)
ap.add_argument("--persist", required=True, help="persistence_dir (events go to PERSIST/<id hex>/events)")
ap.add_argument("--prompt", required=True)
ap.add_argument("--script")
ap.add_argument("--log")
ap.add_argument("--base-url")
ap.add_argument("--model", default="openai/standin-model")
ap.add_argument("--hooks", default="auto")
ap.add_argument("--max-iter", type=int, default=50)
ap.add_argument("--terminal-type", default="subprocess", choices=["subprocess", "tmux"])
ap.add_argument("--critic-skill", help="attach pluggable_critic.openhands.PluggableCritic with this skill")
ap.add_argument("--critic-bin", help="the `critic` binary PluggableCritic runs")
ap.add_argument("--critic-state", help="PluggableCritic's state directory")
args = ap.parse_args()

from openhands.sdk import LLM, Agent, Conversation, Tool  # noqa: E402
from openhands.sdk.hooks import HookConfig  # noqa: E402
from openhands.sdk.llm import Message, MessageToolCall, TextContent  # noqa: E402
from openhands.sdk.testing import TestLLM  # noqa: E402
import openhands.tools  # noqa: E402,F401  (registers "terminal" and "file_editor")


def to_message(turn: dict, i: int) -> Message:
    text = turn.get("text") or ""
    calls = [
        MessageToolCall(id=f"call_{i}_{j}", name=c["name"],
                        arguments=json.dumps(c.get("input", {})), origin="completion")
        for j, c in enumerate(turn.get("tool_calls") or [])
    ]
    return Message(role="assistant", content=[TextContent(text=text)] if text else [],
                   tool_calls=calls or None)


def openai_view(m: Message) -> dict:
    d: dict = {"role": m.role,
               "content": "\n".join(c.text for c in m.content if isinstance(c, TextContent))}
    if m.tool_calls:
        d["tool_calls"] = [{"id": t.id, "type": "function",
                            "function": {"name": t.name, "arguments": t.arguments}}
                           for t in m.tool_calls]
    if m.tool_call_id:
        d["tool_call_id"] = m.tool_call_id
    if m.name:
        d["name"] = m.name
    return d


class ScriptLLM(TestLLM):
    """TestLLM that logs each call and answers `finish` once the script is exhausted."""

    __test__ = False

    def completion(self, messages, tools=None, **kwargs):  # type: ignore[override]
        if args.log:
            with open(args.log, "a") as f:
                f.write(json.dumps({"method": "CALL", "path": "testllm", "body": {
                    "model": self.model, "messages": [openai_view(m) for m in messages],
                    "tools": [t.name for t in (tools or [])]}}) + "\n")
        if self.remaining_responses == 0:
            self._scripted_responses.append(to_message(
                {"tool_calls": [{"name": "finish", "input": {"message": "done (script exhausted)"}}]},
                self.call_count + 1))
        return super().completion(messages, tools=tools, **kwargs)


if args.base_url:
    llm = LLM(model=args.model, base_url=args.base_url, api_key="sk-standin", usage_id="agent",
              num_retries=0)
else:
    script = json.loads(Path(args.script).read_text()) if args.script else []
    llm = ScriptLLM.from_messages([to_message(t, i + 1) for i, t in enumerate(script)])

if args.hooks == "none":
    hook_config = None
elif args.hooks == "auto":
    hook_config = HookConfig.load(working_dir=args.workspace)
    hook_config = None if hook_config.is_empty() else hook_config
else:
    hook_config = HookConfig.load(path=args.hooks)

critic = None
if args.critic_skill:
    from openhands.sdk.critic import IterativeRefinementConfig  # noqa: E402
    from pluggable_critic.openhands import PluggableCritic  # noqa: E402

    critic = PluggableCritic(
        skill=args.critic_skill, workspace=args.workspace, critic_bin=args.critic_bin,
        state_dir=args.critic_state,
        iterative_refinement=IterativeRefinementConfig(success_threshold=0.6, max_iterations=3),
    )
agent = Agent(llm=llm, tools=[Tool(name="terminal", params={"terminal_type": args.terminal_type}),
                              Tool(name="file_editor")], critic=critic)
conv = Conversation(agent=agent, workspace=args.workspace, persistence_dir=args.persist,
                    hook_config=hook_config, max_iteration_per_run=args.max_iter,
                    visualizer=None, delete_on_close=False)
conv.send_message(args.prompt)
err = None
try:
    conv.run()
except Exception as e:  # ConversationRunError wraps the cause
    err = f"{type(e).__name__}: {e}"
status = conv.state.execution_status.value
cid = conv.id
conv.close()
print(json.dumps({"conversation_id": str(cid),
                  "events_dir": str(Path(args.persist) / cid.hex / "events"),
                  "execution_status": status,
                  "llm_calls": getattr(llm, "call_count", None),
                  "error": err}))
sys.exit(0 if status == "finished" else 1)

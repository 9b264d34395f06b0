"""Run one OpenHands SDK conversation headless, as `critic experiment`'s
`openhands` adapter does: the SDK's terminal and file editor tools, its model
through litellm at an OpenAI-compatible address, and its hooks from the
workspace's `.openhands/hooks.json` or the user's `~/.openhands/hooks.json`
(where `critic hook install openhands --scope user` puts the critic's Stop
hook). A rejected finish's follow-up comes back from the hook, and the
conversation goes on until the hook lets it stop.

    python -m pluggable_critic.run --workspace DIR --prompt-file FILE \\
        --model openai/NAME --base-url URL --persist DIR [--max-iter N]

The key is read from LLM_API_KEY. Prints one JSON line at the end
(`conversation_id`, `events_dir`, `execution_status`, `error`); exits 0
when the conversation finished, 1 otherwise.
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


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m pluggable_critic.run")
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--prompt-file", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--persist", required=True)
    ap.add_argument("--max-iter", type=int, default=100)
    args = ap.parse_args()

    from openhands.sdk import LLM, Agent, Conversation, Tool
    from openhands.sdk.hooks import HookConfig
    import openhands.tools  # noqa: F401  (registers "terminal" and "file_editor")

    llm = LLM(model=args.model, base_url=args.base_url,
              api_key=os.environ.get("LLM_API_KEY", ""), usage_id="agent")
    hooks = HookConfig.load(working_dir=args.workspace)
    agent = Agent(llm=llm, tools=[Tool(name="terminal", params={"terminal_type": "subprocess"}),
                                  Tool(name="file_editor")])
    conv = Conversation(agent=agent, workspace=args.workspace, persistence_dir=args.persist,
                        hook_config=None if hooks.is_empty() else hooks,
                        max_iteration_per_run=args.max_iter, visualizer=None,
                        delete_on_close=False)
    conv.send_message(Path(args.prompt_file).read_text())
    error = None
    try:
        conv.run()
    except Exception as e:  # ConversationRunError wraps the cause
        error = f"{type(e).__name__}: {e}"
    status = conv.state.execution_status.value
    cid = conv.id
    conv.close()
    print(json.dumps({"conversation_id": str(cid),
                      "events_dir": str(Path(args.persist) / cid.hex / "events"),
                      "execution_status": status, "error": error}))
    return 0 if status == "finished" else 1


if __name__ == "__main__":
    sys.exit(main())

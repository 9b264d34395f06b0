#!/usr/bin/env python3
"""The demo experiment's agent: a scripted stand-in, not a model.

`critic experiment`'s `command` adapter runs it once per turn in the run's
workspace. It replays plan.json: for the package in the workspace, the arm
(from CRITIC_SESSION, `<arm>-<sample>-<attempt>`) and the round
(CRITIC_ROUND), it edits files as a model-driven agent would have, prints
what it did, and exits: its exit is the finish the critic judges.
"""
import json
import os
import pathlib
import sys

plan = json.loads((pathlib.Path(__file__).parent / "plan.json").read_text())
workspace = pathlib.Path(os.environ["CRITIC_WORKSPACE"])
arm = os.environ["CRITIC_SESSION"].rsplit("-", 2)[0]
round_ = os.environ["CRITIC_ROUND"]
task = pathlib.Path(sys.argv[1]).read_text()
package = next(p for p in plan if (workspace / p).is_dir())
step = plan[package].get(arm, {}).get(round_, {})
for path, content in step.get("write", {}).items():
    (workspace / path).parent.mkdir(parents=True, exist_ok=True)
    (workspace / path).write_text(content)
if "sed" in step:
    path, old, new = step["sed"]
    target = workspace / path
    target.write_text(target.read_text().replace(old, new))
print(step.get("say", f"round {round_}: done ({len(task)} characters of task read)"))

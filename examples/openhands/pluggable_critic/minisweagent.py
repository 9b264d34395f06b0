"""PluggableCritic at mini-swe-agent's finish.

mini-swe-agent has no hooks: the model ends a run by running `echo
COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`, and the environment raises `Submitted`.
`CriticAgent` catches that, saves the trajectory, and asks the host to judge
it (the trajectory is the event stream, the work tree the patch). Accepted,
the run ends as usual; rejected, the skill's follow-up becomes the next user
message and the run goes on.

    mini --agent-class pluggable_critic.minisweagent.CriticAgent \\
        -c mini.yaml -c agent.critic_skill=/path/to/skill ...

A critic that cannot run (no binary, a bad skill) lets the submission
through and says so in the exit message's `extra.critic`.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from pathlib import Path

from minisweagent.agents.default import AgentConfig, DefaultAgent
from minisweagent.exceptions import Submitted

from pluggable_critic.host import CriticHost, HostError

SUBMIT_MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


class CriticAgentConfig(AgentConfig):
    critic_skill: str = ""
    """Skill directory; empty: no critic."""
    critic_bin: str | None = None
    """The `critic` binary (default: $CRITIC_BIN, else `critic` on PATH)."""
    critic_server: str | None = None
    """A `critic serve` address (default: $CRITIC_SERVER)."""
    critic_state_dir: str | None = None
    critic_session: str | None = None
    """Session id for the critic's state (default: one per run)."""
    critic_max_rejections: int = 8
    """Accept after this many rejections, whatever the skill allows."""
    critic_verdict_log: str | None = None
    """Append each verdict, one JSON line, to this file, and the patch it
    judged to round-<iteration>/patch.diff beside it (a runner's record)."""


class CriticAgent(DefaultAgent):
    """A DefaultAgent that runs a PluggableCritic skill when the model submits."""

    def __init__(self, *args, config_class: type = CriticAgentConfig, **kwargs):
        super().__init__(*args, config_class=config_class, **kwargs)
        self.critic_verdicts: list[dict] = []
        self._session = self.config.critic_session or f"mini-swe-agent-{uuid.uuid4().hex}"
        self._trajectory: Path | None = None

    def execute_actions(self, message: dict) -> list[dict]:
        actions = message.get("extra", {}).get("actions", [])
        outputs: list[dict] = []
        try:
            for action in actions:
                outputs.append(self.env.execute(action))
        except Submitted as submitted:
            extra = submitted.messages[0].get("extra", {})
            # The submit command ran; its result belongs in the chat before
            # anything follows (every tool call needs its result).
            outputs.append({
                "output": f"{SUBMIT_MARKER}\n{extra.get('submission', '')}",
                "returncode": 0,
                "exception_info": "",
            })
            added = self.add_messages(
                *self.model.format_observation_messages(message, outputs, self.get_template_vars())
            )
            followup = self._judge()
            if followup is None:
                extra["critic"] = self.critic_verdicts
                raise
            return added + self.add_messages(followup)
        return self.add_messages(
            *self.model.format_observation_messages(message, outputs, self.get_template_vars())
        )

    def _judge(self) -> dict | None:
        """The follow-up message if the critic rejects the submission, else None."""
        if not self.config.critic_skill:
            return None
        trajectory = self._trajectory_path()
        self.save(trajectory)
        host = CriticHost(
            skill=self.config.critic_skill,
            workspace=getattr(self.env.config, "cwd", "") or os.getcwd(),
            session=self._session,
            critic_bin=self.config.critic_bin,
            server=self.config.critic_server,
            state_dir=self.config.critic_state_dir,
            max_rejections=self.config.critic_max_rejections,
            verdict_log=self.config.critic_verdict_log,
        )
        try:
            verdict = host.check(events_file=str(trajectory), events_format="mini-swe-agent")
        except (HostError, OSError, ValueError) as e:
            self.critic_verdicts.append({"error": str(e), "accepted": True})
            return None
        self.critic_verdicts.append({k: verdict.get(k) for k in ("accepted", "message", "iteration")})
        if verdict["accepted"]:
            return None
        return self.model.format_message(
            role="user",
            content=verdict.get("followup") or verdict["message"],
            extra={"interrupt_type": "CriticFollowup", "timestamp": time.time()},
        )

    def _trajectory_path(self) -> Path:
        if self.config.output_path:
            return Path(self.config.output_path)
        if self._trajectory is None:
            fd, name = tempfile.mkstemp(prefix="mini-swe-agent-", suffix=".traj.json")
            os.close(fd)
            self._trajectory = Path(name)
        return self._trajectory

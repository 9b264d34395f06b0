"""PluggableCritic as an OpenHands SDK critic.

    from openhands.sdk import Agent
    from openhands.sdk.critic import IterativeRefinementConfig
    from pluggable_critic.openhands import PluggableCritic

    critic = PluggableCritic(
        skill="skills/ran-tests", workspace=repo,
        iterative_refinement=IterativeRefinementConfig(success_threshold=0.5, max_iterations=3),
    )
    agent = Agent(llm=llm, tools=tools, critic=critic)

When the agent calls `finish`, the SDK asks `evaluate`; the conversation's
events go to the host, which diffs the workspace itself (the SDK passes no
patch), runs the skill and answers with a verdict. A rejected finish scores
below the SDK's `success_threshold`, so the SDK's own refinement loop sends
`get_followup_prompt` (the skill's follow-up) as the next user message.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from openhands.sdk.critic import CriticBase, CriticResult
from pydantic import Field, PrivateAttr

from pluggable_critic.host import CriticHost


class PluggableCritic(CriticBase):
    """A CriticBase whose verdicts come from a PluggableCritic skill."""

    skill: str = Field(description="Skill directory (holds critic.yaml).")
    workspace: str = Field(default=".", description="The agent's git work tree.")
    session: str | None = Field(
        default=None, description="Session id for the critic's state (default: one per critic)."
    )
    critic_bin: str | None = Field(default=None, description="The `critic` binary.")
    server: str | None = Field(default=None, description="A `critic serve` address.")
    state_dir: str | None = None
    max_rejections: int | None = None

    _session: str = PrivateAttr(default_factory=lambda: f"openhands-{uuid.uuid4().hex}")

    def host(self) -> CriticHost:
        """How this critic reaches the host."""
        return CriticHost(
            skill=self.skill,
            workspace=self.workspace,
            session=self.session or self._session,
            critic_bin=self.critic_bin,
            server=self.server,
            state_dir=self.state_dir,
            max_rejections=self.max_rejections,
        )

    def evaluate(self, events: Sequence[Any], git_patch: str | None = None) -> CriticResult:
        verdict = self.host().check([as_event(e) for e in events])
        return CriticResult(
            score=self._score(verdict),
            message=verdict["message"],
            metadata={
                "accepted": verdict["accepted"],
                "skill_score": verdict["score"],
                "followup": verdict.get("followup"),
                "iteration": verdict["iteration"],
                "signals": [
                    {"name": s["name"], "triggered": s["triggered"]} for s in verdict["signals"]
                ],
            },
        )

    def get_followup_prompt(self, critic_result: CriticResult, iteration: int) -> str:
        followup = (critic_result.metadata or {}).get("followup")
        return followup or super().get_followup_prompt(critic_result, iteration)

    def _score(self, verdict: dict[str, Any]) -> float:
        """The skill's score, moved across the SDK's success threshold if
        needed, so the SDK refines exactly the finishes the skill rejects."""
        score = float(verdict["score"])
        refinement = self.iterative_refinement
        if refinement is None:
            return score
        line = refinement.success_threshold
        if verdict["accepted"]:
            return max(score, line)
        return min(score, max(0.0, line - 0.01))


def as_event(event: Any) -> dict[str, Any]:
    """An SDK event as the host reads OpenHands events: its JSON with the
    class name in `kind`."""
    data = event.model_dump(mode="json")
    data["kind"] = type(event).__name__
    return data

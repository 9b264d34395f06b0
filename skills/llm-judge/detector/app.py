"""A model as a soft signal: it reads the issue and the patch, says whether
the patch addresses the issue, and scores it from 0 to 1. The signal fires
when the mean score of its samples is below `min_score`.

The issue is the `<issue_description>` block of the first user message (the
shipped task templates write one), else that whole message. The patch is cut
at `max_patch_chars`. An answer that is not the JSON asked for is not
counted; when no answer counts, the detector cannot decide and says why.
"""

import json
import re

from critic_sdk import (ChatMessage, Finish, LlmRequest, Verdict, first_user_message,
                        issue_description, llm_complete)

DEFAULTS = {
    # Independent answers to average (temperature 1 when more than one).
    "samples": 1,
    # The signal fires below this mean score.
    "min_score": 0.5,
    # The patch is cut here, so a huge patch cannot blow the model's context.
    "max_patch_chars": 20000,
}

SYSTEM = (
    "You review a patch written by a coding agent for a software issue. Decide whether "
    "the patch addresses the issue: it changes the behaviour the issue describes, and "
    "does not only add tests, comments or unrelated changes. Answer with one JSON object "
    'and nothing else: {"score": <a number from 0 to 1, 1 meaning it surely addresses '
    'the issue>, "reason": "<one or two sentences>"}.'
)


def _config(finish: Finish) -> dict:
    config = finish.config_as(DEFAULTS)
    samples, min_score, limit = config["samples"], config["min_score"], config["max_patch_chars"]
    if not isinstance(samples, int) or isinstance(samples, bool) or not 1 <= samples <= 16:
        raise ValueError("config.samples must be a whole number from 1 to 16")
    if not isinstance(min_score, (int, float)) or isinstance(min_score, bool) or not 0 <= min_score <= 1:
        raise ValueError("config.min_score must be a number from 0 to 1")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 100:
        raise ValueError("config.max_patch_chars must be a whole number of at least 100")
    return config


def parse_answer(content: str | None) -> tuple[float, str] | None:
    """(score, reason) from a model's answer, or None when it is not the
    JSON object asked for (a fenced block around it is fine)."""
    if not content:
        return None
    match = re.search(r"\{.*\}", content, re.DOTALL)
    if not match:
        return None
    try:
        value = json.loads(match.group(0))
    except ValueError:
        return None
    score = value.get("score") if isinstance(value, dict) else None
    if not isinstance(score, (int, float)) or isinstance(score, bool) or not 0 <= score <= 1:
        return None
    reason = value.get("reason")
    return float(score), reason if isinstance(reason, str) else ""


def detect(finish: Finish) -> Verdict:
    config = _config(finish)
    if finish.patch.is_empty():
        return Verdict.fire(
            "Your patch is empty: nothing addresses the issue yet. Make the change, then finish again.",
            metadata={"score": 0.0, "summary": "empty patch"},
        )
    prompt = first_user_message(finish.events) or ""
    issue = issue_description(prompt) or prompt.strip()
    if not issue:
        raise ValueError("no issue to judge against: the stream has no user message")
    patch = finish.patch.raw
    cut = len(patch) > config["max_patch_chars"]
    if cut:
        patch = patch[: config["max_patch_chars"]] + "\n[... patch cut here ...]\n"
    user = f"<issue>\n{issue}\n</issue>\n\n<patch>\n{patch}</patch>"
    samples = config["samples"]
    answers = llm_complete([
        LlmRequest(
            messages=[ChatMessage("system", SYSTEM), ChatMessage("user", user)],
            temperature=0.0 if samples == 1 else 1.0,
            max_tokens=300,
            sample=i,
        )
        for i in range(samples)
    ])
    judged = [parse_answer(a.content) for a in answers]
    counted = [j for j in judged if j is not None]
    if not counted:
        why = next((a.error for a in answers if a.error), None) or "no answer was the JSON asked for"
        raise RuntimeError(f"the model gave no usable judgement: {why}")
    score = sum(s for s, _ in counted) / len(counted)
    reasons = [r for _, r in counted if r]
    metadata = {
        "score": round(score, 4),
        "scores": [s for s, _ in counted],
        "reasons": reasons,
        "unusable_answers": len(judged) - len(counted),
        "cached": [a.cached for a in answers],
        "patch_cut": cut,
        "summary": f"model score {score:.2f} (fires below {config['min_score']})",
    }
    if score < config["min_score"]:
        because = f" The reviewer said: {reasons[0]}" if reasons else ""
        return Verdict.fire(
            f"A reviewer model judged that your patch may not address the issue "
            f"(score {score:.2f} of 1).{because} Re-read the issue, make sure the change fixes "
            "the behaviour it describes, then finish again.",
            metadata=metadata,
        )
    return Verdict.accept(metadata=metadata)

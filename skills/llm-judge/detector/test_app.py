"""The llm-judge detector, natively, with a stand-in model."""

import json

import pytest
from critic_sdk import DetectorFailed, LlmResult
from critic_sdk.testing import TestInput

from app import detect, parse_answer

DIFF = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
PROMPT = "Fix it.\n<issue_description>\nx must be 2\n</issue_description>\n"


def judged(*answers):
    """A model that gives `answers` in turn, and the requests it saw."""
    seen = []

    def model(request):
        seen.append(request)
        return LlmResult(content=answers[len(seen) - 1])

    return model, seen


def test_a_low_score_fires_with_the_reason_and_the_issue_reaches_the_model():
    model, seen = judged('{"score": 0.2, "reason": "It only renames x."}')
    out = TestInput().diff(DIFF).message("user", PROMPT).on_llm(model).run(detect)
    assert out.triggered
    assert "score 0.20 of 1" in out.followup_text and "It only renames x." in out.followup_text
    user = seen[0].messages[1].content
    assert "<issue>\nx must be 2\n</issue>" in user and "+x = 2" in user
    assert seen[0].temperature == 0.0


def test_samples_are_averaged_and_garbage_is_not_counted():
    model, seen = judged('```json\n{"score": 1, "reason": "ok"}\n```', "I think so!",
                         json.dumps({"score": 0.6}))
    config = {"samples": 3, "min_score": 0.7}
    out = TestInput().config(config).diff(DIFF).message("user", PROMPT).on_llm(model).run(detect)
    assert not out.triggered
    assert out.metadata["scores"] == [1.0, 0.6] and out.metadata["unusable_answers"] == 1
    assert [r.sample for r in seen] == [0, 1, 2] and seen[0].temperature == 1.0


def test_no_usable_answer_is_the_detectors_error():
    model, _ = judged("no idea")
    with pytest.raises(DetectorFailed, match="no usable judgement"):
        TestInput().diff(DIFF).message("user", PROMPT).on_llm(model).run(detect)


def test_an_empty_patch_fires_without_asking():
    out = TestInput().message("user", PROMPT).run(detect)
    assert out.triggered and "empty" in out.followup_text


def test_a_huge_patch_is_cut():
    big = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1 +1,3000 @@\n-x\n" + "+y\n" * 3000
    model, seen = judged('{"score": 0.9, "reason": "fine"}')
    out = (TestInput().config({"max_patch_chars": 1000}).diff(big).message("user", PROMPT)
           .on_llm(model).run(detect))
    assert out.metadata["patch_cut"] and len(seen[0].messages[1].content) < 1200


def test_answers_are_read_strictly():
    assert parse_answer('{"score": 0.5, "reason": "r"}') == (0.5, "r")
    assert parse_answer('{"score": 2}') is None
    assert parse_answer('{"score": true}') is None
    assert parse_answer(None) is None
    with pytest.raises(DetectorFailed, match="config.samples"):
        TestInput().config({"samples": 0}).diff(DIFF).run(detect)

"""The ran-tests gate, natively: plain pytest, no WebAssembly."""

import pytest
from critic_sdk import DetectorFailed
from critic_sdk.testing import TestInput

from app import detect

DIFF = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def test_a_run_after_the_last_edit_passes():
    out = TestInput().diff(DIFF).edit("m.py").command("pytest -q", 0, "1 passed").run(detect)
    assert not out.triggered
    assert out.metadata == {
        "last_edit_event": 0,
        "test_runs_after_edit": [{"event": 1, "command": "pytest -q", "exit_code": 0}],
    }


def test_a_run_before_the_last_edit_does_not_count():
    out = TestInput().command("pytest", 0, "ok").edit("m.py").run(detect)
    assert out.triggered
    assert "after your last file edit (event 2)" in out.followup_text


def test_no_run_at_all_is_said_so():
    out = TestInput().finish("done").run(detect)
    assert out.triggered
    assert out.followup_text.startswith("You did not run the tests at all.")


def test_require_pass_wants_exit_zero():
    config = {"require_pass": True, "test_commands": ["pytest", "tox"]}
    out = TestInput().config(config).command("tox -e py", 1, "1 failed").run(detect)
    assert out.triggered
    assert "(`tox -e py`) ended with exit code 1" in out.followup_text
    assert "`pytest` or `tox`" not in out.followup_text


def test_bad_config_is_the_detectors_error():
    with pytest.raises(DetectorFailed, match="empty entry"):
        TestInput().config({"test_commands": [" "]}).run(detect)
    with pytest.raises(DetectorFailed, match="unknown field `nope`"):
        TestInput().config({"nope": 1}).run(detect)

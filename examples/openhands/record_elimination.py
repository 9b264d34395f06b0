"""Record the covered-code-elimination demo: a real OpenHands agent writes
tests for `shipping.rates.quote` (examples/elimination-repo) under the
covered-code-elimination skill (examples/elimination-skill).

Same setup as record_demo.py (real SDK, real tools, scripted model, critic in
the loop). The agent's first message is the task the skill itself gives at a
finish without tests. The scripted agent covers the local zone first (a
slice without it comes back), then the national zone and the errors (a
smaller slice: only the international branch), then the rest (accepted).

Usage (from the repository root, after `cargo build --release` and
`cargo test --test covered_code_elimination`, which makes the Python with
pytest and coverage.py in target/coverage-venv):

    PATH=$PWD/target/coverage-venv/bin:$PATH \\
        target/agents/python-venv/bin/python examples/openhands/record_elimination.py

It rewrites examples/elimination-run/ (events and patches per finish, run.json).
"""

import json
import shutil
import subprocess
import tempfile

from recording import CRITIC, ROOT, call, new_workspace, record

SKILL = ROOT / "examples" / "elimination-skill"
REPO = ROOT / "examples" / "elimination-repo"
RUN_DIR = ROOT / "examples" / "elimination-run"

LOCAL = """from shipping.rates import quote


def test_local():
    assert quote(1, "local") == 530


def test_local_express():
    assert quote(1, "local", express=True) == 1060
"""

NATIONAL = """import pytest

from shipping.rates import quote


def test_national_heavy():
    assert quote(30, "national") == 900 + 30 * 40 + 400


def test_national_half():
    assert quote(1, "national", coupon="HALF") == 470


def test_bad_weight():
    with pytest.raises(ValueError):
        quote(0, "local")


def test_unknown_zone():
    with pytest.raises(KeyError):
        quote(1, "moon")
"""

INTERNATIONAL = """import pytest

from shipping.rates import quote


@pytest.mark.parametrize("weight, price", [(1, 2890), (10, 4300), (30, 7000), (100, 10_000)])
def test_international_weights(weight, price):
    assert quote(weight, "international") == price


def test_international_express():
    assert quote(1, "international", express=True) == 2890 * 2 + 1000


def test_international_coupons():
    assert quote(1, "international", coupon="MINUS100") == 2790
    with pytest.raises(ValueError):
        quote(1, "international", coupon="FREE")
"""


def task(ws):
    """The skill's own task prompt: what it answers a finish without tests."""
    with tempfile.TemporaryDirectory() as state:
        res = subprocess.run(
            [str(CRITIC), "check", "--skill", str(SKILL), "--workspace", str(ws),
             "--events", str(ROOT / "examples" / "demo-run" / "finish-1.jsonl"),
             "--state-dir", state],
            capture_output=True, text=True,
        )
    verdict = json.loads(res.stdout)
    return verdict["followup"]


def script(ws):
    tests = f"{ws}/tests"
    python = ROOT / "target" / "coverage-venv" / "bin" / "python"
    run = f"cd {ws} && {python} -m pytest -q tests; echo exit=$?"
    return [
        call(1, "terminal", command=f"mkdir -p {tests} && cat {ws}/shipping/rates.py"),
        call(2, "file_editor", command="create", path=f"{tests}/test_local.py", file_text=LOCAL),
        call(3, "terminal", command=run),
        call(4, "finish", message="Tests for the local zone pass."),
        call(5, "file_editor", command="create", path=f"{tests}/test_national.py", file_text=NATIONAL),
        call(6, "terminal", command=run),
        call(7, "finish", message="Added the national zone and the errors."),
        call(8, "file_editor", command="create", path=f"{tests}/test_international.py",
             file_text=INTERNATIONAL),
        call(9, "terminal", command=run),
        call(10, "finish", message="Added the international zone: weights, express and coupons."),
    ]


def main():
    ws = new_workspace(REPO)
    titles = [
        "the agent tested the local zone",
        "the agent added the national zone and the errors",
        "the agent added the international zone",
    ]
    _, persist = record(ws, script(ws), task(ws), SKILL, RUN_DIR, titles,
                        "../elimination-skill", "../elimination-repo")
    shutil.rmtree(ws)
    shutil.rmtree(persist)


if __name__ == "__main__":
    main()

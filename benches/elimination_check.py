"""A covered-code-elimination finish check against the same tests under
`coverage run` by hand (issue 14's target: <= 1.2x), alternated run by run.

The work tree is the bundled shipping fixture with the first tests of the
skill's end-to-end test; the Python is the test suite's
`target/coverage-venv` (run `cargo test --test covered_code_elimination`
once to make it).

    cargo build --release && python3 benches/elimination_check.py [RUNS]
"""

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRITIC = ROOT / "target/release/critic"
PYTHON = ROOT / "target/coverage-venv/bin/python"
TESTS = """from shipping.rates import quote

def test_local():
    assert quote(1, 'local') == 530
    assert quote(1, 'local', express=True) == 1060
"""


def timed(args, cwd):
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    for need in (CRITIC, PYTHON):
        if not need.exists():
            sys.exit(f"{need} not found (see the docstring)")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        repo = tmp / "repo"
        shutil.copytree(ROOT / "examples/elimination-repo", repo)
        git = ["git", "-c", "user.email=b@e", "-c", "user.name=bench"]
        subprocess.run(git + ["init", "-q"], cwd=repo, check=True)
        subprocess.run(git + ["add", "-A"], cwd=repo, check=True)
        subprocess.run(git + ["commit", "-qm", "base"], cwd=repo, check=True)
        (repo / "tests").mkdir()
        (repo / "tests/test_first.py").write_text(TESTS)
        skill = tmp / "skill"
        skill.mkdir()
        shipped = ROOT / "skills/covered-code-elimination"
        shutil.copy(shipped / "covered_code_elimination.wasm", skill)
        (skill / "critic.yaml").write_text(
            (shipped / "critic.yaml").read_text()
            .replace("path/to/module.py::function", "shipping/rates.py::quote")
            .replace("test_command: [python3", f"test_command: [{PYTHON}"))
        check = [str(CRITIC), "check", "--skill", str(skill), "--workspace", str(repo), "--events",
                 str(ROOT / "examples/demo-run/finish-3.jsonl"), "--cache-dir", str(tmp / "cache")]
        by_hand = [str(PYTHON), "-m", "coverage", "run", f"--data-file={tmp / 'cov'}",
                   "--include=shipping/rates.py", "-m", "pytest", "-q", "tests/test_first.py"]
        timed(check + ["--state-dir", str(tmp / "warm")], repo)  # compiles the skill
        checks, hands = [], []
        for i in range(runs):
            hands.append(timed(by_hand, repo))
            checks.append(timed(check + ["--state-dir", str(tmp / f"state{i}")], repo))
        report = {
            "runs": runs,
            "coverage_run_by_hand_ms": round(statistics.median(hands), 1),
            "finish_check_ms": round(statistics.median(checks), 1),
            "ratio": round(statistics.median(checks) / statistics.median(hands), 2),
            "median_pair_ratio": round(statistics.median(c / h for c, h in zip(checks, hands)), 2),
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

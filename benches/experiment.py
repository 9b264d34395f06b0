"""`critic experiment run`: the runner's own overhead per run, and its
parallel efficiency (issue 24's targets: overhead under 1 s per run;
efficiency at --workers 2 reported).

The experiment is N instances of the demo experiment's `textutil` package (one
repository, N instance ids), the shipped FIX-only arm, and a `command` agent
that applies the fix with one `sed` and exits: one turn, one finish, one
grading run of the golden tests per run. A run's overhead is everything but
the agent and the tests: its wall time (`duration_s`) less the agent's turn
(`rounds.turn_s` in results.sqlite) and less the grading pytest run's own time
(`runs/.../grade/golden.json`). The critic's check (a `critic check` process,
fix-only runs no tests) counts as overhead.

    cargo build --release && python3 benches/experiment.py [N]
"""

import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRITIC = ROOT / "target/release/critic"
EXAMPLE = ROOT / "examples/experiment"


def python_with_pytest():
    """The test suite's pytest venv, made here if it is missing."""
    venv = ROOT / "target/arms-venv"
    if not (venv / "bin/python").exists():
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run(
            [venv / "bin/pip", "install", "-q", "--no-deps", "-r",
             ROOT / "tests/arms/requirements.lock"],
            check=True,
        )
    return venv / "bin/python"


def git(cwd, *args):
    return subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@localhost", *args],
        cwd=cwd, check=True, capture_output=True, text=True,
    ).stdout


def setup(dir, n):
    repo = dir / "repos/acme__textutil"
    shutil.copytree(EXAMPLE / "packages/textutil", repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    with open(dir / "instances.jsonl", "w") as f:
        for i in range(n):
            f.write(json.dumps({
                "instance_id": f"acme__textutil-{i}",
                "repo": "acme/textutil",
                "base_commit": base,
                "patch": (EXAMPLE / "fixes/textutil.diff").read_text(),
                "test_patch": (EXAMPLE / "fixes/textutil-tests.diff").read_text(),
                "FAIL_TO_PASS": ["tests/test_slugify.py::test_lowercases"],
                "PASS_TO_PASS": ["tests/test_slugify.py::test_joins_words",
                                 "tests/test_slugify.py::test_strips_spaces"],
                "problem_statement": "slugs must be lowercase",
            }) + "\n")
    sed = "s/join(words)/join(w.lower() for w in words)/"
    (dir / "exp.yaml").write_text(f"""name: bench
instances: instances.jsonl
repos: repos
python: {python_with_pytest()}
agent:
  command: [sed, -i, "{sed}", textutil/__init__.py]
arms:
  fix-only: {{skill: {ROOT / "skills/fix-only"}}}
""")


def timed_run(dir, out, *flags, env=None):
    """`critic experiment run` of DIR/exp.yaml into DIR/OUT with
    `--workers 2` and FLAGS; its wall time in seconds."""
    started = time.monotonic()
    subprocess.run(
        [CRITIC, "experiment", "run", dir / "exp.yaml", "--output-dir", dir / out,
         "--workers", "2", *flags],
        check=True, capture_output=True, env=env,
    )
    return time.monotonic() - started


def measure(dir, workers):
    out = dir / f"out-{workers}"
    started = time.monotonic()
    subprocess.run(
        [CRITIC, "experiment", "run", dir / "exp.yaml", "--output-dir", out,
         "--workers", str(workers)],
        check=True, capture_output=True,
    )
    wall = time.monotonic() - started
    db = sqlite3.connect(out / "results.sqlite")
    overheads = []
    for instance, arm, sample, duration, status, resolved in db.execute(
        "SELECT instance_id, arm, sample, duration_s, status, resolved FROM runs"
    ):
        assert status == "ok" and resolved == 1, (instance, status, resolved)
        agent = db.execute(
            "SELECT SUM(turn_s) FROM rounds WHERE instance_id=? AND arm=? AND sample=?",
            (instance, arm, sample),
        ).fetchone()[0]
        grade = json.loads(
            (out / "runs" / instance / arm / str(sample) / "grade/golden.json").read_text()
        )
        tests = grade["result"]["duration_ms"] / 1000
        overheads.append(duration - agent - tests)
    return wall, overheads


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    with tempfile.TemporaryDirectory(prefix="critic-bench-experiment-") as d:
        dir = Path(d)
        setup(dir, n)
        # A first, discarded call warms the compile cache and the page cache.
        measure(dir, 2)
        shutil.rmtree(dir / "out-2")
        w1, o1 = measure(dir, 1)
        w2, o2 = measure(dir, 2)
    print(f"{n} runs (fix-only, one turn each, one grading pytest run each)")
    for name, o in [("workers 1", o1), ("workers 2", o2)]:
        print(
            f"{name}: overhead per run median {statistics.median(o)*1000:.0f} ms, "
            f"mean {statistics.mean(o)*1000:.0f} ms, max {max(o)*1000:.0f} ms"
        )
    print(f"wall: workers 1 {w1:.2f} s, workers 2 {w2:.2f} s; "
          f"parallel efficiency {w1 / (2 * w2):.2f} (speed-up {w1 / w2:.2f}x)")


if __name__ == "__main__":
    main()

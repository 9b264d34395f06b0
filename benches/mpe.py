"""`critic mpe` on one instance with a pool of 280 variants, each run against
the generated test and the golden tests (issue 23's target: the whole command
within 1.25x of the ideal, the sum of its pytest runs' times divided by the
workers).

The instance is the test suite's package (`tests/fixtures/mpe/intervals`) in
a fresh git repository; the pool is 56 distinct variants per operator, given
as a `--pool` directory so the figure is the runner's, not a model's. Every
run is a real pytest run in a confined scratch copy; each run's time is read
from the run cache the command writes (`OUT/runs/`).

    cargo build --release && python3 benches/mpe.py [WORKERS]
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRITIC = ROOT / "target/release/critic"
OPERATORS = [
    "vanilla",
    "symptom_suppression",
    "incomplete_fix",
    "input_shortcut",
    "behavior_substitution",
]
BUG = "start < merged[-1][1]"


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


def diff_of(clone, scratch, files):
    """The diff from the base commit that gives `files` their contents."""
    shutil.rmtree(scratch, ignore_errors=True)
    git(clone.parent, "clone", "-q", str(clone), str(scratch))
    for path, text in files.items():
        (scratch / path).write_text(text)
    git(scratch, "add", "-A")
    return git(scratch, "diff", "--cached")


def variant(i):
    """A distinct replacement of the bug's condition; mixed behaviours."""
    forms = [
        f"start <= merged[-1][1] + {i % 3}",
        f"start < merged[-1][1] + {i % 2}",
        f"not start > merged[-1][1] - {i % 2}",
        f"start <= merged[-1][1] and end != {i}",
    ]
    return f"{forms[i % len(forms)]} and {i} >= 0"


def main():
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else os.cpu_count()
    python = python_with_pytest()
    # Confined runs do not see /tmp: the work goes under target/.
    work = Path(tempfile.mkdtemp(dir=ROOT / "target", prefix="bench-mpe-"))
    try:
        clone = work / "repos/acme__intervals"
        shutil.copytree(ROOT / "tests/fixtures/mpe/intervals", clone)
        git(clone, "init", "-q", "-b", "main")
        git(clone, "add", "-A")
        git(clone, "commit", "-q", "-m", "base")
        base = git(clone, "rev-parse", "HEAD").strip()
        core = (clone / "intervals/core.py").read_text()
        tests = (clone / "tests/test_core.py").read_text()
        scratch = work / "scratch"
        golden_test = (
            "\n\ndef test_merge_joins_touching_intervals():\n"
            "    assert merge([(1, 3), (3, 5)]) == [(1, 5)]\n"
        )
        instance = {
            "instance_id": "acme__intervals-7",
            "repo": "acme/intervals",
            "base_commit": base,
            "patch": diff_of(clone, scratch, {
                "intervals/core.py": core.replace(BUG, "start <= merged[-1][1]")}),
            "test_patch": diff_of(clone, scratch, {"tests/test_core.py": tests + golden_test}),
            "FAIL_TO_PASS": ["tests/test_core.py::test_merge_joins_touching_intervals"],
            "PASS_TO_PASS": ["tests/test_core.py::test_merge_joins_overlaps",
                             "tests/test_parse.py::test_round_trip"],
            "problem_statement": "merge() leaves touching intervals apart.",
        }
        generated = (
            "from intervals import merge\n\n\ndef test_touching():\n"
            "    assert merge([(1, 3), (3, 5)]) == [(1, 5)]\n"
        )
        prediction = {
            "instance_id": instance["instance_id"],
            "model_name_or_path": "bench-gen",
            "model_patch": diff_of(clone, scratch, {"tests/test_touching.py": generated}),
        }
        (work / "instances.jsonl").write_text(json.dumps(instance) + "\n")
        (work / "predictions.jsonl").write_text(json.dumps(prediction) + "\n")
        pool = work / "pool" / instance["instance_id"]
        pool.mkdir(parents=True)
        for i in range(280):
            text = core.replace(BUG, variant(i))
            d = diff_of(clone, scratch, {"intervals/core.py": text})
            (pool / f"{OPERATORS[i % 5]}-{i:03}.diff").write_text(d)

        out = work / "out"
        started = time.monotonic()
        subprocess.run(
            [CRITIC, "mpe", "--instances", work / "instances.jsonl",
             "--predictions", work / "predictions.jsonl", "--repos", work / "repos",
             "--python", python, "--pool", work / "pool", "--output-dir", out,
             "--workers", str(workers)],
            check=True, stderr=subprocess.DEVNULL,
        )
        wall = time.monotonic() - started
        runs = [json.loads(Path(p).read_text())
                for p in glob.glob(str(out / "runs/*/*.json"))]
        busy = sum(r["duration_ms"] for r in runs) / 1000
        ideal = busy / workers
        result = json.loads((out / "results.jsonl").read_text().splitlines()[0])
        print(json.dumps({
            "variants": result["matrix"]["total"],
            "pytest_runs": len(runs),
            "workers": workers,
            "mean_run_s": round(busy / len(runs), 3),
            "wall_s": round(wall, 2),
            "ideal_s": round(ideal, 2),
            "ratio": round(wall / ideal, 3),
        }, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

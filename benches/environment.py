"""Building an environment against `pip install` of the same lock (issue 40's
target: at most 1.2x).

A record with SWE-bench's fields alone (pallets/flask 2.3, as
tests/swebench_records.rs builds it: Python 3.11, the repository's
requirements file and SWE-bench's pinned packages) is graded once, so that
critic resolves its environment and writes the lock beside it. Then, R
times: critic's rebuild of that environment from the lock (the environment
removed, the lock kept; the time critic prints for the build), against
`python3.11 -m venv` plus `pip install --no-deps --compile -r LOCK` by hand
into a fresh directory of the same file system. Medians are compared.

    cargo build --release && python3 benches/environment.py [R]

(`target/debug/critic` is used when there is no release build: the time is
pip's either way.)
"""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CRITIC = ROOT / "target/release/critic"
if not CRITIC.exists():
    CRITIC = ROOT / "target/debug/critic"


def git(repo, *args):
    return subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@localhost", *args],
        cwd=repo, check=True, capture_output=True, text=True).stdout


def write(root, files):
    for path, text in files.items():
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def lab(place):
    repo = place / "repos/pallets__flask"
    repo.mkdir(parents=True)
    write(repo, {
        "pyproject.toml": "[build-system]\nrequires = [\"setuptools\"]\n"
                          "build-backend = \"setuptools.build_meta\"\n\n"
                          "[project]\nname = \"flaskish\"\nversion = \"2.3.0\"\n",
        "src/flaskish/__init__.py": "def answer():\n    return 41\n",
        "requirements/dev.txt": "-e .\n-r tests.txt\n",
        "requirements/tests.txt": "pytest==8.3.4\n",
        "tests/test_other.py": "def test_ok():\n    pass\n",
    })
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    write(repo, {"src/flaskish/__init__.py": "def answer():\n    return 42\n"})
    patch = git(repo, "diff")
    git(repo, "checkout", "-q", "--", ".")
    test_patch = ("diff --git a/tests/test_answer.py b/tests/test_answer.py\nnew file mode 100644\n"
                  "--- /dev/null\n+++ b/tests/test_answer.py\n@@ -0,0 +1,2 @@\n"
                  "+from flaskish import answer\n+def test_answer(): assert answer() == 42\n")
    record = {
        "instance_id": "pallets__flask-99999", "repo": "pallets/flask", "base_commit": base,
        "environment_setup_commit": base, "version": "2.3", "patch": patch,
        "test_patch": test_patch,
        "FAIL_TO_PASS": json.dumps(["tests/test_answer.py::test_answer"]),
        "PASS_TO_PASS": json.dumps(["tests/test_other.py::test_ok"]),
        "problem_statement": "off by one",
    }
    (place / "instances.jsonl").write_text(json.dumps(record) + "\n")
    (place / "predictions.jsonl").write_text(json.dumps(
        {"instance_id": record["instance_id"], "model_name_or_path": "gold",
         "model_patch": patch}) + "\n")


def grade(place):
    out = subprocess.run(
        [str(CRITIC), "experiment", "grade", "out", "--instances", "instances.jsonl",
         "--predictions", "predictions.jsonl", "--repos", "repos"],
        cwd=place, capture_output=True, text=True,
        env={**os.environ, "CRITIC_CACHE_DIR": str(place / "cache")})
    if out.returncode != 0:
        sys.exit(f"critic experiment grade failed:\n{out.stderr}")
    return out.stderr


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    place = Path(tempfile.mkdtemp(prefix="critic-env-bench-"))
    try:
        lab(place)
        grade(place)
        lock = next((place / "out/envs").glob("*.lock"))
        env = place / "cache/envs" / lock.stem
        python = Path((env / "pyvenv.cfg").read_text().split("home = ")[1].split("\n")[0])
        base_python = python / "python3.11"
        ours, theirs = [], []
        for _ in range(rounds):
            shutil.rmtree(env)
            (place / "out/results.sqlite").unlink()
            err = grade(place)
            built = re.search(r"built the environment .* in ([0-9.]+) s", err)
            ours.append(float(built.group(1)))
            by_hand = place / "by-hand"
            shutil.rmtree(by_hand, ignore_errors=True)
            start = time.monotonic()
            subprocess.run([str(base_python), "-m", "venv", str(by_hand)], check=True)
            subprocess.run([str(by_hand / "bin/python"), "-m", "pip", "install", "-q",
                            "--disable-pip-version-check", "--no-deps", "--compile",
                            "-r", str(lock)], check=True)
            theirs.append(time.monotonic() - start)
        a, b = statistics.median(ours), statistics.median(theirs)
        print(f"critic's build from the lock: median {a:.2f} s ({', '.join(f'{x:.2f}' for x in ours)})")
        print(f"venv + pip install of the lock: median {b:.2f} s ({', '.join(f'{x:.2f}' for x in theirs)})")
        print(f"ratio {a / b:.2f} (target at most 1.2)")
    finally:
        shutil.rmtree(place, ignore_errors=True)


if __name__ == "__main__":
    main()

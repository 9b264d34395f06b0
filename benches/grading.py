"""Grading's cost against running the same test command directly (issue 33's
target: at most 1.1x), on a real instance: humanize's fix between 4.14.0 and
4.15.0 (as tests/grading_pypi.rs builds it; 700 tests in two modules).

Direct: the instance's test command (`python -m pytest -rA -p no:cacheprovider
<the test patch's modules>`) run by hand in a checkout of the fixed package,
with the environment critic built, R times. Graded: `critic experiment grade
--predictions` of N predictions of the golden patch into an output directory
whose environment and clone are ready: N + 1 grading runs (each instance's
golden patch is graded first, the pre-flight), each in a confined scratch copy
with what steers pytest put back and pytest's report read. The ratio is the
graded call's wall time per run over the direct run's median; the runner's
overhead per run is the graded time per run less the test command's own time
(from each run's grade/golden.json).

    cargo build --release && python3 benches/grading.py [N] [R]
"""

import json
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
LOCKS = ROOT / "tests/grading"
REPO = "python-humanize/humanize"
ID = "python-humanize__humanize-4.15"
TESTS = ["tests/test_number.py", "tests/test_time.py"]


def run(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw)


def git(cwd, *args):
    return run("git", "-c", "user.name=b", "-c", "user.email=b@localhost", *args, cwd=cwd).stdout


def sdist(lock, name, into):
    run(sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
        "--require-hashes", "-r", LOCKS / lock, "-d", into)
    tarball = next(into.glob(f"{name}.tar.gz"))
    run("tar", "xzf", tarball, "-C", into)
    return into / name


def sources(d):
    return sorted(p.relative_to(d) for p in d.rglob("*") if p.is_file()
                  and p.name != "PKG-INFO" and not p.name.endswith("_version.py")
                  and not p.name.endswith(".mo"))


def copy(src, dst, files):
    for f in files:
        (dst / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src / f, dst / f)


def setup(lab):
    old = sdist("humanize-4.14.lock", "humanize-4.14.0", lab)
    new = sdist("humanize-4.15.lock", "humanize-4.15.0", lab)
    repo = lab / "repos/python-humanize__humanize"
    repo.mkdir(parents=True)
    copy(old, repo, sources(old))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "4.14.0")
    base = git(repo, "rev-parse", "HEAD").strip()
    copy(new, repo, [f for f in sources(new) if str(f).startswith("src")])
    git(repo, "add", "-A")
    patch = git(repo, "diff", "--cached")
    git(repo, "reset", "-q", "--hard")
    copy(new, repo, [Path(t) for t in TESTS])
    test_patch = git(repo, "diff")
    git(repo, "checkout", "-q", "--", ".")
    return repo, base, patch, test_patch


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    lab = Path(tempfile.mkdtemp(prefix="grading-bench-", dir=ROOT / "target"))
    try:
        repo, base, patch, test_patch = setup(lab)
        instance = {
            "instance_id": ID, "repo": REPO, "base_commit": base, "version": "4.14",
            "patch": patch, "test_patch": test_patch, "problem_statement": "bench",
            # Made once the environment can run the tests (below).
            "FAIL_TO_PASS": ["tests/test_number.py::warm-up"], "PASS_TO_PASS": [],
            "requirements": (LOCKS / "humanize-env.lock").read_text(),
            "install": ["SETUPTOOLS_SCM_PRETEND_VERSION=4.14.0 python -m pip install -q "
                        "--no-deps --no-build-isolation -e ."],
        }
        out = lab / "out"

        def grade(models):
            preds = lab / "predictions.jsonl"
            preds.write_text("".join(json.dumps({"instance_id": ID, "model_name_or_path": m,
                                                 "model_patch": patch}) + "\n" for m in models))
            t = time.perf_counter()
            proc = subprocess.run([CRITIC, "experiment", "grade", out, "--instances",
                                   lab / "instances.jsonl", "--predictions", preds,
                                   "--repos", lab / "repos", "--python", sys.executable],
                                  capture_output=True, text=True)
            return time.perf_counter() - t, proc

        # The first call builds the environment and the grader's copy; its
        # placeholder list makes the instance broken, which is all it is for.
        (lab / "instances.jsonl").write_text(json.dumps(instance) + "\n")
        warm, proc = grade(["warm-up"])
        env_python = next((out / "envs").glob("*/bin/python"))
        testbed = next((out / "envs").glob("*/installs/*/testbed"))
        direct_dir = lab / "direct"
        shutil.copytree(testbed, direct_dir)
        (direct_dir / "p.diff").write_text(patch + test_patch)
        run("git", "apply", "p.diff", cwd=direct_dir)
        cmd = [env_python, "-m", "pytest", "-rA", "-p", "no:cacheprovider", *TESTS]
        first = subprocess.run(cmd, cwd=direct_dir, capture_output=True, text=True)
        ids = [m.group(2).split()[0] for m in re.finditer(r"^(PASSED) (\S.*)$", first.stdout, re.M)]
        # The lists: every test of the two modules that passes with the fix
        # (what a grade says does not change its cost, only what runs does).
        instance["FAIL_TO_PASS"], instance["PASS_TO_PASS"] = ids[:3], ids[3:]
        (lab / "instances.jsonl").write_text(json.dumps(instance) + "\n")
        grade(["warm-up-2"])
        directs = []
        for _ in range(reps):
            t = time.perf_counter()
            subprocess.run(cmd, cwd=direct_dir, capture_output=True, text=True)
            directs.append(time.perf_counter() - t)
        direct = statistics.median(directs)
        graded, proc = grade([f"gold-{i}" for i in range(n)])
        assert proc.returncode == 0, proc.stderr
        runs = n + 1
        own = []
        for i in range(n):
            g = json.loads((out / f"runs/{ID}/gold-{i}/0/grade/golden.json").read_text())
            assert g["grade"]["resolved"] is True, g["grade"]
            own.append(g["result"]["duration_ms"] / 1000)
        per_run = graded / runs
        print(f"instance: {ID}, {len(ids)} tests in {len(TESTS)} modules")
        print(f"direct test command: median {direct:.3f} s (min {min(directs):.3f}, "
              f"max {max(directs):.3f}, {reps} runs)")
        print(f"graded: {graded:.3f} s for {n} predictions ({runs} runs with the pre-flight), "
              f"{per_run:.3f} s a run")
        print(f"ratio, graded run / direct run: {per_run / direct:.3f}")
        print(f"the test command inside grading: median {statistics.median(own):.3f} s; "
              f"the runner's overhead per run: {per_run - statistics.median(own):.3f} s")
        print(f"first call (environment, install, clone copy, pre-flight): {warm:.1f} s")
    finally:
        shutil.rmtree(lab, ignore_errors=True)


if __name__ == "__main__":
    main()

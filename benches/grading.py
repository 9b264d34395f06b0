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
graded call's wall time per run over the direct run's median (direct runs
before and after the call, against the machine's drift); the overhead is
the call's wall time less the sum of its runs' own test command times (each
run's grade/golden.json), per run: the process, the instance's preparation
(the grader's copy checked with git fsck, the patch read, what is put back),
the scratch copies and their confinement, and reading the logs. The direct
runs use the same file system (tmpfs) and pinned variables as grading.

    cargo build --release && python3 benches/grading.py [N] [R]
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
                                  capture_output=True, text=True,
                                  env={**os.environ, "CRITIC_CACHE_DIR": str(lab / "cache")})
            return time.perf_counter() - t, proc

        # The first call builds the environment and the grader's copy; its
        # placeholder list makes the instance broken, which is all it is for.
        (lab / "instances.jsonl").write_text(json.dumps(instance) + "\n")
        warm, proc = grade(["warm-up"])
        env_python = next((lab / "cache/envs").glob("*/bin/python"))
        testbed = next((lab / "cache/envs").glob("*/installs/*/testbed"))
        # On the same file system as the grader's scratch copies (tmpfs), with
        # the variables every grading run pins.
        shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else lab
        direct_dir = Path(tempfile.mkdtemp(prefix="grading-bench-direct-", dir=shm))
        shutil.rmtree(direct_dir)
        shutil.copytree(testbed, direct_dir)
        # The copy first on the path, as a scratch copy's runs have it (the
        # environment's editable install points at the unpatched checkout).
        pinned = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0", TZ="UTC",
                      LC_ALL="C.UTF-8", LANG="C.UTF-8",
                      PYTHONPATH=f"{direct_dir}:{direct_dir / 'src'}")
        (direct_dir / "p.diff").write_text(patch + test_patch)
        # Its own repository: run inside another's, `git apply` would skip
        # every path outside the directory it runs in.
        run("git", "init", "-q", cwd=direct_dir)
        run("git", "apply", "p.diff", cwd=direct_dir)
        cmd = [env_python, "-m", "pytest", "-rA", "-p", "no:cacheprovider", *TESTS, "--color=no"]
        first = subprocess.run(cmd, cwd=direct_dir, capture_output=True, text=True, env=pinned)
        ids = [m.group(2).split()[0] for m in re.finditer(r"^(PASSED) (\S.*)$", first.stdout, re.M)]
        # The lists: every test of the two modules that passes with the fix
        # (what a grade says does not change its cost, only what runs does).
        instance["FAIL_TO_PASS"], instance["PASS_TO_PASS"] = ids[:3], ids[3:]
        (lab / "instances.jsonl").write_text(json.dumps(instance) + "\n")
        grade(["warm-up-2"])
        def direct_runs(k):
            times = []
            for _ in range(k):
                t = time.perf_counter()
                subprocess.run(cmd, cwd=direct_dir, capture_output=True, text=True, env=pinned)
                times.append(time.perf_counter() - t)
            return times

        # Direct runs before and after the graded call: the machine's load
        # drifts between minutes.
        directs = direct_runs((reps + 1) // 2)
        graded, proc = grade([f"gold-{i}" for i in range(n)])
        assert proc.returncode == 0, proc.stderr[:3000]
        runs = n + 1
        own = []
        logs = [out / f"runs/{ID}/gold-{i}/0/grade/golden.json" for i in range(n)]
        logs.append(out / f"preflight/{ID}/golden.json")
        for log in logs:
            g = json.loads(log.read_text())
            assert g["grade"]["resolved"] is True, g["grade"]
            own.append(g["result"]["duration_ms"] / 1000)
        per_run = graded / runs
        directs += direct_runs(reps // 2)
        direct = statistics.median(directs)
        print(f"instance: {ID}, {len(ids)} tests in {len(TESTS)} modules")
        print(f"direct test command: median {direct:.3f} s (min {min(directs):.3f}, "
              f"max {max(directs):.3f}, {reps} runs)")
        print(f"graded: {graded:.3f} s for {n} predictions ({runs} runs with the pre-flight), "
              f"{per_run:.3f} s a run")
        print(f"ratio, graded run / direct run: {per_run / direct:.3f}")
        print(f"the test command inside grading: median {statistics.median(own):.3f} s "
              f"({statistics.median(own) / direct:.3f} of the direct run: the bootstrap and its "
              f"report, the confinement)")
        print(f"the call's time less its runs' own: {graded - sum(own):.3f} s "
              f"({(graded - sum(own)) / runs:.3f} s a run)")
        print(f"first call (environment, install, clone copy, pre-flight): {warm:.1f} s")
    finally:
        shutil.rmtree(lab, ignore_errors=True)
        if "direct_dir" in locals():
            shutil.rmtree(direct_dir, ignore_errors=True)


if __name__ == "__main__":
    main()

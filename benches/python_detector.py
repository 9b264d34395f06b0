"""A Python detector against the Rust one: skills/ran-tests-py (componentize-py,
CPython pre-initialized in the component) and skills/ran-tests (Rust), on the
same finish.

Measured, with the release binary:

- build: `critic build` of a copy of ran-tests-py with the pinned
  componentize-py (skipped when none is installed; name one in
  CRITIC_COMPONENTIZE_PY);
- first check: a check with an empty component cache (wasmtime compiles the
  component) against the next one (cache hit);
- warm checks, blocked and alternated (ten runs after one unmeasured): the
  verdict's `evaluate_ms` (the host's evaluation of the skill, detector call
  included), the process's wall time, and its peak RSS (from wait4).

Inputs: a one-commit repository with one changed file and the demo run's
third finish (17 events). The target (issue 25): the Python evaluate within
2x the Rust one plus 15 ms.

Usage, from the repository root:

    cargo build --release
    python3 benches/python_detector.py [RUNS]   # default 100 of each
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CRITIC = ROOT / "target" / "release" / "critic"
EVENTS = ROOT / "examples" / "demo-run" / "finish-3.jsonl"
SKILLS = {"rust": ROOT / "skills" / "ran-tests", "python": ROOT / "skills" / "ran-tests-py"}


def repo(parent: Path) -> Path:
    path = parent / "repo"
    path.mkdir()
    git = ["git", "-C", str(path), "-c", "user.email=b@b", "-c", "user.name=b"]
    subprocess.run(git + ["init", "-q"], check=True)
    (path / "m.py").write_text("x = 1\n")
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "base"], check=True)
    (path / "m.py").write_text("x = 2\n")
    return path


def check(skill: Path, workspace: Path, state: Path, cache: Path):
    """One check: (verdict, wall ms, peak RSS in MiB)."""
    env = dict(os.environ, CRITIC_CACHE_DIR=str(cache))
    started = time.perf_counter()
    proc = subprocess.Popen(
        [str(CRITIC), "check", "--skill", str(skill), "--workspace", str(workspace),
         "--events", str(EVENTS), "--state-dir", str(state), "--session", "bench"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
    )
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - started) * 1000
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):
        sys.exit(f"critic check {skill} exited {proc.returncode}")
    return json.loads(out), wall, usage.ru_maxrss / 1024


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        workspace = repo(tmp)
        state = tmp / "state"
        tool = os.environ.get("CRITIC_COMPONENTIZE_PY") or shutil.which("componentize-py")
        if tool:
            copy = tmp / "ran-tests-py"
            shutil.copytree(SKILLS["python"], copy)
            started = time.perf_counter()
            subprocess.run([str(CRITIC), "build", str(copy)], check=True, stdout=subprocess.DEVNULL,
                           env=dict(os.environ, CRITIC_COMPONENTIZE_PY=tool))
            print(f"build (componentize-py): {time.perf_counter() - started:.1f} s")
        for name, skill in SKILLS.items():
            cache = tmp / f"cache-{name}"
            first, wall, _ = check(skill, workspace, state, cache)
            second, wall2, _ = check(skill, workspace, state, cache)
            print(f"{name}: first check {wall:.0f} ms ({first['signals'][0]['compile_cache']}), "
                  f"next {wall2:.0f} ms ({second['signals'][0]['compile_cache']})")
        figures = {name: {"evaluate": [], "wall": [], "rss": []} for name in SKILLS}
        caches = {name: tmp / f"cache-{name}" for name in SKILLS}
        done = 0
        while done < runs:
            for name, skill in SKILLS.items():
                check(skill, workspace, state, caches[name])  # unmeasured
                for _ in range(min(10, runs - done)):
                    verdict, wall, rss = check(skill, workspace, state, caches[name])
                    figures[name]["evaluate"].append(verdict["metadata"]["evaluate_ms"])
                    figures[name]["wall"].append(wall)
                    figures[name]["rss"].append(rss)
            done += 10
        for name, f in figures.items():
            print(f"{name}: evaluate median {statistics.median(f['evaluate']):.2f} ms "
                  f"(p90 {statistics.quantiles(f['evaluate'], n=10)[-1]:.2f}), "
                  f"wall median {statistics.median(f['wall']):.1f} ms, "
                  f"peak RSS median {statistics.median(f['rss']):.1f} MiB ({len(f['wall'])} runs)")
        rust = statistics.median(figures["rust"]["evaluate"])
        python = statistics.median(figures["python"]["evaluate"])
        bound = 2 * rust + 15
        print(f"target: python evaluate {python:.2f} ms <= 2 x {rust:.2f} + 15 = {bound:.2f} ms: "
              f"{'met' if python <= bound else 'NOT met'}")


if __name__ == "__main__":
    main()

"""Timing of `critic check` against the git baseline, two ways.

The criterion bench (`cargo bench --bench check`) times each scenario in one
block of seconds, so a drift in the machine's speed between blocks (common on
this VM: the git baseline alone moves between 3.5 and 7 ms within minutes)
shows up as a difference between scenarios. This script shares the drift
between the two sides and measures them two ways:

- interleaved: a check, then the baseline, run by run;
- blocked: short blocks of each (ten runs after one unmeasured), alternated.

Interleaving favours the check: a baseline run right after a check is slower
than one right after another baseline (0.3-0.8 ms here: the check's exit and
the caches it evicted), so its ratio reads low. In a block each side runs
after itself, as criterion measures; that ratio is the stricter one and the
one to hold against a target.

The same check is also sent to a warm `critic serve` (`critic check
--server`), blocked the same way: the client process, the request, and the
server's check (its skill already loaded). Beside it, the least any such
check can take while git runs as a process (`server_bound`): the baseline's
two git processes started together, as the server starts its two, plus one
`true` for the client process.

Same inputs as benches/check.rs: the demo repository with the recorded
finish-3 patch applied, the recorded OpenHands stream grown to 50+ events (and
to 10 MB), and a skill with three shipped WASM gates.

Usage, from the repository root:

    cargo build --release
    python3 benches/loop.py [RUNS] [FILES]   # default 100 runs of each

FILES (default 0) adds that many committed files (20 lines each, 50 to a
directory) to the demo repository, for the same figures on a project-sized
work tree: git's share grows with the tree, the host's own costs do not.
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


def git(repo, *args):
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@localhost", *args],
                   cwd=repo, check=True, capture_output=True)


def events(path, min_events, min_bytes):
    """The recorded stream with its middle repeated (fresh ids) until big enough.

    Written line by line: holding 10 MB of lines would grow this process, and
    a child's peak RSS as the kernel reports it starts from its parent's.
    """
    lines = (ROOT / "examples/demo-run/finish-3.jsonl").read_text().splitlines()
    head, body, tail = lines[:3], lines[3:-4], lines[-4:]
    count, size, rounds = 0, 0, 0
    with open(path, "w") as f:
        def put(line):
            nonlocal count, size
            f.write(line + "\n")
            count, size = count + 1, size + len(line) + 1

        for line in head:
            put(line)
        while count + len(tail) < min_events or size < min_bytes:
            for line in body:
                put(line.replace('"id":"', f'"id":"r{rounds}-'))
            rounds += 1
        for line in tail:
            put(line)
    return path


_DEVNULL = os.open(os.devnull, os.O_WRONLY)


def spawn(cmd):
    """Start `cmd` (its stdout to /dev/null) with `posix_spawn`, the cheapest
    way to start a process from here: `subprocess.run` adds a few tenths of
    a millisecond per process, which would weigh on the two-process baseline
    twice and on the check once."""
    path = cmd[0] if os.sep in cmd[0] else shutil.which(cmd[0])
    return os.posix_spawn(path, cmd, os.environ,
                          file_actions=[(os.POSIX_SPAWN_DUP2, _DEVNULL, 1)])


def timed(*cmds):
    start = time.perf_counter()
    for cmd in cmds:
        _, status = os.waitpid(spawn(cmd), 0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"{cmd[0]} exited with {os.waitstatus_to_exitcode(status)}")
    return (time.perf_counter() - start) * 1000


def timed_together(*cmds):
    """Wall time (ms) of `cmds` started at once and all waited for."""
    start = time.perf_counter()
    for pid in [spawn(cmd) for cmd in cmds]:
        os.waitpid(pid, 0)
    return (time.perf_counter() - start) * 1000


def timed_with_rss(cmd):
    """Wall time (ms) and peak resident set (KiB) of one run of `cmd`."""
    start = time.perf_counter()
    _, status, usage = os.wait4(spawn(cmd), 0)
    elapsed = (time.perf_counter() - start) * 1000
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{cmd[0]} exited with {os.waitstatus_to_exitcode(status)}")
    return elapsed, usage.ru_maxrss


def read_back(path):
    """Drop `path` from the page cache, so the runs map it as read back from
    disk, the state of an installed program. A binary the linker has just
    written sits in the cache in large folios, which made the same `critic`
    0.5-0.7 ms faster per check here than its copy read back from disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)  # dirty pages cannot be dropped
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    files = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    if not CRITIC.exists():
        sys.exit(f"{CRITIC} not found: run `cargo build --release` first")
    tmp = Path(tempfile.mkdtemp(prefix="critic-loop-"))
    try:
        repo = tmp / "repo"
        shutil.copytree(ROOT / "examples/demo-repo", repo)
        for i in range(files):
            module = repo / "vendor" / f"pkg{i // 50}" / f"mod_{i % 50}.py"
            module.parent.mkdir(parents=True, exist_ok=True)
            module.write_text("".join(f"def f{j}(x):\n    return x + {i * 20 + j}\n"
                                      for j in range(10)))
        git(repo, "init", "-q")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "base")
        git(repo, "apply", str(ROOT / "examples/demo-run/finish-3.patch"))
        skill = tmp / "skill"
        skill.mkdir()
        skills = ROOT / "skills"
        gates = [("empty", "empty-patch/empty_patch.wasm"), ("ran-tests", "ran-tests/ran_tests.wasm"),
                 ("finished", "agent-finished/agent_finished.wasm")]
        # A detector must lie inside its skill: copy the shipped components.
        for _, p in gates:
            shutil.copy(skills / p, skill / Path(p).name)
        (skill / "critic.yaml").write_text(
            "name: bench\nversion: 0.1.0\ncapabilities: [read-file]\nsignals:\n" + "".join(
                f"  - {{name: {n}, type: hard_gate, detector: {Path(p).name}}}\n" for n, p in gates))
        small = events(tmp / "small.jsonl", 50, 0)
        large = events(tmp / "large.jsonl", 0, 10 << 20)

        def check(ev):
            return [str(CRITIC), "check", "--skill", str(skill), "--workspace", str(repo),
                    "--events", str(ev), "--state-dir", str(tmp / "state"),
                    "--cache-dir", str(tmp / "cache")]

        baseline = (["git", "status", "--porcelain"], ["git", "diff", "HEAD"])
        socket = tmp / "critic.sock"
        server = subprocess.Popen([str(CRITIC), "serve", "--socket", str(socket),
                                   "--cache-dir", str(tmp / "cache")],
                                  stderr=subprocess.PIPE, text=True)
        if "listening" not in server.stderr.readline():
            sys.exit("critic serve did not start")
        # A skill written less than 2 s before a check is loaded again by
        # every check (a change within the file system's timestamp tick
        # could go unseen otherwise): wait that out, as a real session does.
        time.sleep(2.2)
        os.chdir(repo)
        for program in (CRITIC, shutil.which("git")):
            read_back(program)
        timed(check(small), check(large), *baseline)  # warm the caches
        # The 10 MB runs go in their own loop: between small checks they
        # would evict what the small ones keep warm.
        small_ms, git_ms, large_ms, true_ms = [], [], [], []
        for _ in range(runs):
            small_ms.append(timed(check(small)))
            git_ms.append(timed(*baseline))
            true_ms.append(timed(["true"]))
        block = 10
        small_blocked, git_blocked, served_blocked, bound_blocked = [], [], [], []
        served = check(small) + ["--server", str(socket)]
        for _ in range(max(runs // block, 1)):
            small_blocked += [timed(check(small)) for _ in range(block + 1)][1:]
            git_blocked += [timed(*baseline) for _ in range(block + 1)][1:]
            served_blocked += [timed(served) for _ in range(block + 1)][1:]
            bound_blocked += [timed_together(*baseline) + timed(["true"])
                              for _ in range(block + 1)][1:]
        server.terminate()
        server.wait()
        large_rss = []
        for _ in range(max(runs // 5, 5)):
            ms, rss_kib = timed_with_rss(check(large))
            large_ms.append(ms)
            large_rss.append(rss_kib)
        med = statistics.median

        def versus(checks, gits):
            return {
                "check_3_gates_50_events_ms": round(med(checks), 2),
                "git_status_and_diff_ms": round(med(gits), 2),
                "ratio": round(med(checks) / med(gits), 2),
            }

        report = {
            # The ratio to hold against the target (see the docstring).
            "blocked": versus(small_blocked, git_blocked),
            # `critic check --server` against a warm server, blocked.
            "server_blocked": versus(served_blocked, git_blocked),
            # Git's two processes side by side and a `true`: no `--server`
            # check that starts git can be faster.
            "server_bound": {
                "git_together_and_true_ms": round(med(bound_blocked), 2),
                "ratio": round(med(bound_blocked) / med(git_blocked), 2),
            },
            "interleaved": {
                **versus(small_ms, git_ms),
                # Each check against the baseline run right after it.
                "median_pair_ratio": round(med(a / b for a, b in zip(small_ms, git_ms)), 2),
            },
            # What starting any process costs here (`true`): the baseline
            # pays it twice, the check once.
            "spawn_floor_ms": round(med(true_ms), 2),
            "check_3_gates_10mb_events_ms": round(med(large_ms), 1),
            "check_10mb_peak_rss_mib": round(max(large_rss) / 1024, 1),
            "runs": runs,
            "extra_files": files,
        }
        print(json.dumps(report, indent=2))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

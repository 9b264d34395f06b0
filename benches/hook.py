"""Hook wall time as the agent sees it: `critic hook <agent>` from its start
to its answer, per agent, in process and with a warm `critic serve`, against
the git floor (`git status --porcelain && git diff HEAD`) on the same work
tree; and a 100 MB Claude Code transcript.

The work tree and skill are those of benches/loop.py (the demo repository with
the recorded finish-3 patch; three shipped WebAssembly gates). Each agent's
transcript is its seed in tests/fuzz-corpus/events/, cut from a transcript the
real program wrote; the OpenHands events are the recorded finish-3 stream.
Timing is blocked, as loop.py explains: short blocks of each side, alternated.

The 100 MB transcript repeats the middle of the Claude Code seed (fresh ids)
until it is 100 MB, then `critic hook claude-code` judges it with the
`ran-tests` skill; wall time and peak RSS are the median and maximum of five
runs.

Usage, from the repository root:

    cargo build --release
    python3 benches/hook.py [RUNS]        # default 50 runs of each
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from loop import CRITIC, ROOT, git, read_back  # noqa: E402

SEEDS = ROOT / "tests/fuzz-corpus/events"
_DEVNULL = os.open(os.devnull, os.O_WRONLY)


def spawn(cmd, stdin_path, env=None):
    """posix_spawn `cmd` with stdin from `stdin_path`, stdout to /dev/null."""
    path = cmd[0] if os.sep in cmd[0] else shutil.which(cmd[0])
    actions = [(os.POSIX_SPAWN_DUP2, _DEVNULL, 1)]
    if stdin_path:
        actions.append((os.POSIX_SPAWN_OPEN, 0, str(stdin_path), os.O_RDONLY, 0))
    return os.posix_spawn(path, cmd, env or os.environ, file_actions=actions)


def timed(cmds, env=None):
    start = time.perf_counter()
    for cmd, stdin in cmds:
        _, status = os.waitpid(spawn(cmd, stdin, env), 0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"{cmd} exited with {os.waitstatus_to_exitcode(status)}")
    return (time.perf_counter() - start) * 1000


def hook_inputs(tmp, repo):
    """(agent, transcript-or-events flag args, hook input file) per agent."""
    cases = []
    for agent, seed in [("claude-code", "claude-code.jsonl"), ("codex", "codex.jsonl"),
                        ("gemini", "gemini.jsonl"), ("copilot", "copilot.jsonl")]:
        transcript = tmp / f"{agent}-{seed}"
        shutil.copy(SEEDS / seed, transcript)
        if agent == "copilot":
            # The log holds this call's hook.start: the hook need not wait.
            stamps = [json.loads(line)["data"]["input"]["timestamp"]
                      for line in transcript.read_text().splitlines() if '"hook.start"' in line]
            data = {"sessionId": "bench", "cwd": str(repo), "transcriptPath": str(transcript)}
            if stamps:
                data["timestamp"] = stamps[-1]
        else:
            data = {"session_id": "bench", "cwd": str(repo), "transcript_path": str(transcript)}
        cases.append((agent, [], data))
    persist = tmp / "persist"
    events = persist / "bench" / "events"
    events.mkdir(parents=True)
    lines = (ROOT / "examples/demo-run/finish-3.jsonl").read_text().splitlines()
    for i, line in enumerate(l for l in lines if l.strip()):
        (events / f"event-{i:05}-x.json").write_text(line)
    cases.append(("openhands", ["--events", str(persist)],
                  {"event_type": "Stop", "session_id": "bench", "working_dir": str(repo)}))
    out = []
    for agent, extra, data in cases:
        stdin = tmp / f"{agent}.input.json"
        stdin.write_text(json.dumps(data))
        out.append((agent, extra, stdin))
    return out


def big_transcript(path, size=100 << 20):
    lines = (SEEDS / "claude-code.jsonl").read_text().splitlines()
    head, body, tail = lines[:2], lines[2:-1], lines[-1:]
    written, rounds = 0, 0
    with open(path, "w") as f:
        for line in head:
            f.write(line + "\n")
        while written < size:
            for line in body:
                line = line.replace('"uuid":"', f'"uuid":"r{rounds}-').replace("toolu_", f"toolu_r{rounds}_")
                f.write(line + "\n")
                written += len(line) + 1
            rounds += 1
        for line in tail:
            f.write(line + "\n")


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    if not CRITIC.exists():
        sys.exit(f"{CRITIC} not found: run `cargo build --release` first")
    tmp = Path(tempfile.mkdtemp(prefix="critic-hook-"))
    server = None
    try:
        repo = tmp / "repo"
        shutil.copytree(ROOT / "examples/demo-repo", repo)
        git(repo, "init", "-q")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "base")
        git(repo, "apply", str(ROOT / "examples/demo-run/finish-3.patch"))
        skill = tmp / "skill"
        skill.mkdir()
        gates = ["empty-patch/empty_patch.wasm", "ran-tests/ran_tests.wasm", "agent-finished/agent_finished.wasm"]
        for g in gates:
            shutil.copy(ROOT / "skills" / g, skill / Path(g).name)
        (skill / "critic.yaml").write_text(
            "name: bench\nversion: 0.1.0\ncapabilities: [read-file]\nmax_iterations: 1000\nsignals:\n" + "".join(
                f"  - {{name: g{i}, type: hard_gate, detector: {Path(g).name}}}\n" for i, g in enumerate(gates)))
        common = ["--skill", str(skill), "--state-dir", str(tmp / "state"), "--cache-dir", str(tmp / "cache"),
                  "--max-rejections", "1000"]
        socket = tmp / "critic.sock"
        server = subprocess.Popen([str(CRITIC), "serve", "--socket", str(socket), "--cache-dir", str(tmp / "cache")],
                                  stderr=subprocess.PIPE, text=True)
        if "listening" not in server.stderr.readline():
            sys.exit("critic serve did not start")
        time.sleep(2.2)  # past the 2 s window in which a skill is reloaded
        os.chdir(repo)
        read_back(CRITIC)
        baseline = [(["git", "status", "--porcelain"], None), (["git", "diff", "HEAD"], None)]
        served_env = dict(os.environ, CRITIC_SERVER=str(socket))
        report = {}
        block = 10
        for agent, extra, stdin in hook_inputs(tmp, repo):
            cmd = [(([str(CRITIC), "hook", agent] + common + extra), stdin)]
            timed(cmd), timed(cmd, served_env), timed(baseline)  # warm up
            oneshot, served, floor = [], [], []
            for _ in range(max(runs // block, 1)):
                oneshot += [timed(cmd) for _ in range(block + 1)][1:]
                floor += [timed(baseline) for _ in range(block + 1)][1:]
                served += [timed(cmd, served_env) for _ in range(block + 1)][1:]
            med = statistics.median
            report[agent] = {
                "hook_ms": round(med(oneshot), 2),
                "hook_with_server_ms": round(med(served), 2),
                "git_floor_ms": round(med(floor), 2),
                "ratio": round(med(oneshot) / med(floor), 2),
                "server_ratio": round(med(served) / med(floor), 2),
            }
        server.terminate()
        server.wait()
        server = None

        big = tmp / "big.jsonl"
        big_transcript(big)
        big_input = tmp / "big.input.json"
        big_input.write_text(json.dumps({"session_id": "big", "cwd": str(repo), "transcript_path": str(big)}))
        ran_tests = ["--skill", str(ROOT / "skills/ran-tests"), "--state-dir", str(tmp / "state"),
                     "--cache-dir", str(tmp / "cache"), "--max-rejections", "1000"]
        walls, rss = [], []
        for i in range(16):
            start = time.perf_counter()
            pid = spawn([str(CRITIC), "hook", "claude-code"] + ran_tests, big_input)
            _, status, usage = os.wait4(pid, 0)
            if i:  # the first run compiles the skill
                walls.append((time.perf_counter() - start) * 1000)
                rss.append(usage.ru_maxrss / 1024)
        report["claude_code_100mb"] = {
            "transcript_mb": round(big.stat().st_size / (1 << 20), 1),
            "wall_ms": round(statistics.median(walls), 1),
            "peak_rss_mib": round(max(rss), 1),
        }
        report["runs"] = runs
        print(json.dumps(report, indent=2))
    finally:
        if server:
            server.terminate()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

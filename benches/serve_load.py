"""Load on a warm `critic serve`: throughput, latency, exact counts, and RSS
over a long soak.

1. Load: 1,000 finishes over 50 sessions from 16 concurrent clients (each
   client its own connection per request, over the Unix socket). Reports
   throughput and p50/p99 latency, and checks that every session ends with
   exactly its number of finishes counted: the iterations the server returned
   for a session are 1..n, none lost or doubled. The server's first check,
   which compiles the skill's components, is timed apart.
2. Soak: 10,000 more finishes (same clients), the server's resident set size
   read from /proc at the start and the end (and its peak in between).

Inputs as in benches/loop.py: the demo repository with finish 3's patch, the
recorded stream grown to 50+ events, a skill of three shipped WASM gates.

Usage, from the repository root:

    cargo build --release
    python3 benches/serve_load.py [FINISHES] [SOAK]   # default 1000 10000
"""

import json
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import loop  # noqa: E402  (the shared inputs)

SESSIONS = 50
CLIENTS = 16


def post(sock_path, body):
    """One POST /v1/check; the response's status and JSON body."""
    s = socket.socket(socket.AF_UNIX)
    s.connect(str(sock_path))
    s.sendall(b"POST /v1/check HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
              b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    chunks = []
    while True:
        data = s.recv(65536)
        if not data:
            break
        chunks.append(data)
    s.close()
    head, _, payload = b"".join(chunks).partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), json.loads(payload)


def rss_kib(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def drive(sock_path, bodies):
    """Send `bodies` from CLIENTS threads; per request (session, iteration, ms)."""
    results, errors = [], []
    lock = threading.Lock()
    queue = list(enumerate(bodies))

    def client():
        while True:
            with lock:
                if not queue:
                    return
                i, (session, body) = queue.pop(0)
            start = time.perf_counter()
            status, answer = post(sock_path, body)
            ms = (time.perf_counter() - start) * 1000
            with lock:
                if status != 200:
                    errors.append((status, answer))
                else:
                    results.append((session, answer["iteration"], ms))

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, errors, time.perf_counter() - start


def main():
    finishes = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    soak = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    tmp = Path(tempfile.mkdtemp(prefix="critic-load-"))
    repo = tmp / "repo"
    import shutil
    shutil.copytree(loop.ROOT / "examples/demo-repo", repo)
    loop.git(repo, "init", "-q")
    loop.git(repo, "add", "-A")
    loop.git(repo, "commit", "-q", "-m", "base")
    loop.git(repo, "apply", str(loop.ROOT / "examples/demo-run/finish-3.patch"))
    skill = tmp / "skill"
    skill.mkdir()
    gates = [("empty", "empty-patch/empty_patch.wasm"), ("ran-tests", "ran-tests/ran_tests.wasm"),
             ("finished", "agent-finished/agent_finished.wasm")]
    for _, p in gates:
        shutil.copy(loop.ROOT / "skills" / p, skill / Path(p).name)
    (skill / "critic.yaml").write_text(
        "name: bench\nversion: 0.1.0\ncapabilities: [read-file]\nsignals:\n" + "".join(
            f"  - {{name: {n}, type: hard_gate, detector: {Path(p).name}}}\n" for n, p in gates))
    events = loop.events(tmp / "small.jsonl", 50, 0)
    sock_path = tmp / "critic.sock"
    server = subprocess.Popen([str(loop.CRITIC), "serve", "--socket", str(sock_path),
                               "--cache-dir", str(tmp / "cache")], stderr=subprocess.PIPE, text=True)
    try:
        if "listening" not in server.stderr.readline():
            sys.exit("critic serve did not start")
        time.sleep(2.2)  # past the window in which a fresh skill is reloaded

        def bodies(n, state):
            return [(f"s{i % SESSIONS}", json.dumps({
                "skill": str(skill), "workspace": str(repo), "events": str(events),
                "session": f"s{i % SESSIONS}", "state_dir": str(tmp / state),
            }).encode()) for i in range(n)]

        # The first check compiles the skill's components (a cold cache);
        # reported apart, the load measures the warm server.
        start = time.perf_counter()
        status, answer = post(sock_path, bodies(1, "first")[0][1])
        first_ms = (time.perf_counter() - start) * 1000
        if status != 200:
            sys.exit(f"the first check failed: {answer}")
        results, errors, wall = drive(sock_path, bodies(finishes, "load"))
        if errors:
            sys.exit(f"{len(errors)} requests failed, first: {errors[0]}")
        per_session = {}
        for session, iteration, _ in results:
            per_session.setdefault(session, []).append(iteration)
        exact = all(sorted(its) == list(range(1, len(its) + 1)) for its in per_session.values())
        counts = sorted({len(its) for its in per_session.values()})
        latencies = sorted(ms for _, _, ms in results)
        load = {
            "finishes": len(results),
            "sessions": len(per_session),
            "clients": CLIENTS,
            "throughput_per_s": round(len(results) / wall, 1),
            "p50_ms": round(statistics.median(latencies), 2),
            "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1], 2),
            "every_session_counted_exactly": exact,
            "finishes_per_session": counts,
        }

        start_rss = rss_kib(server.pid)
        peak = start_rss
        done = 0
        step = 1000
        soak_wall = 0.0
        while done < soak:
            n = min(step, soak - done)
            results, errors, wall = drive(sock_path, bodies(n, "soak"))
            if errors:
                sys.exit(f"{len(errors)} soak requests failed, first: {errors[0]}")
            done += n
            soak_wall += wall
            peak = max(peak, rss_kib(server.pid))
        report = {
            "first_check_cold_cache_ms": round(first_ms, 1),
            "load": load,
            "soak": {
                "finishes": done,
                "throughput_per_s": round(done / soak_wall, 1),
                "rss_start_mib": round(start_rss / 1024, 1),
                "rss_end_mib": round(rss_kib(server.pid) / 1024, 1),
                "rss_peak_mib": round(peak / 1024, 1),
            },
        }
        print(json.dumps(report, indent=2))
        if not exact:
            sys.exit("a session's count was lost or doubled")
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

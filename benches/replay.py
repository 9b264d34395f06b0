"""A whole experiment recorded against a model with 1 s of latency a call,
then replayed from its recording (issue 42's target: the replay at least
5x faster).

The experiment is N instances of the demo experiment's `textutil` package
(as in `benches/experiment.py`) and the shipped FIX-only arm. The agent is a
`command` agent that makes K calls to its model through the run's proxy
(`CRITIC_MODEL_BASE_URL`), then applies the fix. The model is a stand-in
on the loopback (a test double for a paid API) that waits LATENCY seconds
before each answer. Both experiments run with `--workers 2`; the replay has
the stand-in stopped, so every answer comes from the recording.

    cargo build --release && python3 benches/replay.py [N] [K] [LATENCY]
"""

import json
import sqlite3
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from experiment import ROOT, setup, timed_run  # noqa: E402

AGENT = """#!/usr/bin/env python3
import json, os, pathlib, subprocess, sys, urllib.request
prompt = pathlib.Path(sys.argv[1]).read_text()
for call in range(int(os.environ["CALLS"])):
    request = urllib.request.Request(
        os.environ["CRITIC_MODEL_BASE_URL"] + "/v1/messages",
        data=json.dumps({"call": call, "prompt": prompt}).encode(),
        headers={"x-api-key": os.environ["CRITIC_MODEL_API_KEY"],
                 "content-type": "application/json"})
    urllib.request.urlopen(request).read()
subprocess.run(["sed", "-i", "s/join(words)/join(w.lower() for w in words)/",
                "textutil/__init__.py"], check=True)
"""


def model(latency):
    """The stand-in model: an answer with usage, `latency` seconds late."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length") or 0))
            time.sleep(latency)
            body = json.dumps({
                "id": "msg", "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": "ok"}],
                "usage": {"input_tokens": 100, "output_tokens": 20},
            }).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def experiment(dir, out, *flags):
    """The experiment's wall time and its runs' rows."""
    wall = timed_run(dir, out, *flags, env={"PATH": "/usr/bin:/bin", "MODEL_KEY": "key"})
    db = sqlite3.connect(dir / out / "results.sqlite")
    rows = sorted(db.execute(
        "SELECT instance_id, status, resolved, tokens, model_calls FROM runs"))
    return wall, rows


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    latency = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    # Under target/: a confined turn does not see /tmp.
    with tempfile.TemporaryDirectory(dir=ROOT / "target", prefix="bench-replay-") as d:
        dir = Path(d)
        setup(dir, n)
        agent = dir / "agent.py"
        agent.write_text(AGENT)
        agent.chmod(0o755)
        server = model(latency)
        text = (dir / "exp.yaml").read_text()
        start = text.index("agent:")
        end = text.index("arms:")
        (dir / "exp.yaml").write_text(
            text[:start]
            + f"agent:\n  command: [./agent.py, \"{{prompt_file}}\"]\n"
            + f"  env: {{CALLS: \"{calls}\"}}\n"
            + f"model: {{base_url: \"http://127.0.0.1:{server.server_address[1]}\", "
            + "model: m, api_key_env: MODEL_KEY}\n"
            + text[end:]
        )
        recorded, live_rows = experiment(dir, "recorded")
        server.shutdown()
        server.server_close()
        replayed, replay_rows = experiment(dir, "replayed", "--replay", dir / "recorded")
    assert live_rows == replay_rows, (live_rows, replay_rows)
    assert all(r[1] == "ok" and r[2] == 1 and r[4] == calls for r in live_rows), live_rows
    print(f"{n} runs x {calls} model calls at {latency} s, --workers 2")
    print(f"recorded: {recorded:.2f} s; replayed: {replayed:.2f} s; "
          f"replay {recorded / replayed:.1f}x faster (target at least 5x)")


if __name__ == "__main__":
    main()

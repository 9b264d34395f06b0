#!/usr/bin/env python3
"""Scripted stand-in for an OpenAI-compatible chat-completions API (stdlib only, Python 3.11+).

Used to drive mini-swe-agent (LitellmModel / LitellmTextbasedModel via litellm's `openai/` provider)
fully offline.

    python3 standin.py --script SCRIPT.json --log REQUESTS.jsonl --port-file PORTFILE

SCRIPT.json: a list of turns, consumed one per model call, in order:
    {"text": "..."}                                    final/plain assistant text (for the text-based
                                                       model this text carries the ```mswea_bash_command block)
    {"tool_calls": [{"name": "bash", "input": {"command": "ls"}}], "text": "optional reasoning"}
When the script runs out, the answer is the plain text "done (script exhausted)".

Endpoints:
    POST {/v1,}/chat/completions   consumes a turn; JSON reply, or SSE chunks if body.stream is true
    GET  {/v1,}/models             model listing (side call, no turn consumed)
    GET  /health                   "ok" (no turn consumed)
Every request (method, path, parsed JSON body) is appended as one JSON line to REQUESTS.jsonl.
Binds 127.0.0.1 on an ephemeral port, writes the port to PORTFILE once listening, exits 0 on SIGTERM/SIGINT.
"""

import argparse
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

EXHAUSTED = {"text": "done (script exhausted)"}


class State:
    def __init__(self, script, log_path):
        self.script = script
        self.log_path = log_path
        self.index = 0
        self.lock = threading.Lock()
        self.call_seq = 0

    def next_turn(self):
        with self.lock:
            if self.index < len(self.script):
                turn = self.script[self.index]
            else:
                turn = EXHAUSTED
            self.index += 1
            return self.index, turn

    def log(self, record):
        with self.lock:
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")


def _approx_tokens(obj) -> int:
    return max(1, len(json.dumps(obj)) // 4)


def build_message(turn_no, turn):
    text = turn.get("text")
    calls = []
    for i, call in enumerate(turn.get("tool_calls") or []):
        args = call.get("input", {})
        calls.append(
            {
                "id": f"call_t{turn_no}_{i}",
                "type": "function",
                "function": {
                    "name": call.get("name", "bash"),
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
        )
    msg = {"role": "assistant", "content": text}
    if calls:
        msg["tool_calls"] = calls
    return msg, ("tool_calls" if calls else "stop")


class Handler(BaseHTTPRequestHandler):
    server_version = "standin/1.0"
    protocol_version = "HTTP/1.1"

    def _key(self):
        """The API key the request presented."""
        return (self.headers.get("authorization") or "").removeprefix("Bearer ")

    def log_message(self, fmt, *args):  # keep stderr quiet
        pass

    @property
    def state(self) -> State:
        return self.server.state  # type: ignore[attr-defined]

    def _read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except Exception:
            return {"_unparsed": raw.decode("utf-8", "replace")}

    def _send_json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _path(self):
        return self.path.split("?", 1)[0].rstrip("/")

    def do_GET(self):
        path = self._path()
        self.state.log({"method": "GET", "path": self.path, "body": None, "side_call": True, "ts": time.time(), "key": self._key()})
        if path.endswith("/models"):
            self._send_json(200, {"object": "list", "data": [{"id": "standin", "object": "model", "owned_by": "standin"}]})
        elif path in ("/health", ""):
            self._send_json(200, {"status": "ok"})
        else:
            self._send_json(404, {"error": {"message": f"unknown path {self.path}", "type": "not_found"}})

    def do_POST(self):
        path = self._path()
        body = self._read_body()
        if not path.endswith("/chat/completions"):
            self.state.log({"method": "POST", "path": self.path, "body": body, "side_call": True, "ts": time.time(), "key": self._key()})
            self._send_json(404, {"error": {"message": f"unknown path {self.path}", "type": "not_found"}})
            return
        turn_no, turn = self.state.next_turn()
        self.state.log({"method": "POST", "path": self.path, "body": body, "turn": turn_no, "ts": time.time(), "key": self._key()})
        msg, finish = build_message(turn_no, turn)
        model = (body or {}).get("model", "standin")
        prompt_tokens = _approx_tokens((body or {}).get("messages", []))
        completion_tokens = _approx_tokens(msg)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        cid = f"chatcmpl-standin-{turn_no}"
        created = int(time.time())
        if (body or {}).get("stream"):
            self._stream(cid, created, model, msg, finish, usage)
            return
        self._send_json(
            200,
            {
                "id": cid,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "message": msg, "finish_reason": finish, "logprobs": None}],
                "usage": usage,
            },
        )

    def _stream(self, cid, created, model, msg, finish, usage):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()

        def chunk(delta, finish_reason=None, with_usage=False):
            obj = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }
            if with_usage:
                obj["usage"] = usage
            self.wfile.write(f"data: {json.dumps(obj)}\n\n".encode())
            self.wfile.flush()

        chunk({"role": "assistant", "content": ""})
        if msg.get("content"):
            chunk({"content": msg["content"]})
        for i, call in enumerate(msg.get("tool_calls") or []):
            chunk({"tool_calls": [{"index": i, **call}]})
        chunk({}, finish_reason=finish, with_usage=True)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--port-file", required=True)
    args = ap.parse_args()
    with open(args.script, encoding="utf-8") as f:
        script = json.load(f)
    if not isinstance(script, list):
        sys.exit("script must be a JSON list of turns")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.state = State(script, args.log)  # type: ignore[attr-defined]

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    port = server.server_address[1]
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(port))
    os.replace(tmp, args.port_file)
    server.serve_forever()
    server.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Scripted stand-in for an OpenAI-compatible Chat Completions API, as used by
GitHub Copilot CLI in BYOK mode (COPILOT_PROVIDER_BASE_URL, wire API "completions").

Interface (shared across all agent stand-ins):
    python3 standin.py --script SCRIPT.json --log REQUESTS.jsonl --port-file PORTFILE

SCRIPT.json: a list of turns, consumed one per *main* model call, in order:
    {"text": "..."}                                         final answer, no tools
    {"tool_calls": [{"name": "bash", "input": {...}}], "text": "optional"}
When the script runs out, the answer is the text "done (script exhausted)".

Side calls (model listing, and utility calls that Copilot makes without tools,
e.g. session title / branch naming) are answered without consuming a turn, and
are logged like every other request (with "side": true).

Stdlib only (Python 3.11). Exits cleanly on SIGTERM/SIGINT.
"""
import argparse
import json
import signal
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATE = {"turns": [], "next": 0, "log": None, "model_calls": 0}


def log_request(entry):
    with LOCK:
        with open(STATE["log"], "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")


def next_turn():
    with LOCK:
        i = STATE["next"]
        if i < len(STATE["turns"]):
            STATE["next"] = i + 1
            return i, STATE["turns"][i]
        STATE["next"] = i + 1
        return i, {"text": "done (script exhausted)"}


def is_side_call(body):
    """A main agent call carries the agent's tool list; utility calls
    (titles, naming, summaries) carry no tools."""
    if not isinstance(body, dict):
        return True
    tools = body.get("tools")
    return not tools


def side_text(body):
    # Something harmless and short for title / naming / summary requests.
    return "Scripted session"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # keep stderr quiet
        pass

    def _read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if not raw:
            return None, raw
        try:
            return json.loads(raw.decode("utf-8")), raw
        except Exception:
            return None, raw

    def _send_json(self, code, obj):
        data = json.dumps(obj).encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    # ---------------------------------------------------------------- GET
    def do_GET(self):
        log_request({"ts": time.time(), "method": "GET", "path": self.path,
                     "body": None, "side": True})
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [
                {"id": "gpt-4.1", "object": "model", "created": 0,
                 "owned_by": "standin"}]})
            return
        self._send_json(404, {"error": {"message": "not found: " + self.path}})

    # --------------------------------------------------------------- POST
    def do_POST(self):
        body, raw = self._read_body()
        path = self.path.split("?")[0]
        if path.endswith("/chat/completions"):
            side = is_side_call(body)
            entry = {"ts": time.time(), "method": "POST", "path": self.path,
                     "body": body if body is not None else raw.decode("utf-8", "replace"),
                     "side": side}
            if side:
                log_request(entry)
                self._answer(body, {"text": side_text(body)}, None)
                return
            idx, turn = next_turn()
            entry["turn"] = idx
            log_request(entry)
            self._answer(body, turn, idx)
            return
        log_request({"ts": time.time(), "method": "POST", "path": self.path,
                     "body": body, "side": True})
        self._send_json(404, {"error": {"message": "unsupported path " + self.path}})

    def _answer(self, body, turn, idx):
        model = (body or {}).get("model") or "gpt-4.1"
        stream = bool((body or {}).get("stream"))
        cid = "chatcmpl-" + uuid.uuid4().hex[:24]
        created = int(time.time())
        text = turn.get("text")
        calls = []
        for j, tc in enumerate(turn.get("tool_calls") or []):
            calls.append({
                "id": "call_%s_%d_%s" % (idx, j, uuid.uuid4().hex[:8]),
                "type": "function",
                "function": {"name": tc["name"],
                             "arguments": json.dumps(tc.get("input") or {})},
            })
        finish = "tool_calls" if calls else "stop"
        pt = len(json.dumps(body or {})) // 4
        usage = {"prompt_tokens": pt, "completion_tokens": 10,
                 "total_tokens": pt + 10}
        if not stream:
            msg = {"role": "assistant", "content": text}
            if calls:
                msg["tool_calls"] = calls
            self._send_json(200, {
                "id": cid, "object": "chat.completion", "created": created,
                "model": model,
                "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                "usage": usage})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

        def chunk(delta, fr=None, with_usage=False):
            obj = {"id": cid, "object": "chat.completion.chunk",
                   "created": created, "model": model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": fr}]}
            if with_usage:
                obj["usage"] = usage
            self.wfile.write(b"data: " + json.dumps(obj).encode("utf-8") + b"\n\n")
            self.wfile.flush()

        chunk({"role": "assistant", "content": ""})
        if text:
            chunk({"content": text})
        for j, c in enumerate(calls):
            chunk({"tool_calls": [{"index": j, "id": c["id"], "type": "function",
                                   "function": {"name": c["function"]["name"],
                                                "arguments": ""}}]})
            chunk({"tool_calls": [{"index": j, "function": {
                "arguments": c["function"]["arguments"]}}]})
        chunk({}, finish)
        # final usage chunk (stream_options.include_usage style)
        obj = {"id": cid, "object": "chat.completion.chunk", "created": created,
               "model": model, "choices": [], "usage": usage}
        self.wfile.write(b"data: " + json.dumps(obj).encode("utf-8") + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--port-file", required=True)
    a = ap.parse_args()
    with open(a.script, encoding="utf-8") as f:
        STATE["turns"] = json.load(f)
    STATE["log"] = a.log
    open(a.log, "a").close()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True

    def stop(*_):
        threading.Thread(target=srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    port = srv.server_address[1]
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(port))
    import os
    os.replace(tmp, a.port_file)
    try:
        srv.serve_forever(poll_interval=0.2)
    finally:
        srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Stand-in for the Anthropic Messages API, for driving the real Claude Code offline.

Usage:
    python3 standin.py --script SCRIPT.json --log REQUESTS.jsonl --port-file PORTFILE

SCRIPT.json is a list of turns, consumed one per *main-loop* model call, in order:
    {"text": "..."}                                          final answer (stop_reason end_turn)
    {"tool_calls": [{"name": "Bash", "input": {...}}, ...],  tool use (stop_reason tool_use)
     "text": "optional text before the tool calls"}
When the script runs out, the answer is the text "done (script exhausted)".

Which calls consume a turn: POST /v1/messages whose body has a non-empty "tools" list
(Claude Code's main agent loop always sends its tool definitions). Side calls that carry no
tools (title / topic generation, quota probes, ...) are answered with a short text without
consuming a turn. count_tokens, model listing and anything else get a sensible canned answer.
Every request is appended to the log as {"method","path","headers","key","body","kind","turn"}
("key": the API key it presented; "usage": what a messages answer reported).

Speaks both streaming SSE (stream: true, what Claude Code uses) and plain JSON responses.
Stdlib only, Python 3.11+. Exits cleanly on SIGTERM / SIGINT.
"""
import argparse
import gzip
import itertools
import json
import os
import signal
import sys
import threading
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

EXHAUSTED = {"text": "done (script exhausted)"}


class State:
    def __init__(self, script, log_path):
        self.script = script
        self.log_path = log_path
        self.next_turn = 0
        self.lock = threading.Lock()
        self.ids = itertools.count(1)

    def take_turn(self):
        with self.lock:
            i = self.next_turn
            self.next_turn += 1
        if i < len(self.script):
            return i, self.script[i]
        return i, EXHAUSTED

    def log(self, rec):
        line = json.dumps(rec, ensure_ascii=False)
        with self.lock:
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(line + "\n")


def rough_tokens(obj):
    try:
        return max(1, len(json.dumps(obj)) // 4)
    except Exception:
        return 1


def build_blocks(turn):
    """Return (content_blocks, stop_reason) for a script turn."""
    blocks = []
    text = turn.get("text")
    calls = turn.get("tool_calls") or []
    if text:
        blocks.append({"type": "text", "text": text})
    for c in calls:
        blocks.append({
            "type": "tool_use",
            "id": "toolu_" + uuid.uuid4().hex[:24],
            "name": c["name"],
            "input": c.get("input", {}),
        })
    if not blocks:
        blocks.append({"type": "text", "text": ""})
    return blocks, ("tool_use" if calls else "end_turn")


def message_obj(model, blocks, stop_reason, in_tok, out_tok):
    return {
        "id": "msg_" + uuid.uuid4().hex[:24],
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": in_tok,
            "output_tokens": out_tok,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def sse(event, data):
    return ("event: %s\ndata: %s\n\n" % (event, json.dumps(data))).encode()


def sse_body(msg):
    out = []
    start = dict(msg)
    start["content"] = []
    start["stop_reason"] = None
    start["usage"] = dict(msg["usage"], output_tokens=1)
    out.append(sse("message_start", {"type": "message_start", "message": start}))
    for i, b in enumerate(msg["content"]):
        if b["type"] == "text":
            out.append(sse("content_block_start", {"type": "content_block_start", "index": i,
                                                    "content_block": {"type": "text", "text": ""}}))
            t = b["text"]
            # split in two chunks to exercise delta accumulation
            for part in ([t[: len(t) // 2], t[len(t) // 2:]] if len(t) > 1 else [t]):
                out.append(sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                        "delta": {"type": "text_delta", "text": part}}))
        elif b["type"] == "tool_use":
            out.append(sse("content_block_start", {"type": "content_block_start", "index": i,
                                                    "content_block": {"type": "tool_use", "id": b["id"],
                                                                      "name": b["name"], "input": {}}}))
            js = json.dumps(b["input"])
            for part in [js[: len(js) // 2], js[len(js) // 2:]]:
                out.append(sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                        "delta": {"type": "input_json_delta",
                                                                  "partial_json": part}}))
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(sse("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                                     "usage": {"output_tokens": msg["usage"]["output_tokens"]}}))
    out.append(sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "standin/1"
    state = None  # set in main

    def log_message(self, fmt, *args):  # keep stderr quiet
        pass

    def _read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        enc = (self.headers.get("Content-Encoding") or "").lower()
        try:
            if enc == "gzip":
                raw = gzip.decompress(raw)
            elif enc == "deflate":
                raw = zlib.decompress(raw)
        except Exception:
            pass
        if not raw:
            return None
        try:
            return json.loads(raw)
        except Exception:
            return {"_raw": raw.decode("utf-8", "replace")[:4000]}

    def _send(self, code, body, ctype="application/json"):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
        if ctype == "text/event-stream":
            self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(body)

    def _handle(self):
        st = self.state
        body = self._read_body() if self.command in ("POST", "PUT", "PATCH") else None
        path = self.path.split("?", 1)[0].rstrip("/")
        rec = {"method": self.command, "path": self.path,
               "headers": {k.lower(): v for k, v in self.headers.items()
                           if k.lower() not in ("x-api-key", "authorization")},
               "key": self.headers.get("x-api-key")
                      or (self.headers.get("authorization") or "").removeprefix("Bearer "),
               "body": body}

        if self.command == "POST" and path.endswith("/v1/messages/count_tokens"):
            rec["kind"] = "count_tokens"
            st.log(rec)
            return self._send(200, {"input_tokens": rough_tokens(body)})

        if self.command == "POST" and path.endswith("/v1/messages"):
            body = body if isinstance(body, dict) else {}
            model = body.get("model", "claude-standin")
            in_tok = rough_tokens(body.get("messages"))
            if body.get("tools"):
                idx, turn = st.take_turn()
                rec["kind"] = "main"
                rec["turn"] = idx
            else:
                rec["kind"] = "side"
                turn = {"text": "Stand-in side reply"}
            blocks, stop = build_blocks(turn)
            msg = message_obj(model, blocks, stop, in_tok, max(1, rough_tokens(blocks)))
            rec["usage"] = msg["usage"]
            st.log(rec)
            if body.get("stream"):
                return self._send(200, sse_body(msg), "text/event-stream")
            return self._send(200, msg)

        if self.command in ("GET", "HEAD") and path.endswith("/v1/models"):
            rec["kind"] = "models"
            st.log(rec)
            models = [{"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
                      for m in ("claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5")]
            return self._send(200, {"data": models, "has_more": False,
                                    "first_id": models[0]["id"], "last_id": models[-1]["id"]})

        if self.command in ("GET", "HEAD") and path.startswith("/v1/models/"):
            rec["kind"] = "model"
            st.log(rec)
            m = path.rsplit("/", 1)[1]
            return self._send(200, {"type": "model", "id": m, "display_name": m,
                                    "created_at": "2025-01-01T00:00:00Z"})

        rec["kind"] = "other"
        st.log(rec)
        return self._send(404, {"type": "error", "error": {"type": "not_found_error",
                                                           "message": "stand-in: no such endpoint"}})

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--port-file", required=True)
    a = ap.parse_args()
    with open(a.script, encoding="utf-8") as f:
        script = json.load(f)
    if not isinstance(script, list):
        sys.exit("script must be a JSON list of turns")
    Handler.state = State(script, a.log)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True

    def stop(*_):
        threading.Thread(target=srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.replace(tmp, a.port_file)  # atomic: readers never see a partial number
    try:
        srv.serve_forever(poll_interval=0.2)
    finally:
        srv.server_close()


if __name__ == "__main__":
    main()

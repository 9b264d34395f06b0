#!/usr/bin/env python3
"""Scripted stand-in for the OpenAI Responses API, as used by OpenAI Codex CLI.

stdlib only (Python 3.11).

    python3 standin.py --script SCRIPT.json --log REQUESTS.jsonl --port-file PORTFILE

* binds 127.0.0.1 on an ephemeral port and writes the port to PORTFILE once listening;
* SCRIPT.json is a list of turns, consumed one per model call (POST .../responses):
    {"text": "..."}                                  final answer, no tools
    {"tool_calls": [{"name": "exec_command", "input": {"cmd": "ls"}}], "text": "optional"}
    optional extra key "reasoning": "..." emits a reasoning item (summary_text) first.
  Tool names are Codex's own names as listed in the request's "tools" array.
  If the named tool is a *custom* (freeform) tool in the request (e.g. apply_patch), a
  `custom_tool_call` item is emitted whose raw input is `input` if it is a string, else
  input["input"] (or input["patch"]).  Otherwise a `function_call` item is emitted with
  arguments = json.dumps(input).
  When the script is exhausted the answer is the final text "done (script exhausted)".
* appends every request (method, path, headers subset, parsed JSON body) to REQUESTS.jsonl;
* POST .../responses is answered as a streaming SSE Responses API stream;
  GET .../models answers a small model list; anything else gets a harmless JSON answer
  (side calls never consume script turns; all are logged);
* exits cleanly on SIGTERM / SIGINT.
"""
import argparse
import json
import os
import signal
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

EXHAUSTED = {"text": "done (script exhausted)"}


class State:
    def __init__(self, script, log_path):
        self.script = list(script)
        self.index = 0
        self.log_path = log_path
        self.lock = threading.Lock()

    def next_turn(self):
        with self.lock:
            if self.index < len(self.script):
                turn = self.script[self.index]
                self.index += 1
                return turn, self.index - 1
            self.index += 1
            return EXHAUSTED, self.index - 1

    def log(self, record):
        with self.lock:
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record, ensure_ascii=False) + "\n")


def _id(prefix):
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def custom_tool_names(body):
    names = set()
    for tool in (body or {}).get("tools") or []:
        if isinstance(tool, dict) and tool.get("type") == "custom" and tool.get("name"):
            names.add(tool["name"])
    return names


def build_items(turn, body):
    """Return list of Responses API output items for a script turn."""
    items = []
    customs = custom_tool_names(body)
    text = turn.get("text")
    calls = turn.get("tool_calls") or []
    if turn.get("reasoning"):
        items.append({
            "type": "reasoning",
            "id": _id("rs"),
            "summary": [{"type": "summary_text", "text": turn["reasoning"]}],
            "encrypted_content": None,
        })
    if text:
        items.append({
            "type": "message",
            "id": _id("msg"),
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        })
    for call in calls:
        name = call["name"]
        inp = call.get("input", {})
        call_id = call.get("call_id") or _id("call")
        if name in customs or call.get("custom"):
            if isinstance(inp, str):
                raw = inp
            else:
                raw = inp.get("input", inp.get("patch", json.dumps(inp)))
            items.append({
                "type": "custom_tool_call",
                "id": _id("ctc"),
                "status": "completed",
                "call_id": call_id,
                "name": name,
                "input": raw,
            })
        else:
            args = inp if isinstance(inp, str) else json.dumps(inp)
            items.append({
                "type": "function_call",
                "id": _id("fc"),
                "status": "completed",
                "call_id": call_id,
                "name": name,
                "arguments": args,
            })
    return items


def sse(event, data):
    data = dict(data)
    data.setdefault("type", event)
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def response_stream(turn, body):
    resp_id = _id("resp")
    model = (body or {}).get("model", "standin-model")
    seq = 0
    out = []

    def ev(event, data):
        nonlocal seq
        data = dict(data)
        data["sequence_number"] = seq
        seq += 1
        out.append(sse(event, data))

    base = {"id": resp_id, "object": "response", "created_at": int(time.time()),
            "model": model, "status": "in_progress", "output": []}
    ev("response.created", {"response": base})
    ev("response.in_progress", {"response": base})
    items = build_items(turn, body)
    for idx, item in enumerate(items):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            added = dict(item, status="in_progress", content=[])
            ev("response.output_item.added", {"output_index": idx, "item": added})
            ev("response.content_part.added", {"item_id": item["id"], "output_index": idx,
                                               "content_index": 0,
                                               "part": {"type": "output_text", "text": "",
                                                        "annotations": []}})
            # stream text in a few chunks
            step = max(1, len(text) // 3 or 1)
            for i in range(0, len(text), step):
                ev("response.output_text.delta", {"item_id": item["id"], "output_index": idx,
                                                  "content_index": 0,
                                                  "delta": text[i:i + step]})
            ev("response.output_text.done", {"item_id": item["id"], "output_index": idx,
                                             "content_index": 0, "text": text})
            ev("response.content_part.done", {"item_id": item["id"], "output_index": idx,
                                              "content_index": 0,
                                              "part": item["content"][0]})
        elif item["type"] == "function_call":
            added = dict(item, status="in_progress", arguments="")
            ev("response.output_item.added", {"output_index": idx, "item": added})
            ev("response.function_call_arguments.delta", {"item_id": item["id"],
                                                          "output_index": idx,
                                                          "delta": item["arguments"]})
            ev("response.function_call_arguments.done", {"item_id": item["id"],
                                                         "output_index": idx,
                                                         "arguments": item["arguments"]})
        elif item["type"] == "custom_tool_call":
            added = dict(item, status="in_progress", input="")
            ev("response.output_item.added", {"output_index": idx, "item": added})
            ev("response.custom_tool_call_input.delta", {"item_id": item["id"],
                                                         "output_index": idx,
                                                         "delta": item["input"]})
            ev("response.custom_tool_call_input.done", {"item_id": item["id"],
                                                        "output_index": idx,
                                                        "input": item["input"]})
        ev("response.output_item.done", {"output_index": idx, "item": item})
    done = dict(base, status="completed", output=items,
                usage={"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
                       "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 0},
                       "total_tokens": 120})
    ev("response.completed", {"response": done})
    return out


MODELS = {"object": "list", "data": [{"id": "standin-model", "object": "model",
                                       "created": 0, "owned_by": "standin"}],
          "models": []}


def make_handler(state):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # quiet
            pass

        def _body(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self.headers.get("Content-Encoding", "").lower() == "zstd":
                return {"_unparsed_zstd_bytes": len(raw)}
            if self.headers.get("Content-Encoding", "").lower() == "gzip":
                import gzip
                raw = gzip.decompress(raw)
            if not raw:
                return None
            try:
                return json.loads(raw)
            except Exception:
                return {"_raw": raw.decode("utf-8", "replace")}

        def _record(self, body, extra=None):
            rec = {"ts": time.time(), "method": self.command, "path": self.path,
                   "headers": {k.lower(): v for k, v in self.headers.items()
                               if k.lower() in ("content-type", "user-agent", "originator",
                                                "session_id", "accept", "openai-beta",
                                                "x-codex-turn-metadata", "version")},
                   "key": (self.headers.get("authorization") or "").removeprefix("Bearer "),
                   "body": body}
            if extra:
                rec.update(extra)
            state.log(rec)

        def _json(self, code, obj):
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self._record(None)
            path = self.path.split("?")[0]
            if path.endswith("/models"):
                self._json(200, MODELS)
            else:
                self._json(404, {"error": {"message": "not found (standin)"}})

        def do_POST(self):
            body = self._body()
            path = self.path.split("?")[0]
            if path.endswith("/responses"):
                turn, idx = state.next_turn()
                self._record(body, {"turn": idx})
                chunks = response_stream(turn, body)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    for c in chunks:
                        self.wfile.write(c)
                        self.wfile.flush()
                except BrokenPipeError:
                    pass
                self.close_connection = True
            else:
                self._record(body)
                self._json(404, {"error": {"message": "not found (standin)"}})

        def do_DELETE(self):
            self._record(None)
            self._json(404, {"error": {"message": "not found (standin)"}})

    return Handler


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--port-file", required=True)
    args = ap.parse_args()
    # exit cleanly on SIGTERM/SIGINT even before the server is up
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    signal.signal(signal.SIGINT, lambda *a: sys.exit(0))
    with open(args.script, encoding="utf-8") as f:
        script = json.load(f)
    state = State(script, args.log)
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
    server.daemon_threads = True

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    port = server.server_address[1]
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(port))
    os.replace(tmp, args.port_file)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

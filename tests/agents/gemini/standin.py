#!/usr/bin/env python3
"""Stdlib-only stand-in for the Gemini API (generativelanguage v1beta) as used by Gemini CLI.

Usage:
  python3 standin.py --script SCRIPT.json --log REQUESTS.jsonl --port-file PORTFILE

SCRIPT.json: a list of turns, consumed one per *agent* model call, in order:
  {"text": "..."}                                              final answer, no tools
  {"tool_calls": [{"name": "run_shell_command", "input": {...}}], "text": "optional"}
When the script runs out, the answer is the text "done (script exhausted)".

Endpoints (any /v1beta or /v1 or /v1alpha prefix is accepted):
  POST .../models/<m>:streamGenerateContent?alt=sse  -> SSE stream (consumes a turn, unless it is a side call)
  POST .../models/<m>:generateContent                -> JSON     (consumes a turn, unless it is a side call)
  POST .../models/<m>:countTokens                    -> {"totalTokens": N}      (side call)
  POST .../models/<m>:embedContent / batchEmbedContents                        (side call)
  GET  .../models, .../models/<m>                    -> model listing           (side call)
Side calls = any request whose generationConfig asks for JSON output (responseMimeType
application/json or responseJsonSchema): Gemini CLI's model router ("auto" model: a
generateContent call to a flash-lite model wanting {complexity_reasoning, complexity_score}),
LLM loop detection, edit correction, next-speaker checks. They are answered with a JSON object
synthesised from the schema and never consume a script turn. Chat compression (non-JSON
generateContent) WOULD consume a turn, but only happens near the context limit (the stand-in
reports 100 prompt tokens per call, so it never triggers). Every request is logged as one JSON line:
{"method","path","headers","body","kind": turn|side|countTokens|embed|unknown,"turn"?}.
Function calls carry an "id" ("call_<hex>", or the turn's tool_calls[i].id if given); Gemini CLI
echoes it back in functionResponse.id.
"""
import argparse
import json
import os
import signal
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATE = {"turns": [], "next": 0, "log": None}


def log_request(entry):
    with LOCK:
        with open(STATE["log"], "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")


def next_turn():
    with LOCK:
        i = STATE["next"]
        STATE["next"] += 1
        if i < len(STATE["turns"]):
            return i, STATE["turns"][i]
        return i, {"text": "done (script exhausted)"}


def synth_from_schema(schema, key=None):
    """Produce a plausible value for a JSON schema (Gemini CLI utility calls)."""
    if not isinstance(schema, dict):
        return "ok"
    # Known Gemini CLI utility fields: make choices that keep the agent simple.
    if key == "next_speaker":
        return "user"
    if key == "model_choice":
        return "flash"
    if key in ("unproductive_state_detected", "is_loop"):
        return False
    if key == "unproductive_state_confidence" or key == "confidence":
        return 0.0
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "string")
    t = (t or "").lower()
    if t == "object" or "properties" in schema:
        props = schema.get("properties", {}) or {}
        return {k: synth_from_schema(v, k) for k, v in props.items()}
    if t == "array":
        return []
    if t in ("number", "integer"):
        lo = schema.get("minimum", 1)
        return lo if t == "number" else int(lo)
    if t == "boolean":
        return False
    return "ok"


def is_side_call(body):
    gc = (body or {}).get("generationConfig") or {}
    if gc.get("responseMimeType") == "application/json":
        return True
    if gc.get("responseJsonSchema") or gc.get("responseSchema"):
        return True
    return False


def side_answer_text(body):
    gc = (body or {}).get("generationConfig") or {}
    schema = gc.get("responseJsonSchema") or gc.get("responseSchema")
    if schema:
        return json.dumps(synth_from_schema(schema))
    return json.dumps({"reasoning": "stand-in", "next_speaker": "user"})


USAGE = {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}


def turn_to_parts(turn):
    parts = []
    if turn.get("text"):
        parts.append({"text": turn["text"]})
    for tc in turn.get("tool_calls") or []:
        parts.append({"functionCall": {"name": tc["name"], "args": tc.get("input", {}),
                                       "id": tc.get("id") or ("call_" + uuid.uuid4().hex[:12])}})
    if not parts:
        parts.append({"text": ""})
    return parts


def response_obj(parts, model):
    return {
        "candidates": [{"content": {"role": "model", "parts": parts},
                        "finishReason": "STOP", "index": 0}],
        "usageMetadata": USAGE,
        "modelVersion": model,
        "responseId": uuid.uuid4().hex,
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet
        pass

    def _read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw) if raw else None
        except Exception:
            return {"_raw": raw.decode("utf-8", "replace")}

    def _send_json(self, obj, code=200):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_sse(self, objs):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for o in objs:
            self.wfile.write(b"data: " + json.dumps(o).encode() + b"\r\n\r\n")
            self.wfile.flush()
        self.close_connection = True

    def do_GET(self):
        log_request({"method": "GET", "path": self.path, "headers": dict(self.headers), "body": None})
        path = self.path.split("?")[0]
        if path.rstrip("/").endswith("/models"):
            return self._send_json({"models": [{"name": "models/gemini-2.5-pro"},
                                               {"name": "models/gemini-2.5-flash"}]})
        if "/models/" in path:
            name = path.split("/models/", 1)[1]
            return self._send_json({"name": "models/" + name, "inputTokenLimit": 1048576,
                                    "outputTokenLimit": 65536})
        return self._send_json({}, 200)

    def do_POST(self):
        body = self._read_body()
        path = self.path
        p = path.split("?")[0]
        model = p.split("/models/", 1)[1].split(":", 1)[0] if "/models/" in p else "unknown"
        entry = {"method": "POST", "path": path, "headers": dict(self.headers), "body": body}
        if p.endswith(":countTokens"):
            entry["kind"] = "countTokens"
            log_request(entry)
            n = max(1, len(json.dumps(body or {})) // 4)
            return self._send_json({"totalTokens": n})
        if p.endswith(":embedContent") or p.endswith(":batchEmbedContents"):
            entry["kind"] = "embed"
            log_request(entry)
            if p.endswith(":batchEmbedContents"):
                reqs = (body or {}).get("requests", [])
                return self._send_json({"embeddings": [{"values": [0.0] * 8} for _ in reqs]})
            return self._send_json({"embedding": {"values": [0.0] * 8}})
        stream = p.endswith(":streamGenerateContent")
        if not (stream or p.endswith(":generateContent")):
            entry["kind"] = "unknown"
            log_request(entry)
            return self._send_json({"error": {"code": 404, "message": "not found",
                                              "status": "NOT_FOUND"}}, 404)
        if is_side_call(body):
            entry["kind"] = "side"
            log_request(entry)
            resp = response_obj([{"text": side_answer_text(body)}], model)
            return self._send_sse([resp]) if stream else self._send_json(resp)
        idx, turn = next_turn()
        entry["kind"] = "turn"
        entry["turn"] = idx
        log_request(entry)
        parts = turn_to_parts(turn)
        if not stream:
            return self._send_json(response_obj(parts, model))
        # Stream: text first (if any), then function calls, finishReason on the last chunk.
        chunks = []
        for part in parts:
            chunks.append({"candidates": [{"content": {"role": "model", "parts": [part]},
                                           "index": 0}],
                           "modelVersion": model})
        chunks[-1]["candidates"][0]["finishReason"] = "STOP"
        chunks[-1]["usageMetadata"] = USAGE
        return self._send_sse(chunks)


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
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.replace(tmp, a.port_file)
    srv.serve_forever()
    srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

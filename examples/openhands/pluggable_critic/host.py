"""The `critic` host, reached the way `critic check --server` reaches it: a
running `critic serve` (a Unix socket, or http://127.0.0.1:PORT with the token
of CRITIC_SERVER_TOKEN) when one is named and answers, else the `critic`
binary run once per finish. Either way the request names the same things
(see schemas/check-request.schema.json) and the answer is the verdict
(schemas/verdict.schema.json).
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class HostError(RuntimeError):
    """The host could not judge the finish (no skill, a bad manifest, ...)."""


@dataclass
class CriticHost:
    """How to reach the host, and what every check of a session shares."""

    skill: str
    """Skill directory (holds critic.yaml)."""
    workspace: str = "."
    """The agent's git work tree; the host diffs it itself."""
    session: str = "default"
    """State and the rejection count are kept per session."""
    critic_bin: str | None = None
    """The `critic` binary (default: $CRITIC_BIN, else `critic` on PATH)."""
    server: str | None = None
    """A `critic serve` address (default: $CRITIC_SERVER)."""
    state_dir: str | None = None
    max_rejections: int | None = None
    """At most this many rejections per session, whatever the skill allows."""
    timeout: float = 660.0
    extra_args: list[str] = field(default_factory=list)
    """More `critic check` flags for the binary (e.g. ["--deny", "run"])."""
    verdict_log: str | None = None
    """Append each verdict, one JSON line, to this file; checked by the
    binary, the patch it judged is also kept as round-<iteration>/patch.diff
    beside it (`critic check --verdict-log`)."""

    def check(
        self,
        events: list[dict[str, Any]] | None = None,
        *,
        events_file: str | None = None,
        events_format: str | None = None,
    ) -> dict[str, Any]:
        """The verdict on a finish whose event stream is `events` (OpenHands
        SDK events, as dicts) or the transcript `events_file` (in
        `events_format`, detected when None)."""
        request: dict[str, Any] = {
            "skill": os.path.abspath(self.skill),
            "workspace": os.path.abspath(self.workspace),
            "session": self.session,
        }
        if events_file is not None:
            request["events"] = os.path.abspath(events_file)
        else:
            request["events_inline"] = events or []
        if events_format:
            request["events_format"] = events_format
        if self.state_dir:
            request["state_dir"] = os.path.abspath(self.state_dir)
        if self.max_rejections is not None:
            request["max_rejections"] = self.max_rejections
        server = self.server or os.environ.get("CRITIC_SERVER")
        if server:
            verdict = self._ask_server(server, request)
            if verdict is not None:
                # A server judges elsewhere: the verdict is logged here,
                # without the patch.
                if self.verdict_log:
                    with open(self.verdict_log, "a", encoding="utf-8") as log:
                        log.write(json.dumps(verdict) + "\n")
                return verdict
        return self._run_binary(request)

    def _ask_server(self, address: str, request: dict[str, Any]) -> dict[str, Any] | None:
        """The server's verdict; None when no server takes the request (the
        binary is asked instead, as `critic check --server` does)."""
        body = json.dumps(request).encode()
        headers = {"content-type": "application/json"}
        if address.startswith("http://"):
            host, _, port = address[len("http://"):].rstrip("/").rpartition(":")
            conn: http.client.HTTPConnection = http.client.HTTPConnection(host, int(port), timeout=self.timeout)
            token = os.environ.get("CRITIC_SERVER_TOKEN")
            if token:
                headers["authorization"] = f"Bearer {token}"
        else:
            conn = _UnixConnection(address.removeprefix("unix:"), self.timeout)
        try:
            conn.request("POST", "/v1/check", body=body, headers=headers)
        except OSError:
            return None
        try:
            response = conn.getresponse()
            text = response.read().decode()
        finally:
            conn.close()
        if response.status == 503:
            return None
        answer = json.loads(text) if text else {}
        if response.status != 200:
            raise HostError(f"critic serve answered {response.status}: {answer.get('error', text)}")
        return answer

    def _run_binary(self, request: dict[str, Any]) -> dict[str, Any]:
        critic = self.critic_bin or os.environ.get("CRITIC_BIN") or shutil.which("critic")
        if not critic:
            raise HostError("no `critic` binary: put it on PATH, or set critic_bin / CRITIC_BIN")
        inline = "events_inline" in request
        if inline:
            with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
                for event in request["events_inline"]:
                    f.write(json.dumps(event) + "\n")
                events_file = f.name
        else:
            events_file = request["events"]
        args = [critic, "check", "--output", "json", "--skill", request["skill"],
                "--workspace", request["workspace"], "--events", events_file,
                "--session", request["session"]]
        if "events_format" in request or inline:
            args += ["--events-format", request.get("events_format", "openhands")]
        if "max_rejections" in request:
            args += ["--max-rejections", str(request["max_rejections"])]
        if "state_dir" in request:
            args += ["--state-dir", request["state_dir"]]
        if self.verdict_log:
            args += ["--verdict-log", os.path.abspath(self.verdict_log)]
        args += self.extra_args
        try:
            done = subprocess.run(args, capture_output=True, text=True, timeout=self.timeout)
        finally:
            if inline:
                Path(events_file).unlink(missing_ok=True)
        # 0 accept, 1 reject: both carry the verdict; 2 is the host's error.
        if done.returncode not in (0, 1):
            raise HostError(done.stderr.strip() or f"critic exited {done.returncode}")
        return json.loads(done.stdout)


class _UnixConnection(http.client.HTTPConnection):
    """HTTP over a Unix socket."""

    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock

"""The host's services, with the Rust SDK's names: `log`, `read_file`,
`read_file_string`, `run`, `run_matrix`, `llm_complete`, and the event
stream. Each but the events is a capability: the skill declares it in
`critic.yaml`, the user may deny it, and a call without it raises
`HostError` with the host's reason.

Inside a component the calls go to the host through the WIT imports. In a
native test (`critic_sdk.testing.TestInput`) they go to a `NativeHost`, which
answers `run` and `llm_complete` only when the test gives it a stand-in.
"""

from __future__ import annotations

import enum
import json
from typing import Any, Callable, Optional, Protocol

from .protocol import Event, LlmRequest, LlmResult, RunRequest, RunResult


class HostError(Exception):
    """A host call failed; the message is the host's (a capability not
    granted, a path outside the workspace, a command that could not start)."""


class LogLevel(enum.IntEnum):
    TRACE = 0
    DEBUG = 1
    INFO = 2
    WARN = 3
    ERROR = 4


class Backend(Protocol):
    """What answers the host calls: the WIT imports, or a native stand-in."""

    def log(self, level: LogLevel, message: str) -> None: ...
    def read_file(self, path: str) -> bytes: ...
    def run(self, request: str) -> str: ...
    def run_matrix(self, requests: str) -> str: ...
    def llm_complete(self, requests: str) -> str: ...
    def events(self) -> str: ...
    def event_count(self) -> int: ...
    def events_range(self, start: int, end: int) -> str: ...


class NativeHost:
    """The host of a native test: logs are kept in `logs`, files come from
    `files`, and `run`/`llm_complete` call the stand-ins given, if any. A
    call the test did not provide for fails as a denied capability would."""

    def __init__(
        self,
        events: Optional[list[Event]] = None,
        files: Optional[dict[str, bytes]] = None,
        on_run: Optional[Callable[[RunRequest], RunResult]] = None,
        on_llm: Optional[Callable[[LlmRequest], LlmResult]] = None,
    ):
        self._events = list(events or [])
        self.files = dict(files or {})
        self.on_run = on_run
        self.on_llm = on_llm
        self.logs: list[tuple[LogLevel, str]] = []

    def log(self, level: LogLevel, message: str) -> None:
        self.logs.append((level, message))

    def read_file(self, path: str) -> bytes:
        if path not in self.files:
            raise HostError(f"{path}: no such file in the test's workspace")
        return self.files[path]

    def run(self, request: str) -> str:
        if self.on_run is None:
            raise HostError("capability `run` has no stand-in in this native test (TestInput.on_run)")
        return json.dumps(self.on_run(_run_request(json.loads(request))).to_json())

    def run_matrix(self, requests: str) -> str:
        return "[" + ",".join(self.run(json.dumps(r)) for r in json.loads(requests)) + "]"

    def llm_complete(self, requests: str) -> str:
        if self.on_llm is None:
            raise HostError("capability `llm-complete` has no stand-in in this native test (TestInput.on_llm)")
        answers = []
        for r in json.loads(requests):
            from .protocol import ChatMessage
            request = LlmRequest(
                messages=[ChatMessage(m["role"], m["content"]) for m in r["messages"]],
                temperature=r.get("temperature"), max_tokens=r.get("max_tokens"),
                sample=r.get("sample", 0),
            )
            answers.append(self.on_llm(request).to_json())
        return json.dumps(answers)

    def events(self) -> str:
        return json.dumps([e.to_json() for e in self._events])

    def event_count(self) -> int:
        return len(self._events)

    def events_range(self, start: int, end: int) -> str:
        return json.dumps([e.to_json() for e in self._events[start:end]])


def _run_request(value: dict) -> RunRequest:
    return RunRequest(
        argv=value["argv"], patch=value.get("patch"), files=value.get("files", {}),
        env=value.get("env", {}), cwd=value.get("cwd"), timeout_ms=value.get("timeout_ms"),
        output_bytes=value.get("output_bytes"),
    )


_backend: Optional[Backend] = None


def use(backend: Optional[Backend]) -> Optional[Backend]:
    """Route the host calls to `backend`; returns the one it replaces."""
    global _backend
    previous, _backend = _backend, backend
    return previous


def _host() -> Backend:
    if _backend is None:
        raise HostError("no host: run the detector in a component, or through critic_sdk.testing.TestInput")
    return _backend


def _call(name: str, *args: Any) -> Any:
    try:
        return getattr(_host(), name)(*args)
    except HostError:
        raise
    except Exception as e:  # the component's Err(...) carries the host's reason
        reason = getattr(e, "value", None)
        raise HostError(reason if isinstance(reason, str) else str(e)) from None


def log(level: LogLevel, message: str) -> None:
    """Capability `log`: a line in the host's log, tagged with the signal."""
    _call("log", level, message)


def read_file(path: str) -> bytes:
    """Capability `read-file`: a workspace file's bytes, by relative path."""
    return _call("read_file", path)


def read_file_string(path: str) -> str:
    """`read_file`, decoded as UTF-8 (a file that is not is an error)."""
    data = read_file(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise HostError(f"{path}: not UTF-8 ({e})") from None


def run(request: RunRequest) -> RunResult:
    """Capability `run`: one command in a scratch copy of the workspace."""
    return RunResult.from_json(json.loads(_call("run", json.dumps(request.to_json()))))


def run_matrix(requests: list[RunRequest]) -> list[RunResult]:
    """Capability `run-matrix`: commands in parallel, results in order."""
    wire = json.dumps([r.to_json() for r in requests])
    return [RunResult.from_json(v) for v in json.loads(_call("run_matrix", wire))]


def llm_complete(requests: list[LlmRequest]) -> list[LlmResult]:
    """Capability `llm-complete`: chat completions from the model the user
    configured, in order (the key never reaches the detector)."""
    wire = json.dumps([r.to_json() for r in requests])
    return [LlmResult.from_json(v) for v in json.loads(_call("llm_complete", wire))]


def events() -> list[Event]:
    """The whole event stream. Always allowed."""
    return [Event.from_json(v) for v in json.loads(_call("events"))]


def event_count() -> int:
    """How many events the stream has. Always allowed."""
    return _call("event_count")


def events_range(start: int, end: int) -> list[Event]:
    """Events `start` up to `end`, clamped to the stream. Always allowed."""
    # The WIT call takes u32 bounds; clamped here, as the host clamps to the stream.
    start, end = (min(max(int(b), 0), 0xFFFF_FFFF) for b in (start, end))
    return [Event.from_json(v) for v in json.loads(_call("events_range", start, end))]

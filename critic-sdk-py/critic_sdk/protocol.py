"""The typed form of what crosses the `critic:detector@0.1.0` boundary.

The host sends a detector a JSON `DetectorInput` (here: `Finish`) and reads a
JSON `DetectorOutput` (here: `Verdict`); `run`, `run-matrix` and
`llm-complete` take and give JSON too. These dataclasses mirror the Rust SDK's
`protocol` module field for field, so a skill reads the same in either
language. Decoding ignores fields it does not know: a newer host may send more.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

#: The WIT package version this SDK speaks.
API_VERSION = "0.1.0"


class EventKind(str, enum.Enum):
    """The kind of a normalized event."""

    MESSAGE = "message"
    ACTION = "action"
    OBSERVATION = "observation"
    FINISH = "finish"
    ERROR = "error"
    SYSTEM = "system"
    OTHER = "other"


class FileStatus(str, enum.Enum):
    """How a file changed."""

    ADDED = "added"
    MODIFIED = "modified"
    DELETED = "deleted"
    RENAMED = "renamed"
    COPIED = "copied"


class LineKind(str, enum.Enum):
    """Whether a diff line was added, removed or kept."""

    ADDED = "added"
    REMOVED = "removed"
    CONTEXT = "context"


class PatchOrigin(str, enum.Enum):
    """Where the patch came from: the work tree (the workspace holds the
    patched files) or a file given to the host (it holds the base files)."""

    WORKTREE = "worktree"
    FILE = "file"


def _enum(kind: type[enum.Enum], value: Any, default: enum.Enum) -> Any:
    try:
        return kind(value)
    except ValueError:
        return default


@dataclass
class Event:
    """One event of an agent's trajectory, normalized across agent formats."""

    index: int
    kind: EventKind
    original_kind: Optional[str] = None
    source: Optional[str] = None
    tool: Optional[str] = None
    call_id: Optional[str] = None
    arguments: Any = None
    text: Optional[str] = None
    output: Optional[str] = None
    exit_code: Optional[int] = None
    timestamp: Optional[str] = None

    @classmethod
    def from_json(cls, value: dict) -> "Event":
        return cls(
            index=int(value.get("index", 0)),
            kind=_enum(EventKind, value.get("kind"), EventKind.OTHER),
            original_kind=value.get("original_kind"),
            source=value.get("source"),
            tool=value.get("tool"),
            call_id=value.get("call_id"),
            arguments=value.get("arguments"),
            text=value.get("text"),
            output=value.get("output"),
            exit_code=value.get("exit_code"),
            timestamp=value.get("timestamp"),
        )

    def to_json(self) -> dict:
        out: dict[str, Any] = {"index": self.index, "kind": self.kind.value}
        for name in ("original_kind", "source", "tool", "call_id", "arguments",
                     "text", "output", "exit_code", "timestamp"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out

    @property
    def command(self) -> Optional[str]:
        """The shell command of a terminal/bash action, if this is one."""
        if self.kind != EventKind.ACTION or not isinstance(self.arguments, dict):
            return None
        args = self.arguments
        command = args["command"] if "command" in args else args.get("cmd")
        return command if isinstance(command, str) else None


@dataclass
class Line:
    """One line of a hunk, without its `+`/`-`/` ` prefix."""

    kind: LineKind
    text: str
    old_line: Optional[int] = None
    new_line: Optional[int] = None

    @classmethod
    def from_json(cls, value: dict) -> "Line":
        return cls(
            kind=_enum(LineKind, value.get("kind"), LineKind.CONTEXT),
            text=value.get("text", ""),
            old_line=value.get("old_line"),
            new_line=value.get("new_line"),
        )

    def to_json(self) -> dict:
        out: dict[str, Any] = {"kind": self.kind.value, "text": self.text}
        if self.old_line is not None:
            out["old_line"] = self.old_line
        if self.new_line is not None:
            out["new_line"] = self.new_line
        return out


@dataclass
class Hunk:
    """One hunk of a file's diff."""

    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    section: str = ""
    lines: list[Line] = field(default_factory=list)

    @classmethod
    def from_json(cls, value: dict) -> "Hunk":
        return cls(
            old_start=value.get("old_start", 0),
            old_lines=value.get("old_lines", 0),
            new_start=value.get("new_start", 0),
            new_lines=value.get("new_lines", 0),
            section=value.get("section", ""),
            lines=[Line.from_json(v) for v in value.get("lines", [])],
        )

    def to_json(self) -> dict:
        out: dict[str, Any] = {
            "old_start": self.old_start, "old_lines": self.old_lines,
            "new_start": self.new_start, "new_lines": self.new_lines,
            "lines": [line.to_json() for line in self.lines],
        }
        if self.section:
            out["section"] = self.section
        return out


@dataclass
class FileChange:
    """One file of the patch."""

    path: str
    status: FileStatus
    old_path: Optional[str] = None
    binary: bool = False
    is_test: bool = False
    """Whether the path matches the skill's test-file patterns."""
    added: int = 0
    removed: int = 0
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def is_source(self) -> bool:
        """A changed file that is not a test (the host's classification)."""
        return not self.is_test

    def added_lines(self) -> list[tuple[int, str]]:
        """(new line number, text) of every added line."""
        return [(ln.new_line or 0, ln.text) for h in self.hunks for ln in h.lines
                if ln.kind == LineKind.ADDED]

    def removed_lines(self) -> list[tuple[int, str]]:
        """(old line number, text) of every removed line."""
        return [(ln.old_line or 0, ln.text) for h in self.hunks for ln in h.lines
                if ln.kind == LineKind.REMOVED]

    @classmethod
    def from_json(cls, value: dict) -> "FileChange":
        return cls(
            path=value.get("path", ""),
            status=_enum(FileStatus, value.get("status"), FileStatus.MODIFIED),
            old_path=value.get("old_path"),
            binary=bool(value.get("binary", False)),
            is_test=bool(value.get("is_test", False)),
            added=value.get("added", 0),
            removed=value.get("removed", 0),
            hunks=[Hunk.from_json(v) for v in value.get("hunks", [])],
        )

    def to_json(self) -> dict:
        out: dict[str, Any] = {
            "path": self.path, "status": self.status.value, "binary": self.binary,
            "is_test": self.is_test, "added": self.added, "removed": self.removed,
            "hunks": [h.to_json() for h in self.hunks],
        }
        if self.old_path is not None:
            out["old_path"] = self.old_path
        return out


@dataclass
class Patch:
    """The working-tree diff at finish time, parsed per file."""

    base: str = ""
    raw: str = ""
    files: list[FileChange] = field(default_factory=list)
    origin: PatchOrigin = PatchOrigin.WORKTREE

    def is_empty(self) -> bool:
        return not self.files

    def test_files(self) -> list[FileChange]:
        """Changed files the skill's patterns call tests."""
        return [f for f in self.files if f.is_test]

    def source_files(self) -> list[FileChange]:
        """Changed files that are not tests."""
        return [f for f in self.files if not f.is_test]

    @classmethod
    def from_json(cls, value: dict) -> "Patch":
        return cls(
            base=value.get("base", ""),
            raw=value.get("raw", ""),
            files=[FileChange.from_json(v) for v in value.get("files", [])],
            origin=_enum(PatchOrigin, value.get("origin"), PatchOrigin.WORKTREE),
        )

    def to_json(self) -> dict:
        return {"base": self.base, "origin": self.origin.value, "raw": self.raw,
                "files": [f.to_json() for f in self.files]}


@dataclass
class SkillInfo:
    """Name and version of the running skill."""

    name: str
    version: str


@dataclass
class Artifact:
    """A file the host writes for the agent under `.critic/feedback/<skill>/`."""

    path: str
    content: str


@dataclass
class Verdict:
    """A detector's answer: whether its signal fires, why, and the state to
    keep until the next finish (the Rust SDK's `DetectorOutput`)."""

    triggered: bool = False
    followup_text: Optional[str] = None
    """What the agent reads next when the signal fires."""
    metadata: Any = None
    """Evidence copied into the verdict; a string under `summary` is printed."""
    state: Any = None
    """State for the next call of this detector in the session; None keeps the
    previous one."""
    artifacts: list[Artifact] = field(default_factory=list)

    @classmethod
    def accept(cls, metadata: Any = None, state: Any = None) -> "Verdict":
        """Not triggered (the Rust SDK's `DetectorOutput::pass`)."""
        return cls(triggered=False, metadata=metadata, state=state)

    @classmethod
    def fire(cls, followup: str, metadata: Any = None, state: Any = None) -> "Verdict":
        """Triggered, with the text the agent should read next."""
        return cls(triggered=True, followup_text=followup, metadata=metadata, state=state)

    def with_artifact(self, path: str, content: str) -> "Verdict":
        """Hand the host a file to write for the agent."""
        self.artifacts.append(Artifact(path, content))
        return self

    def to_json(self) -> dict:
        out: dict[str, Any] = {"triggered": bool(self.triggered)}
        if self.metadata is not None:
            out["metadata"] = self.metadata
        if self.followup_text is not None:
            out["followup_text"] = self.followup_text
        if self.state is not None:
            out["state"] = self.state
        if self.artifacts:
            out["artifacts"] = [{"path": a.path, "content": a.content} for a in self.artifacts]
        return out

    @classmethod
    def from_json(cls, value: dict) -> "Verdict":
        return cls(
            triggered=bool(value.get("triggered", False)),
            followup_text=value.get("followup_text"),
            metadata=value.get("metadata"),
            state=value.get("state"),
            artifacts=[Artifact(a["path"], a["content"]) for a in value.get("artifacts", [])],
        )


@dataclass
class RunRequest:
    """A command to run in a scratch copy of the workspace at the patch's base
    (capabilities `run`, `run-matrix`): `patch` applied, `files` written
    (None deletes), then `argv` run in `cwd`. `{scratch}` in `argv`, `env`
    values and `cwd` is the scratch copy's path."""

    argv: list[str]
    patch: Optional[str] = None
    files: dict[str, Optional[str]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    cwd: Optional[str] = None
    timeout_ms: Optional[int] = None
    output_bytes: Optional[int] = None

    def to_json(self) -> dict:
        out: dict[str, Any] = {"argv": list(self.argv)}
        if self.patch is not None:
            out["patch"] = self.patch
        if self.files:
            out["files"] = dict(self.files)
        if self.env:
            out["env"] = dict(self.env)
        for name in ("cwd", "timeout_ms", "output_bytes"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out


@dataclass
class RunResult:
    """What a run did."""

    exit_code: Optional[int] = None
    signal: Optional[int] = None
    timed_out: bool = False
    stdout: str = ""
    stderr: str = ""
    duration_ms: float = 0.0
    error: Optional[str] = None
    """Why the command could not run at all (the patch did not apply...)."""

    @property
    def passed(self) -> bool:
        """Ran, and exited 0 in time."""
        return self.error is None and not self.timed_out and self.exit_code == 0

    @classmethod
    def from_json(cls, value: dict) -> "RunResult":
        return cls(
            exit_code=value.get("exit_code"), signal=value.get("signal"),
            timed_out=bool(value.get("timed_out", False)), stdout=value.get("stdout", ""),
            stderr=value.get("stderr", ""), duration_ms=value.get("duration_ms", 0.0),
            error=value.get("error"),
        )

    def to_json(self) -> dict:
        out: dict[str, Any] = {"timed_out": self.timed_out, "stdout": self.stdout,
                               "stderr": self.stderr, "duration_ms": self.duration_ms}
        for name in ("exit_code", "signal", "error"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out


@dataclass
class ChatMessage:
    role: str
    content: str


@dataclass
class LlmRequest:
    """One chat completion for capability `llm-complete`; the host adds the
    model and the key. `sample` tells repeated requests apart in the cache."""

    messages: list[ChatMessage]
    temperature: Optional[float] = None
    max_tokens: Optional[int] = None
    sample: int = 0

    def to_json(self) -> dict:
        out: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in self.messages],
        }
        if self.temperature is not None:
            out["temperature"] = self.temperature
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
        if self.sample:
            out["sample"] = self.sample
        return out


@dataclass
class LlmResult:
    """The model's answer, or why there is none."""

    content: Optional[str] = None
    error: Optional[str] = None
    cached: bool = False

    @classmethod
    def from_json(cls, value: dict) -> "LlmResult":
        return cls(content=value.get("content"), error=value.get("error"),
                   cached=bool(value.get("cached", False)))

    def to_json(self) -> dict:
        out: dict[str, Any] = {"cached": self.cached}
        if self.content is not None:
            out["content"] = self.content
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass
class Finish:
    """What the host hands a detector at a finish (the Rust SDK's
    `DetectorInput`): the skill and signal, the signal's config, the state
    this detector kept, the finish's number and session, and the patch. The
    events are fetched from the host on first use."""

    api_version: str
    skill: SkillInfo
    signal: str
    config: Any
    state: Any
    iteration: int
    session: str
    patch: Patch
    inline_events: Optional[list[Event]] = None
    _fetched: Optional[list[Event]] = field(default=None, repr=False)

    @classmethod
    def from_json(cls, value: dict) -> "Finish":
        skill = value.get("skill") or {}
        events = value.get("events")
        return cls(
            api_version=value.get("api_version", ""),
            skill=SkillInfo(skill.get("name", ""), skill.get("version", "")),
            signal=value.get("signal", ""),
            config=value.get("config"),
            state=value.get("state"),
            iteration=int(value.get("iteration", 1)),
            session=value.get("session", ""),
            patch=Patch.from_json(value.get("patch") or {}),
            inline_events=None if events is None else [Event.from_json(e) for e in events],
        )

    def to_json(self) -> dict:
        out: dict[str, Any] = {
            "api_version": self.api_version,
            "skill": {"name": self.skill.name, "version": self.skill.version},
            "signal": self.signal, "config": self.config, "state": self.state,
            "iteration": self.iteration, "session": self.session,
            "patch": self.patch.to_json(),
        }
        if self.inline_events is not None:
            out["events"] = [e.to_json() for e in self.inline_events]
        return out

    @property
    def events(self) -> list[Event]:
        """The whole event stream (fetched from the host once)."""
        if self.inline_events is not None:
            return self.inline_events
        if self._fetched is None:
            from . import host
            self._fetched = host.events()
        return self._fetched

    def event_count(self) -> int:
        """How many events the stream has, without fetching them."""
        if self.inline_events is not None:
            return len(self.inline_events)
        if self._fetched is not None:
            return len(self._fetched)
        from . import host
        return host.event_count()

    def events_from_last(self, pred: Callable[[Event], bool]) -> list[Event]:
        """The events from the last one matching `pred` to the end (all of
        them when none matches), fetching only that tail from the host."""
        known = self.inline_events if self.inline_events is not None else self._fetched
        if known is not None:
            start = max((i for i, e in enumerate(known) if pred(e)), default=0)
            return list(known[start:])
        from . import host
        tail: list[Event] = []
        start, chunk = self.event_count(), 16
        while start > 0:
            begin = max(0, start - chunk)
            part = host.events_range(begin, start)
            found = max((i for i, e in enumerate(part) if pred(e)), default=None)
            tail = part + tail
            start = begin
            if found is not None:
                tail = tail[found:]
                break
            chunk *= 2
        return tail

    def config_as(self, defaults: dict[str, Any]) -> dict[str, Any]:
        """The signal's config over `defaults`; a key `defaults` does not have
        is an error naming the signal (the Rust SDK's `deny_unknown_fields`)."""
        config = {} if self.config is None else self.config
        if not isinstance(config, dict):
            raise ValueError(f"invalid config for signal '{self.signal}': expected a mapping")
        unknown = sorted(set(config) - set(defaults))
        if unknown:
            raise ValueError(
                f"invalid config for signal '{self.signal}': unknown field `{unknown[0]}`, "
                f"expected one of {', '.join('`' + k + '`' for k in defaults)}"
            )
        return {**defaults, **config}


#: The Rust SDK's names, for authors who know it.
DetectorInput = Finish
DetectorOutput = Verdict

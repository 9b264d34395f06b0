"""Questions detectors ask of a trajectory every day (the Rust SDK's
`helpers`, with the same names and answers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

from .diff import WHITESPACE
from .protocol import Event, EventKind

#: Tool names (across the supported agents) whose calls edit files.
FILE_EDIT_TOOLS = frozenset({
    "str_replace_editor", "file_editor", "edit_file", "write_file", "create_file",
    "apply_patch", "Edit", "MultiEdit", "Write", "NotebookEdit", "edit", "write",
    "replace", "create", "search_replace",
})

#: Sub-commands of editor tools that only read.
_READ_ONLY_EDITOR_COMMANDS = frozenset({"view"})


@dataclass
class CommandRun:
    """A shell command the agent ran, with its result when the stream has one."""

    index: int
    """Index of the action event."""
    command: str
    exit_code: Optional[int] = None
    output: Optional[str] = None


def commands(events: list[Event]) -> list[CommandRun]:
    """Every shell command the agent ran, paired with its observation: by
    `call_id` when both have one, else the next observation."""
    runs = []
    for pos, action in enumerate(events):
        command = action.command
        if command is None:
            continue
        observation = next(
            (e for e in events[pos + 1:] if e.kind == EventKind.OBSERVATION
             and (action.call_id is None or e.call_id is None or action.call_id == e.call_id)),
            None,
        )
        runs.append(CommandRun(
            index=action.index, command=command,
            exit_code=observation.exit_code if observation else None,
            output=observation.output if observation else None,
        ))
    return runs


def is_file_edit(event: Event) -> bool:
    """Whether an action edits files."""
    if event.kind != EventKind.ACTION or event.tool not in FILE_EDIT_TOOLS:
        return False
    sub = event.arguments.get("command") if isinstance(event.arguments, dict) else None
    return not (isinstance(sub, str) and sub in _READ_ONLY_EDITOR_COMMANDS)


def last_file_edit(events: list[Event]) -> Optional[int]:
    """Index of the last event that edited a file."""
    return next((e.index for e in reversed(events) if is_file_edit(e)), None)


def last_finish_message(events: list[Event]) -> Optional[str]:
    """The text of the last finish event, if the agent finished."""
    return next((e.text or "" for e in reversed(events) if e.kind == EventKind.FINISH), None)


def finished(events: list[Event]) -> bool:
    """Whether the stream's last action is a finish."""
    last = next((e for e in reversed(events)
                 if e.kind in (EventKind.ACTION, EventKind.FINISH)), None)
    return last is not None and last.kind == EventKind.FINISH


def first_user_message(events: list[Event]) -> Optional[str]:
    """The first message the user sent (usually the task statement)."""
    return next((e.text for e in events
                 if e.kind == EventKind.MESSAGE and e.source == "user"), None)


def issue_description(prompt: str) -> Optional[str]:
    """The text inside `<issue_description>...</issue_description>`, trimmed."""
    open_tag, close_tag = "<issue_description>", "</issue_description>"
    start = prompt.find(open_tag)
    if start < 0:
        return None
    start += len(open_tag)
    end = prompt.find(close_tag, start)
    return None if end < 0 else prompt[start:end].strip(WHITESPACE)


def tool_calls(events: list[Event], name: str) -> Iterator[Event]:
    """Every action that called the tool `name`."""
    return (e for e in events if e.kind == EventKind.ACTION and e.tool == name)

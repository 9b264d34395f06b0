"""Write PluggableCritic detectors in Python.

A detector is one function, `detect(finish: Finish) -> Verdict`, in a
skill's `detector/app.py`; `critic build` makes it a WebAssembly component
with componentize-py, and the host runs it under the same sandbox, limits and
capabilities as a Rust detector. See docs/authoring.md.
"""

from .detector import DetectorFailed, run_detector
from .diff import DiffError
from .helpers import (FILE_EDIT_TOOLS, CommandRun, commands, finished, first_user_message,
                      is_file_edit, issue_description, last_file_edit, last_finish_message,
                      tool_calls)
from .host import (HostError, LogLevel, event_count, events, events_range, llm_complete, log,
                   read_file, read_file_string, run, run_matrix)
from .protocol import (API_VERSION, Artifact, ChatMessage, DetectorInput, DetectorOutput, Event,
                       EventKind, FileChange, FileStatus, Finish, Hunk, Line, LineKind,
                       LlmRequest, LlmResult, Patch, PatchOrigin, RunRequest, RunResult,
                       SkillInfo, Verdict)

__all__ = [
    "API_VERSION", "Artifact", "ChatMessage", "CommandRun", "DetectorFailed", "DetectorInput",
    "DetectorOutput", "DiffError", "Event", "EventKind", "FILE_EDIT_TOOLS", "FileChange",
    "FileStatus", "Finish", "HostError", "Hunk", "Line", "LineKind", "LlmRequest", "LlmResult",
    "LogLevel", "Patch", "PatchOrigin", "RunRequest", "RunResult", "SkillInfo", "Verdict",
    "commands", "event_count", "events", "events_range", "finished", "first_user_message",
    "is_file_edit", "issue_description", "last_file_edit", "last_finish_message", "llm_complete",
    "log", "read_file", "read_file_string", "run", "run_detector", "run_matrix", "tool_calls",
]

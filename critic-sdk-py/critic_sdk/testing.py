"""`TestInput`: a detector's input for its native tests (plain pytest, no
WebAssembly), built from a diff and a few events instead of wire JSON.

    from critic_sdk.testing import TestInput

    out = TestInput().diff(DIFF).command("pytest -q", 0, "1 passed").run(detect)
    assert not out.triggered
"""

from __future__ import annotations

import json
from typing import Any, Callable, Optional

from . import diff as _diff
from . import glob, host
from .detector import Detect, run_detector
from .protocol import (API_VERSION, Event, EventKind, Finish, LlmRequest, LlmResult,
                       Patch, RunRequest, RunResult, SkillInfo, Verdict)


class TestInput:
    """A detector input under construction. Every field has a harmless
    default: signal and skill `test`, finish 1, no config or state, an empty
    patch, no events, and a host that answers no `run` or `llm_complete`.
    Its host grants every call the test gives it a stand-in for: capabilities
    are the manifest's business, checked only by the real host."""

    __test__ = False  # not a pytest test class

    def __init__(self) -> None:
        self._finish = Finish(
            api_version=API_VERSION, skill=SkillInfo("test", "0.1.0"), signal="test",
            config=None, state=None, iteration=1, session="test", patch=Patch(),
        )
        self._events: list[Event] = []
        self._is_test: Callable[[str], bool] = glob.is_test
        self._files: dict[str, bytes] = {}
        self._on_run: Optional[Callable[[RunRequest], RunResult]] = None
        self._on_llm: Optional[Callable[[LlmRequest], LlmResult]] = None
        #: The host of the last `run`: its `logs` are what the detector logged.
        self.host: Optional[host.NativeHost] = None

    def config(self, config: Any) -> "TestInput":
        """The signal's `config`."""
        self._finish.config = config
        return self

    def state(self, state: Any) -> "TestInput":
        """The state the detector returned on its previous call."""
        self._finish.state = state
        return self

    def iteration(self, iteration: int) -> "TestInput":
        """The 1-based finish number within the session."""
        self._finish.iteration = iteration
        return self

    def signal(self, name: str) -> "TestInput":
        self._finish.signal = name
        return self

    def tests_are(self, is_test: Callable[[str], bool] | list[str]) -> "TestInput":
        """Which paths count as tests: a predicate, or glob patterns read as
        the host reads the skill's `test_patterns` (default: the host's
        defaults, `glob.DEFAULT_TEST_PATTERNS`)."""
        if isinstance(is_test, list):
            patterns = tuple(is_test)
            self._is_test = lambda p: glob.is_test(p, patterns)
        else:
            self._is_test = is_test
        return self

    def diff(self, unified: str) -> "TestInput":
        """The patch, from a unified diff as `git diff` prints it. A diff that
        does not parse raises `DiffError`: the test's own input is wrong."""
        self._finish.patch = Patch(base="0" * 40, raw=unified, files=_diff.parse(unified))
        return self

    def file(self, path: str, content: str | bytes) -> "TestInput":
        """A workspace file `read_file` can read."""
        self._files[path] = content.encode() if isinstance(content, str) else content
        return self

    def on_run(self, answer: Callable[[RunRequest], RunResult]) -> "TestInput":
        """What `run` and `run_matrix` answer (a stand-in for the host's runs)."""
        self._on_run = answer
        return self

    def on_llm(self, answer: Callable[[LlmRequest], LlmResult]) -> "TestInput":
        """What `llm_complete` answers (a stand-in for the model)."""
        self._on_llm = answer
        return self

    def event(self, event: Event) -> "TestInput":
        """One more event, its index set to its place in the stream."""
        event.index = len(self._events)
        self._events.append(event)
        return self

    def message(self, source: str, text: str) -> "TestInput":
        """A message from `source` (`user`, `agent`, ...)."""
        return self.event(Event(0, EventKind.MESSAGE, source=source, text=text))

    def command(self, command: str, exit_code: int, output: str) -> "TestInput":
        """A shell command the agent ran, and its result."""
        call = f"call-{len(self._events)}"
        self.event(Event(0, EventKind.ACTION, source="agent", tool="terminal", call_id=call,
                         arguments={"command": command}))
        return self.event(Event(0, EventKind.OBSERVATION, source="environment", tool="terminal",
                                call_id=call, output=output, exit_code=exit_code))

    def edit(self, path: str, tool: str = "str_replace_editor") -> "TestInput":
        """A file edit by the agent's editor tool."""
        return self.event(Event(0, EventKind.ACTION, source="agent", tool=tool,
                                arguments={"command": "str_replace", "path": path}))

    def finish(self, text: str) -> "TestInput":
        """The agent's declaration that it is done."""
        return self.event(Event(0, EventKind.FINISH, source="agent", text=text))

    def build(self) -> Finish:
        """The input, as a detector receives it."""
        for f in self._finish.patch.files:
            f.is_test = self._is_test(f.path)
        self._finish.inline_events = list(self._events)
        return self._finish

    def run(self, detect: Detect) -> Verdict:
        """Run `detect` through the same JSON the host uses, with a native
        host; a detector failure raises `critic_sdk.DetectorFailed`."""
        finish = self.build()
        wire = finish.to_json()
        # The host fetches events on demand: they are not in the input.
        del wire["events"]
        self.host = host.NativeHost(finish.inline_events, self._files, self._on_run, self._on_llm)
        previous = host.use(self.host)
        try:
            return Verdict.from_json(json.loads(run_detector(json.dumps(wire), detect)))
        finally:
            host.use(previous)

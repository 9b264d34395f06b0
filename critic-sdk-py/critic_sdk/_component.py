"""The component's side of `critic:detector@0.1.0`, for `critic build`: the
host calls through componentize-py's generated bindings, and the exported
`Detector` class around the skill's `detect`. Imported only in a component."""

from __future__ import annotations

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import host as wit

from . import host
from .detector import Detect, DetectorFailed, run_detector


class _WitHost:
    def log(self, level, message):
        wit.log(wit.LogLevel(int(level)), message)

    def read_file(self, path):
        return wit.read_file(path)

    def run(self, request):
        return wit.run(request)

    def run_matrix(self, requests):
        return wit.run_matrix(requests)

    def llm_complete(self, requests):
        return wit.llm_complete(requests)

    def events(self):
        return wit.events()

    def event_count(self):
        return wit.event_count()

    def events_range(self, start, end):
        return wit.events_range(start, end)


def detector_class(detect: Detect) -> type:
    """The class componentize-py exports for `detect`."""
    host.use(_WitHost())

    class Detector(exports.Detector):
        def detect(self, input: str) -> str:
            try:
                return run_detector(input, detect)
            except DetectorFailed as e:
                raise Err(str(e)) from None

    return Detector

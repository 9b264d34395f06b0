"""Running a detector function the way the host does: decode the input,
call it, encode its verdict; a failure becomes the reason the host reports."""

from __future__ import annotations

import json
import traceback
from typing import Callable

from .protocol import Finish, Verdict

#: Longest reason handed to the host; the host caps it again.
MAX_REASON = 4096

Detect = Callable[[Finish], Verdict]


class DetectorFailed(Exception):
    """The detector could not decide; the message is the host's error text."""


def run_detector(input: str, detect: Detect) -> str:
    """The JSON `DetectorOutput` for the JSON `DetectorInput` `input`."""
    try:
        finish = Finish.from_json(json.loads(input))
    except (ValueError, TypeError, AttributeError, KeyError) as e:
        raise DetectorFailed(f"cannot decode detector input: {e}") from None
    try:
        verdict = detect(finish)
    except BaseException as e:  # noqa: B036 - every failure is the detector's answer
        raise DetectorFailed(_reason(e)) from None
    if not isinstance(verdict, Verdict):
        raise DetectorFailed(
            f"detect returned {type(verdict).__name__}, expected critic_sdk.Verdict"
        )
    try:
        # Strict JSON (no NaN), in valid Unicode: what the host can read.
        out = json.dumps(verdict.to_json(), allow_nan=False, ensure_ascii=False)
        out.encode("utf-8")
        return out
    except UnicodeEncodeError:
        raise DetectorFailed(
            "cannot encode the verdict: it holds text that is not valid Unicode (a lone surrogate)"
        ) from None
    except (TypeError, ValueError) as e:
        raise DetectorFailed(f"cannot encode the verdict: {e}") from None


def _reason(e: BaseException) -> str:
    """The exception and the innermost frames, within MAX_REASON."""
    frames = traceback.extract_tb(e.__traceback__)[-3:]
    where = "".join(f"\n  at {f.filename}:{f.lineno} in {f.name}" for f in frames)
    text = f"{type(e).__name__}: {e}"
    if isinstance(e, ModuleNotFoundError):
        # A component holds only the modules imported while it was built.
        text += " (in a component, import every module at the top of app.py)"
    if len(text) > MAX_REASON - len(where):
        text = text[: max(0, MAX_REASON - len(where) - 1)] + "…"
    return text + where

"""A detector that does what `config.mode` says, to attack the host with:
spin, grab memory, read or open files it has no grant for, read the
environment, open a socket, fail with a huge reason, or import a module
the component does not hold."""

import os
import socket
import sys

import critic_sdk
from critic_sdk import Finish, Verdict


def detect(finish: Finish) -> Verdict:
    config = finish.config or {}
    mode = config.get("mode", "pass")
    if mode == "pass":
        return Verdict.accept(metadata={"python": True})
    if mode == "loop":
        while True:
            pass
    if mode == "oom":
        hoard = []
        while True:
            hoard.append(bytearray(1 << 20))
    if mode == "read":
        return Verdict.accept(metadata={"text": critic_sdk.read_file_string(config["path"])})
    if mode == "open":
        try:
            with open(config["path"], "rb") as f:
                return Verdict.accept(metadata={"opened": True, "text": f.read().decode(errors="replace")})
        except OSError as e:
            return Verdict.accept(metadata={"opened": False, "error": repr(e)})
    if mode == "env":
        return Verdict.accept(metadata={"environ": dict(os.environ), "cwd": os.getcwd()})
    if mode == "socket":
        try:
            s = socket.create_connection(("127.0.0.1", int(config["port"])), timeout=2)
            s.sendall(b"hello from a detector\n")
            return Verdict.accept(metadata={"connected": True})
        except Exception as e:  # noqa: BLE001 - any failure is the point
            return Verdict.accept(metadata={"connected": False, "error": repr(e)})
    if mode == "error":
        # Around the SDK's own cap: only the host's is left.
        critic_sdk.detector.MAX_REASON = 10**10
        raise RuntimeError("e" * int(config.get("repeat", 1)))
    if mode == "path":
        return Verdict.accept(metadata={"path": sys.path})
    if mode == "late-import":
        import xml.dom.minidom  # noqa: F401 - not imported when the component was built
        return Verdict.accept()
    raise ValueError(f"unknown mode {mode!r}")

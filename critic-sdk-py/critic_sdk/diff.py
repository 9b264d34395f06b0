"""A unified diff, as `git diff` prints it, parsed into `FileChange`s: the
same reading as the host's (the Rust SDK's `diff::parse`), for native tests."""

from __future__ import annotations

import re

from .protocol import FileChange, FileStatus, Hunk, Line, LineKind


class DiffError(ValueError):
    """A diff that does not parse; `line` is 1-based."""

    def __init__(self, line: int, message: str):
        super().__init__(f"line {line}: {message}")
        self.line = line


# ASCII digits, a `+` allowed before each number: what Rust's u32 parse takes.
_RANGE = re.compile(r"^\+?([0-9]+)(?:,\+?([0-9]+))?$")
_U32 = 0xFFFF_FFFF
#: What Rust's `trim_start` takes for whitespace (Python's adds \x1c-\x1f).
WHITESPACE = ("\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B)))
              + "\u2028\u2029\u202f\u205f\u3000")


def parse(raw: str) -> list[FileChange]:
    """As `git apply` reads a patch: text before, between and after the
    files' sections is skipped, and a plain unified diff (`--- a/x`, `+++
    b/x`, `@@ -...` with no `diff --git`) is read, its paths without their
    first part."""
    lines = raw.split("\n")
    last = lines.pop()
    # A `\r` is part of a line ending only before its `\n`.
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if last:
        lines.append(last)
    files: list[FileChange] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            file, i = _file(lines, i, line[len("diff --git "):])
            files.append(file)
        elif _plain_header(lines, i):
            file, i = _file(lines, i, None)
            files.append(file)
        elif line.startswith("@@ -"):
            raise DiffError(i + 1, f"patch fragment without header: {line!r}")
        else:
            i += 1
    return files


def _plain_header(lines: list[str], i: int) -> bool:
    return (lines[i].startswith("--- ") and i + 2 < len(lines)
            and lines[i + 1].startswith("+++ ") and lines[i + 2].startswith("@@ -"))


#: The lines of a git extended header; it ends at the first line none of them.
_EXTENDED = ("old mode ", "new mode ", "deleted file mode ", "new file mode ", "copy from ",
             "copy to ", "rename old ", "rename new ", "rename from ", "rename to ",
             "similarity index ", "dissimilarity index ", "index ", "--- ", "+++ ")


def _file(lines: list[str], start: int, header: str | None) -> tuple[FileChange, int]:
    if header is None:
        old_path, new_path, i = "", "", start
        prefixes = ("", "")
    else:
        paths = _split_header(header)
        if paths is None:
            raise DiffError(start + 1, f"cannot read the paths in 'diff --git {header}'")
        old_path, new_path = paths
        i = start + 1
        prefixes = ("a/", "b/")
    status, binary = FileStatus.MODIFIED, False
    old_null = new_null = False
    while i < len(lines):
        line = lines[i]
        if not line.startswith(_EXTENDED):
            break
        if line.startswith("new file mode "):
            status = FileStatus.ADDED
        elif line.startswith("deleted file mode "):
            status = FileStatus.DELETED
        elif line.startswith("rename from ") or line.startswith("rename old "):
            status, old_path = FileStatus.RENAMED, _unquote(line[12:] if line[7] == "f" else line[11:])
        elif line.startswith("rename to ") or line.startswith("rename new "):
            new_path = _unquote(line[10:] if line[7] == "t" else line[11:])
        elif line.startswith("copy from "):
            status, old_path = FileStatus.COPIED, _unquote(line[10:])
        elif line.startswith("copy to "):
            new_path = _unquote(line[8:])
        elif line.startswith("--- "):
            side = _side(line[4:], prefixes[0])
            old_null = side is None
            old_path = side if side is not None else old_path
        elif line.startswith("+++ "):
            side = _side(line[4:], prefixes[1])
            new_null = side is None
            new_path = side if side is not None else new_path
        i += 1
    if header is None:
        if old_null:
            status, old_path = FileStatus.ADDED, new_path
        elif new_null:
            status, new_path = FileStatus.DELETED, old_path
    if i < len(lines) and (lines[i].startswith("Binary files ") or lines[i] == "GIT binary patch"):
        binary = True
    hunks = []
    while i < len(lines) and lines[i].startswith("@@ "):
        hunk, i = _hunk(lines, i)
        hunks.append(hunk)
    added = sum(1 for h in hunks for ln in h.lines if ln.kind == LineKind.ADDED)
    removed = sum(1 for h in hunks for ln in h.lines if ln.kind == LineKind.REMOVED)
    if status == FileStatus.DELETED:
        path, old = old_path, None
    elif status in (FileStatus.RENAMED, FileStatus.COPIED):
        path, old = new_path, old_path
    else:
        path, old = new_path, None
    return FileChange(path=path, old_path=old, status=status, binary=binary,
                      added=added, removed=removed, hunks=hunks), i


def _hunk(lines: list[str], start: int) -> tuple[Hunk, int]:
    header = lines[start]
    bad = DiffError(start + 1, f"malformed hunk header {header!r}")
    if not header.startswith("@@ -") or " @@" not in header:
        raise bad
    ranges, section = header[4:].split(" @@", 1)
    if " +" not in ranges:
        raise bad
    old, new = ranges.split(" +", 1)
    o, n = _RANGE.match(old), _RANGE.match(new)
    if not o or not n:
        raise bad
    old_start, old_lines = int(o[1]), int(o[2] if o[2] is not None else 1)
    new_start, new_lines = int(n[1]), int(n[2] if n[2] is not None else 1)
    if max(old_start, old_lines, new_start, new_lines) > _U32:
        raise bad
    if old_start + old_lines > _U32 or new_start + new_lines > _U32:
        raise DiffError(start + 1, f"hunk header {header!r} names lines past {_U32}")
    hunk = Hunk(old_start, old_lines, new_start, new_lines, section.lstrip(WHITESPACE), [])
    old_no, new_no, old_left, new_left = old_start, new_start, old_lines, new_lines
    i = start + 1
    while old_left > 0 or new_left > 0:
        if i >= len(lines):
            raise DiffError(i + 1, "diff ends inside a hunk")
        line = lines[i]
        first = line[:1]
        if first == "+" and new_left > 0:
            hunk.lines.append(Line(LineKind.ADDED, line[1:], None, new_no))
            new_no, new_left = new_no + 1, new_left - 1
        elif first == "-" and old_left > 0:
            hunk.lines.append(Line(LineKind.REMOVED, line[1:], old_no, None))
            old_no, old_left = old_no + 1, old_left - 1
        elif first in (" ", "") and old_left > 0 and new_left > 0:
            hunk.lines.append(Line(LineKind.CONTEXT, line[1:], old_no, new_no))
            old_no, new_no = old_no + 1, new_no + 1
            old_left, new_left = old_left - 1, new_left - 1
        elif first == "\\":
            pass
        else:
            raise DiffError(
                i + 1,
                f"hunk {header!r} promised {old_lines} old and {new_lines} new lines, "
                f"but line {line!r} does not fit",
            )
        i += 1
    while i < len(lines) and lines[i].startswith("\\"):
        i += 1
    return hunk, i


def _side(field: str, prefix: str) -> str | None:
    """A `---`/`+++` path without `prefix` (without its first part when
    `prefix` is empty), or None for /dev/null."""
    field = field.split("\t", 1)[0]
    if field == "/dev/null":
        return None
    path = _unquote(field)
    if not prefix:
        return path.split("/", 1)[1] if "/" in path else path
    return path[len(prefix):] if path.startswith(prefix) else path


def _split_header(header: str) -> tuple[str, str] | None:
    def strip(p: str, prefix: str) -> str:
        return p[len(prefix):] if p.startswith(prefix) else p

    if header.startswith('"'):
        end = _closing_quote(header)
        if end is None:
            return None
        return strip(_unquote(header[: end + 1]), "a/"), strip(_unquote(header[end + 1:].lstrip()), "b/")
    if len(header) % 2 == 1:
        half = (len(header) - 1) // 2
        a, b = header[:half], header[half + 1:]
        if a.startswith("a/") and b.startswith("b/") and a[2:] == b[2:]:
            return a[2:], b[2:]
    if " b/" not in header:
        return None
    a, b = header.split(" b/", 1)
    return strip(a, "a/"), b


def _closing_quote(s: str) -> int | None:
    i = 1
    while i < len(s):
        if s[i] == "\\":
            i += 2
        elif s[i] == '"':
            return i
        else:
            i += 1
    return None


def _unquote(s: str) -> str:
    """Undo git's C-style quoting of unusual paths (`"a/t\\303\\251st.py"`)."""
    if len(s) < 2 or not (s.startswith('"') and s.endswith('"')):
        return s
    inner, out, i = s[1:-1], bytearray(), 0
    escapes = {"n": b"\n", "t": b"\t", '"': b'"', "\\": b"\\"}
    while i < len(inner):
        c = inner[i]
        if c != "\\" or i + 1 >= len(inner):
            out += c.encode()
            i += 1
            continue
        nxt = inner[i + 1]
        if nxt in escapes:
            out += escapes[nxt]
            i += 2
        elif nxt in "01234567":
            # Up to three characters from the first digit, as one octal byte
            # when they all are digits and fit (git's quoting, read as the
            # host reads it); else the digit itself.
            digits = inner[i + 1:i + 4]
            if re.fullmatch(r"[0-7]+", digits) and int(digits, 8) <= 0xFF:
                out.append(int(digits, 8))
                i += 1 + len(digits)
            else:
                out += nxt.encode()
                i += 2
        else:
            out += nxt.encode()
            i += 2
    return out.decode("utf-8", errors="replace")

"""Path globs as the host matches a skill's `test_patterns` (the globset
crate with `literal_separator`): `*` and `?` stay within one path component,
`**/` spans any number of them, `/**` all that is below, `{a,b}` is either,
`[...]` a class (`[!...]` its complement)."""

from __future__ import annotations

import functools
import re

#: The host's patterns when a manifest gives none (src/skill/mod.rs).
DEFAULT_TEST_PATTERNS = (
    "**/test_*.py", "**/*_test.py", "**/tests/**", "**/test/**", "**/conftest.py",
    "reproduction.py", "**/*_test.go", "**/*.test.*", "**/*.spec.*", "**/__tests__/**",
)


@functools.lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern:
    out, i, n, depth = [], 0, len(pattern), 0
    while i < n:
        c = pattern[i]
        if pattern.startswith("**", i) and (i == 0 or pattern[i - 1] == "/"):
            if i + 2 == n:
                out.append(".*")
                i += 2
                continue
            if pattern[i + 2] == "/":
                out.append("(?:.*/)?")
                i += 3
                continue
        if c == "*":
            out.append("[^/]*")
            while i + 1 < n and pattern[i + 1] == "*":
                i += 1
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 2)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1:end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "," and depth:
            out.append("|")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def matches(pattern: str, path: str) -> bool:
    """Whether `path` (workspace-relative, `/`-separated) matches `pattern`."""
    return _compile(pattern).fullmatch(path) is not None


def is_test(path: str, patterns=DEFAULT_TEST_PATTERNS) -> bool:
    """Whether any of `patterns` matches `path`, as the host classifies."""
    return any(matches(p, path) for p in patterns)

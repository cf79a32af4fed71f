"""JSON with comments and trailing commas (JSONC), as VS Code's and Cursor's mcp.json allow."""

from __future__ import annotations

import json
from typing import Any


def strip_jsonc(text: str) -> tuple[str, bool]:
    """(`text` as plain JSON, whether it had comments). `//` and `/* */` comments outside strings become
    spaces (line numbers are kept for error messages) and commas before `}` or `]` are dropped."""
    out: list[str] = []
    had_comments = False
    i, n = 0, len(text)
    pending_comma: int | None = None  # index in `out` of a comma that may turn out to be trailing
    while i < n:
        ch = text[i]
        if ch == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i:end + 1])
            pending_comma = None
            i = end + 1
            continue
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end == -1 else end
            out.append(" " * (end - i))
            had_comments, i = True, end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end == -1 else end + 2
            out.append("".join(c if c == "\n" else " " for c in text[i:end]))
            had_comments, i = True, end
            continue
        if ch == ",":
            pending_comma = len(out)
        elif ch in "}]" and pending_comma is not None:
            out[pending_comma] = " "
            pending_comma = None
        elif not ch.isspace():
            pending_comma = None
        out.append(ch)
        i += 1
    return "".join(out), had_comments


def loads_jsonc(text: str) -> tuple[Any, bool]:
    """Parse JSONC: (the value, whether the text had comments). Raises json.JSONDecodeError like json.loads."""
    plain, had_comments = strip_jsonc(text)
    return json.loads(plain), had_comments

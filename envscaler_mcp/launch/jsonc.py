"""JSON with comments and trailing commas (JSONC), as VS Code's and Cursor's mcp.json allow.

Read with `json5` (a maintained, dependency-free reader of JSON5, a superset of JSONC) rather than by hand;
plain JSON takes the standard library's faster path.
"""

from __future__ import annotations

import json
import re
from typing import Any

import json5


def loads_jsonc(text: str) -> tuple[Any, bool]:
    """Parse JSONC: (the value, whether the text needed more than JSON: comments or trailing commas).

    Raises ValueError (with the line and column) when the text is not JSONC either."""
    try:
        return json.loads(text), False
    except json.JSONDecodeError:
        try:
            return json5.loads(text), True
        except ValueError as exc:  # json5 says "<string>:LINE Unexpected ... at column COLUMN"
            said = str(exc).replace("\n", "\\n")
            where = re.fullmatch(r"<string>:(\d+) (.+) at column (\d+)", said)
            raise ValueError(f"line {where[1]}, column {where[3]}: {where[2]}" if where else said) from exc

"""A readable diff of two JSON states for review prompts, over the scoring stage's structural diff."""

from __future__ import annotations

import json
from typing import Any

from envscaler_mcp.compare.diff import diff_states


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= 300 else text[:297] + "..."


def state_diff(before: Any, after: Any, *, limit: int = 60) -> list[str]:
    """Lines 'path: before -> after' (with '(absent)' for added or removed values), at most `limit`."""
    out = []
    for change in diff_states(before, after):
        old = "(absent)" if change.op == "added" else _show(change.old)
        new = "(absent)" if change.op == "removed" else _show(change.new)
        out.append(f"{change.path_str()}: {old} -> {new}")
        if len(out) >= limit:
            out.append("... (more changes not shown)")
            break
    return out

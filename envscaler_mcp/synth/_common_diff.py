"""A readable diff of two JSON states (for checker prompts and reports)."""

from __future__ import annotations

import json
from typing import Any

_MISSING = object()


def _show(value: Any) -> str:
    if value is _MISSING:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= 300 else text[:297] + "..."


def state_diff(before: Any, after: Any, path: str = "", *, limit: int = 60) -> list[str]:
    """Lines 'path: before -> after' for every leaf that differs (dict keys recursively, lists as wholes
    unless they have the same length)."""
    out: list[str] = []

    def walk(a: Any, b: Any, where: str) -> None:
        if len(out) >= limit or a == b:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in list(a) + [k for k in b if k not in a]:
                walk(a.get(key, _MISSING), b.get(key, _MISSING), f"{where}.{key}" if where else str(key))
            return
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                walk(x, y, f"{where}[{i}]")
            return
        out.append(f"{where or '(root)'}: {_show(a)} -> {_show(b)}")

    walk(before, after, path)
    if len(out) >= limit:
        out.append("... (more changes not shown)")
    return out

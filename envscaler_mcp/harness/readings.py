"""What a failed state validator looked at: the values at the constant paths its source reads.

A validator that returns False says nothing of why. Its source usually names what it checks
(`final_state["orders"]["O-1"]["status"] == "cancelled"`); reading those paths in the final state shows the
value it found. Static: the source is parsed, never run, and only constant keys are followed.
"""

from __future__ import annotations

import ast
import json
from functools import lru_cache
from typing import Any

MAX_READINGS = 5
MAX_VALUE_CHARS = 120
_MISSING = object()


def _constant_path(node: ast.expr, root: str) -> list[Any] | None:
    """`root["a"][0].get("b")` -> ["a", 0, "b"]; None when the expression is not such a chain."""
    keys: list[Any] = []
    while True:
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            keys.append(node.slice.value)
            node = node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args and isinstance(node.args[0], ast.Constant)):
            keys.append(node.args[0].value)
            node = node.func.value
        elif isinstance(node, ast.Name) and node.id == root:
            return keys[::-1]
        else:
            return None


def _lookup(state: Any, path: list[Any]) -> Any:
    value = state
    for key in path:
        if isinstance(value, dict) and isinstance(key, str) and key in value:
            value = value[key]
        elif isinstance(value, list) and isinstance(key, int) and not isinstance(key, bool) and -len(value) <= key < len(value):
            value = value[key]
        else:
            return _MISSING
    return value


def _show(path: list[Any], value: Any) -> str:
    where = "final_state" + "".join(f"[{json.dumps(k, ensure_ascii=False)}]" for k in path)
    if value is _MISSING:
        return f"{where} is missing"
    chunks = _ENCODER.iterencode(value) if isinstance(value, (dict, list)) else [_ENCODER.encode(value)]
    text = ""
    for chunk in chunks:  # a whole collection's JSON is not needed to show its start
        text += chunk
        if len(text) > MAX_VALUE_CHARS:
            text = text[: MAX_VALUE_CHARS - 1] + "…"
            break
    return f"{where} = {text}"


_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str)


def values_read(validator: str, final_state: Any) -> list[str]:
    """'final_state["orders"]["O-1"]["status"] = "pending"' for each longest constant path the validator's
    `check_func` reads from its argument (at most MAX_READINGS); [] when the source cannot be parsed."""
    return [_show(list(p), _lookup(final_state, list(p))) for p in _paths_read(validator)]


@lru_cache(maxsize=4096)
def _paths_read(validator: str) -> tuple[tuple[Any, ...], ...]:
    """The longest constant paths `check_func` reads from its argument, first MAX_READINGS, in source order
    (parsed once per validator source: every failing episode of a scenario asks again)."""
    try:
        tree = ast.parse(validator)
    except (SyntaxError, ValueError, RecursionError):
        return ()
    func = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "check_func"), None)
    if func is None or not func.args.args:
        return ()
    root = func.args.args[0].arg
    paths: list[list[Any]] = []
    for node in ast.walk(func):
        if isinstance(node, ast.expr):
            path = _constant_path(node, root)
            if path:
                paths.append(path)
    longest = [p for p in paths if not any(len(q) > len(p) and q[: len(p)] == p for q in paths)]
    unique: list[list[Any]] = []
    for path in longest:
        if path not in unique:
            unique.append(path)
    return tuple(tuple(p) for p in unique[:MAX_READINGS])

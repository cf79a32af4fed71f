"""Bounds on a model's tool-call arguments: how deep and how large they may be before they are sent anywhere.

A model's output is untrusted: arguments nested thousands of levels deep overflow every recursive encoder
on the way (pydantic's serializer stops at 255 levels, the MCP pipe and HTTP transports hang or fail on
less), and a few megabytes of arguments cost every transport, the transcript and results.jsonl. Arguments
past either bound are not sent: the call becomes an error result the agent can recover from (the model's
fault), never an error of the harness. Both are measured without recursion.
"""

from __future__ import annotations

from typing import Any

MAX_ARGUMENT_DEPTH = 64
"""Levels of nesting a call's arguments may have (the arguments object itself is level 1)."""

MAX_ARGUMENT_CHARS = 1_000_000
"""About how many characters of JSON a call's arguments may take (strings, keys, and a few per value)."""

RAW_KEPT = 2_000
"""Characters kept of undecodable argument text that is itself over MAX_ARGUMENT_CHARS."""


def argument_problem(value: Any) -> str | None:
    """Why `value` (decoded arguments) may not be sent, or None when it is within both bounds."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    size = 0
    while stack:
        item, depth = stack.pop()
        if depth > MAX_ARGUMENT_DEPTH:
            return f"the arguments are nested more than {MAX_ARGUMENT_DEPTH} levels deep"
        if isinstance(item, dict):
            size += 2
            for key, sub in item.items():
                size += (len(key) if isinstance(key, str) else 8) + 4
                stack.append((sub, depth + 1))
        elif isinstance(item, list):
            size += 2 + len(item)
            stack.extend((sub, depth + 1) for sub in item)
        elif isinstance(item, str):
            size += len(item) + 2
        else:
            size += 8
        if size > MAX_ARGUMENT_CHARS:
            return f"the arguments are larger than {MAX_ARGUMENT_CHARS:,} characters of JSON"
    return None


def bounded_call(data: Any) -> Any:
    """A tool call's fields (as given to ToolCallRequest) with out-of-bounds arguments replaced by {} and the
    reason in `rejected`; undecodable argument text over the size bound is cut to RAW_KEPT characters."""
    if not isinstance(data, dict):
        return data
    problem = argument_problem(data.get("arguments") or {})
    raw = data.get("raw_arguments")
    if problem is None and isinstance(raw, str) and len(raw) > MAX_ARGUMENT_CHARS:
        problem = f"the arguments are larger than {MAX_ARGUMENT_CHARS:,} characters"
    if problem is None:
        return data
    if isinstance(raw, str) and len(raw) > RAW_KEPT:
        raw = raw[:RAW_KEPT] + f"... [{len(raw) - RAW_KEPT:,} more characters not kept]"
    return {**data, "arguments": {}, "raw_arguments": raw, "rejected": problem}

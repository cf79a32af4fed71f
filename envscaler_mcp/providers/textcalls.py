"""Tolerant parsing of tool calls that a model wrote as text instead of native `tool_calls`.

Small local models write `<tool_call>{...}</tool_call>`, a ```json fenced block, a bare
`{"name": ..., "arguments": ...}` object, or copy a template's doubled braces (`{{"name": ...}}`).
Every JSON object in the text is tried; an object counts as a call only when its name is one of the
declared tools, so invented tools and ordinary JSON in prose are left alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

from envscaler_mcp.providers.base import ToolCallRequest

_DECODER = json.JSONDecoder()
_NAME_KEYS = ("name", "tool", "tool_name", "function_name")
_ARG_KEYS = ("arguments", "parameters", "args", "input", "params")
_LEFTOVERS = re.compile(r"</?tool_call>|```(?:json|JSON|tool_call)?|<\|im_end\|>")


def _as_arguments(value: Any) -> dict[str, Any] | None:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            decoded = json.loads(value) if value.strip() else {}
        except json.JSONDecodeError:
            return None
        return decoded if isinstance(decoded, dict) else None
    return None


def _calls_in(obj: Any, declared: Collection[str]) -> list[tuple[str, dict[str, Any]]]:
    """Calls found in a decoded JSON value: a call object, a list of them, or a wrapper holding them."""
    if isinstance(obj, list):
        return [call for item in obj for call in _calls_in(item, declared)]
    if not isinstance(obj, dict):
        return []
    function = obj.get("function")
    if isinstance(function, dict):  # OpenAI shape {"type": "function", "function": {...}}
        return _calls_in(function, declared)
    name = next((obj[k] for k in _NAME_KEYS if isinstance(obj.get(k), str)), None)
    if name is None and isinstance(function, str):
        name = function
    if name is not None:
        if name not in declared:
            return []
        raw_args = next((obj[k] for k in _ARG_KEYS if k in obj), None)
        arguments = _as_arguments(raw_args)
        return [] if arguments is None else [(name, arguments)]
    for key in ("tool_calls", "calls", "tool_call"):
        if key in obj:
            return _calls_in(obj[key], declared)
    return []


def _scan(text: str, declared: Collection[str]) -> tuple[list[tuple[str, dict[str, Any]]], list[tuple[int, int]]]:
    calls: list[tuple[str, dict[str, Any]]] = []
    spans: list[tuple[int, int]] = []
    pos = 0
    while True:
        starts = [i for i in (text.find("{", pos), text.find("[", pos)) if i >= 0]
        if not starts:
            break
        start = min(starts)
        try:
            obj, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        found = _calls_in(obj, declared)
        if found:
            calls.extend(found)
            spans.append((start, end))
            pos = end
        else:
            pos = start + 1
    return calls, spans


def _undouble(text: str) -> str:
    return text.replace("{{", "{").replace("}}", "}")


def parse_text_tool_calls(text: str, declared: Collection[str]) -> tuple[list[ToolCallRequest], str]:
    """Find tool calls written as text. Returns (calls, the remaining prose with the calls removed).

    Only names in `declared` are accepted; "arguments" may also be spelled "parameters"/"args"/"input"
    and may be a JSON string. Call ids are generated (`textcall_<n>`).
    """
    if not text or not declared:
        return [], text or ""
    calls, spans = _scan(text, declared)
    source = text
    if not calls and "{{" in text:
        source = _undouble(text)
        calls, spans = _scan(source, declared)
    if not calls:
        return [], text
    rest_parts, last = [], 0
    for start, end in spans:
        rest_parts.append(source[last:start])
        last = end
    rest_parts.append(source[last:])
    rest = _LEFTOVERS.sub("", "".join(rest_parts))
    rest = re.sub(r"^[\s}]+$", "", rest).strip()
    requests = [ToolCallRequest(id=f"textcall_{i}", name=name, arguments=arguments)
                for i, (name, arguments) in enumerate(calls)]
    return requests, rest

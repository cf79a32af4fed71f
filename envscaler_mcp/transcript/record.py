"""The transcript a transcript check reads: plain data built from an episode or a replay.

    {"calls": [{"name", "arguments", "result", "is_error"}, ...], "answer": str, "told_user": [str, ...],
     "success_convention": str}  # only when not "envscaler": how the environment reports a failed call

`result` is the tool result's JSON value when its text is JSON (every generated server answers JSON), else
the text. `told_user` holds every text the agent wrote to the user (the final answer is the last one).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from envscaler_mcp._outcome import DEFAULT_CONVENTION
from envscaler_mcp._outcome import json_or_text as result_value

__all__ = ["EMPTY_TRANSCRIPT", "call_record", "make_transcript", "result_value"]

EMPTY_TRANSCRIPT: dict[str, Any] = {"calls": [], "answer": "", "told_user": []}


def call_record(name: str, arguments: dict[str, Any] | None, result_text: str, is_error: bool) -> dict[str, Any]:
    """One entry of `calls`."""
    return {"name": name, "arguments": dict(arguments or {}), "result": result_value(result_text),
            "is_error": bool(is_error)}


def make_transcript(calls: Iterable[dict[str, Any]], answer: str, told_user: Iterable[str] | None = None,
                    convention: str = DEFAULT_CONVENTION) -> dict[str, Any]:
    """A transcript from call records (see `call_record`), the final answer and what the user was told
    (default: just the answer). `convention` is how the environment reports a failed call (_outcome.py); it is
    written into the transcript (`success_convention`) only when it is not the default."""
    told = [t for t in (told_user if told_user is not None else [answer]) if t]
    transcript = {"calls": list(calls), "answer": answer or "", "told_user": told}
    if convention != DEFAULT_CONVENTION:
        transcript["success_convention"] = convention
    return transcript

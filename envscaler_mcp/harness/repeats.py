"""Ending an episode whose model is stuck: the same refused call, made again and again.

A step whose calls all got error results and which repeats, call for call with the same arguments, the step
before it changes nothing (nothing ran in between, so the refusal comes again). After `REPEATED_REFUSALS`
such steps in a row the episode ends as the model's failure (`model_error: "repeated_refused_call: ..."`,
scored, success False) instead of burning the rest of the step limit.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from envscaler_mcp.providers.base import Message

REPEATED_REFUSALS = 3


def _step_key(message: Message) -> str | None:
    """What the model wrote in a step: each call's name and arguments (and the undecoded text of arguments
    that were not an object). None when a call's arguments were refused and not kept (too deep or too large:
    `arguments` is then {} whatever the model wrote), so such steps are never taken for repeats."""
    if any(c.rejected is not None and c.raw_arguments is None for c in message.tool_calls):
        return None
    return json.dumps(sorted(json.dumps([c.name, c.arguments, c.raw_arguments], sort_keys=True)
                             for c in message.tool_calls))


def repeated_refusal(messages: Sequence[Message], times: int = REPEATED_REFUSALS) -> str | None:
    """The model_error text when the last `times` agent steps are the same calls, each answered by errors
    only, else None. A user message, an answer or any other call in between breaks the run. (Results are
    read from the tool messages that follow each step: some providers number their calls per step.)"""
    tail: list[tuple[Message, list[Message]]] = []  # the last `times` steps, read from the end back
    results: list[Message] = []
    for m in reversed(messages):
        if m.role == "tool":
            results.append(m)
        elif m.role == "assistant" and m.tool_calls:
            tail.insert(0, (m, results[::-1]))
            results = []
            if len(tail) == times:
                break
        else:
            break
    if len(tail) < times or not all(results and all(r.is_error for r in results) for _, results in tail):
        return None  # (checked first: most steps get a result that is no error, and their keys cost JSON)
    keys = {_step_key(m) for m, _ in tail}
    if len(keys) != 1 or None in keys:
        return None
    names = ", ".join(dict.fromkeys(c.name for c in tail[0][0].tool_calls))
    return (f"repeated_refused_call: the model made the same refused call ({names}) {times} times in a row "
            "with the same arguments")

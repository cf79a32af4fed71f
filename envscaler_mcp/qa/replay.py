"""Replaying a reference solution in a real server episode: the gate's replay step and the reference state.

An episode factory opens an isolated episode at a given state (`server.episode` of a launched server, or
`pool.source(env).episode` in a run); a call succeeds when its result is not `is_error` and its structured
content has `success: true`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from pydantic import BaseModel, Field

from envscaler_mcp.scenario.models import Scenario


class Episode(Protocol):
    """What the gate needs from an episode (envscaler_mcp.launch's episodes fit)."""

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any: ...
    async def get_state(self) -> dict[str, Any]: ...


EpisodeFactory = Callable[[dict[str, Any]], AbstractAsyncContextManager[Episode]]
"""Opens an isolated episode at a given initial state, e.g. `server.episode` of a launched server."""


class ReplayCall(BaseModel):
    """One replayed call of the reference solution."""

    tool: str = Field(description="Tool name.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Arguments sent.")
    ok: bool = Field(description="The call succeeded (no is_error, structured success true).")
    detail: str | None = Field(None, description="Error text when the call failed.")


def call_outcome(result: Any) -> tuple[bool, str | None]:
    """Did a CallToolResult-like object report success? Returns (ok, error detail)."""
    text = " ".join(getattr(c, "text", "") for c in (getattr(result, "content", None) or [])).strip()
    if getattr(result, "is_error", False):
        return False, f"is_error: {text[:300] or '(no message)'}"
    structured = getattr(result, "structured_content", None)
    if structured is None and text:
        try:
            structured = json.loads(text)
        except ValueError:
            structured = None
    if not isinstance(structured, dict):
        return False, f"result has no structured 'success' field: {text[:300]!r}"
    if structured.get("success") is not True:
        return False, f"success is {structured.get('success')!r}: {str(structured.get('error', ''))[:300]}"
    return True, None


async def replay_reference(scenario: Scenario, episode_factory: EpisodeFactory
                           ) -> tuple[list[ReplayCall], dict[str, Any] | None, list[str]]:
    """Replay the reference solution in a fresh episode; return (calls, final state, failure reasons)."""
    calls: list[ReplayCall] = []
    try:
        async with episode_factory(scenario.initial_state) as episode:
            for n, call in enumerate(scenario.reference_solution, start=1):
                try:
                    ok, detail = call_outcome(await episode.call_tool(call.tool, call.arguments))
                except Exception as exc:  # a client-side error: report it, the other scenarios go on
                    ok, detail = False, f"raised {type(exc).__name__}: {exc}"
                calls.append(ReplayCall(tool=call.tool, arguments=call.arguments, ok=ok, detail=detail))
                if not ok:
                    return calls, None, [f"call {n} {call.tool}({json.dumps(call.arguments)[:200]}) failed: {detail}"]
            return calls, await episode.get_state(), []
    except Exception as exc:
        return calls, None, [f"the episode failed: {type(exc).__name__}: {exc}"]

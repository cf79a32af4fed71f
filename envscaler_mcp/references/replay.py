"""Replay a list of tool calls in a fresh server episode, as the QA gate does for every solution it checks.

The episode is a real one (a launched server's `episode`, or any factory with that shape), so a failed call
is rolled back by the server exactly as it would be for an agent. Its final state is read with the request that
closes it, where the episode offers that (`final_state`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager

from pydantic import BaseModel, Field

from envscaler_mcp._json import JSONObject, State
from envscaler_mcp._outcome import DEFAULT_CONVENTION, read_result
from envscaler_mcp.launch.episodes import ClosingEpisode, Episode
from envscaler_mcp.scenario.models import Scenario, ToolCall

EpisodeFactory = Callable[[State], AbstractAsyncContextManager[Episode]]
"""Opens an isolated episode at a given initial state, e.g. `server.episode` of a launched server."""


class ReplayCall(BaseModel):
    """One replayed call."""

    tool: str = Field(description="Tool name.")
    arguments: JSONObject = Field(default_factory=dict, description="Arguments sent.")
    ok: bool = Field(description="The call succeeded (no is_error, no error under the environment's convention).")
    detail: str | None = Field(None, description="Error text when the call failed.")
    result_text: str = Field("", exclude=True, description="The result as JSON text (transcript items read it).")
    is_error: bool = Field(False, exclude=True, description="The result was an error result.")


async def replay_calls(calls: Sequence[ToolCall], initial_state: State, episode_factory: EpisodeFactory,
                       *, stop_at_failure: bool = True, checkpoints: Sequence[int] = (),
                       snapshots: list[State] | None = None, convention: str = DEFAULT_CONVENTION,
                       like: State | None = None) -> tuple[list[ReplayCall], State | None, list[str]]:
    """Replay `calls` in a fresh episode at `initial_state`; return (calls made, final state, failure reasons).

    With `stop_at_failure` the first failed call ends the replay (no final state, one reason); without it a
    failed call is recorded and the replay goes on (the server has rolled the call back). A reason is also
    given, and no final state, when the episode itself fails. For each n in `checkpoints` the state after the
    first n calls is appended to `snapshots` (the end of each turn of a multi-turn scenario). A call's success is
    read under the environment's success `convention` (_outcome.py). `like`: a final state this one may well equal
    (an earlier replay's), given back as it is when the server's JSON of both is the same text (not parsed again).
    """
    made: list[ReplayCall] = []
    try:
        async with episode_factory(initial_state) as episode:
            if snapshots is not None and 0 in checkpoints:  # (a read only when a turn ends before any call)
                snapshots.extend([await episode.get_state()] * sum(1 for c in checkpoints if c == 0))
            for n, call in enumerate(calls, start=1):
                text, is_error = "", True
                try:
                    result = read_result(await episode.call_tool(call.tool, call.arguments))
                    detail = result.failure(convention)
                    ok, text, is_error = detail is None, result.text, result.is_error
                except Exception as exc:  # a client-side error: report it, the other scenarios go on
                    ok, detail = False, f"raised {type(exc).__name__}: {exc}"
                made.append(ReplayCall(tool=call.tool, arguments=call.arguments, ok=ok, detail=detail,
                                       result_text=text, is_error=is_error))
                if not ok and stop_at_failure:
                    return made, None, [f"call {n} {call.tool}({json.dumps(call.arguments)[:200]}) failed: {detail}"]
                if snapshots is not None and n in checkpoints:
                    snapshots.extend([await episode.get_state()] * sum(1 for c in checkpoints if c == n))
            # the last read closes the episode in the same request where the server can (ClientEpisode)
            final = episode.final_state(like) if isinstance(episode, ClosingEpisode) else episode.get_state()
            return made, await final, []
    except Exception as exc:
        return made, None, [f"the episode failed: {type(exc).__name__}: {exc}"]



def turn_ends(scenario: Scenario) -> list[int]:
    """How many reference calls are made by the end of each turn but the last (a multi-turn scenario)."""
    ends, made = [], 0
    for turn in scenario.turns[:-1]:
        made += len(turn.reference)
        ends.append(made)
    return ends


async def replay_reference(scenario: Scenario, episode_factory: EpisodeFactory,
                           snapshots: list[State] | None = None, *, convention: str = DEFAULT_CONVENTION,
                           like: State | None = None) -> tuple[list[ReplayCall], State | None, list[str]]:
    """Replay the reference solution in a fresh episode, stopping at the first failed call; with `snapshots`,
    the state at the end of each turn but the last is appended to it; `like` as for `replay_calls`."""
    return await replay_calls(scenario.reference_solution, scenario.initial_state, episode_factory,
                              checkpoints=turn_ends(scenario), snapshots=snapshots, convention=convention,
                              like=like)

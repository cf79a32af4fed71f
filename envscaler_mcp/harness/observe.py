"""The observation check of an episode (transcript/observation.py) against its scenario's replayed reference
solution, under the run's setting (`eval --observation auto|on|off`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from envscaler_mcp._choices import ObservationMode
from envscaler_mcp.references.reference import Reference
from envscaler_mcp.references.replay import turn_ends
from envscaler_mcp.transcript.observation import ObservationTurn, ObservationVerdict, check_observation


def read_only_tools(tools: Iterable[Any]) -> set[str] | None:
    """The names of the MCP tools marked `readOnlyHint`; None when the server annotates no tool either way
    (nothing is known of which tools only read)."""
    hints = {t.name: getattr(t.annotations, "read_only_hint", None) for t in tools if t.annotations is not None}
    if all(h is None for h in hints.values()):
        return None
    return {name for name, hint in hints.items() if hint}


def observation_verdict(mode: ObservationMode, reference: Reference | None, transcript: dict[str, Any],
                        read_only: set[str] | None, turn_calls: list[int] | None = None) -> ObservationVerdict:
    """The observation check of an episode's transcript. A multi-turn scenario is checked turn by turn: each
    turn's reference results among the agent's results up to that turn's end (`turn_calls`: how many calls the
    agent had made at the end of each turn but the last), as BFCL's response check does; without turns the
    episode is one turn.

    `auto` applies it where the reference solution calls a tool the server marks read-only; `on` applies it
    wherever the reference has results (every call's result counts when the server marks no tool read-only);
    `off` never."""
    if mode == "off":
        return ObservationVerdict(reason="the observation check is turned off (--observation off)")
    if reference is None:
        return ObservationVerdict(reason="no reference solution was replayed for this episode (no admin plane)")
    if not reference.scenario.reference_solution or reference.final_state is None:
        return ObservationVerdict(reason=reference.unavailable or "the reference solution was not replayed")
    if mode == "auto":
        if read_only is None:
            return ObservationVerdict(reason="the server marks no tool read-only (readOnlyHint); --observation on "
                                      "checks every reference result")
        if not any(c.tool in read_only for c in reference.calls):
            return ObservationVerdict(reason="the reference solution makes no read-only call")
    records = reference.call_records()
    agent = list(transcript.get("calls", []))
    ends = turn_ends(reference.scenario)
    if not ends:
        return check_observation([ObservationTurn(reference=records, agent=agent,
                                                  skip=set(reference.unstable_results))], read_only)
    made = list(turn_calls or [])
    turns, start = [], 0
    for k, end in enumerate([*ends, len(records)]):
        upto = made[k] if k < len(made) else (len(agent) if k == len(ends) else 0)  # a turn never reached
        skip = {n - start for n in reference.unstable_results if start <= n < end}
        turns.append(ObservationTurn(reference=records[start:end], agent=agent[:upto], skip=skip))
        start = end
    return check_observation(turns, read_only)

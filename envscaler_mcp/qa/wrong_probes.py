"""Wrong-solution probes built from the reference: plausible wrong solutions, replayed on a real server, must
not pass the scoring (a validator not True, or the state check failing).

The gate's `wrong_solutions` step (qa.wrong) replays the wrong solutions a scenario's author wrote and asks
the checklist alone to reject them; these probes are generated, and either a validator or the state check
may catch them. Three kinds, each replayed in its own episode from the scenario's initial state:

* **extra call**: the reference solution plus one harmful extra call that succeeds and changes the state. It
  is generated from the reference's own state-changing calls, last first: the call aimed at another record
  of the same dict (another order, customer, ticket: an argument equal to a record key replaced by another
  key the reference did not touch, the records most like the original first, so that a call that cancels a
  pending order is tried on other pending orders), or repeated as it is. The first candidate that succeeds and changes the
  state is the probe; when none does, the probe is skipped and says so.
* **without the last change**: the reference solution minus its last state-changing call (the calls after it
  still run; failures are allowed).
* **given**: wrong solutions the caller passes to `wrong_probe_check(..., extra=...)`, replayed with failures
  allowed.

A probe is caught when a validator is not True on its final state or the state check finds an unexpected
change. An uncaught probe means the scoring would pass a wrong solution.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterator, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from envscaler_mcp._json import JSON, JSONObject, State
from envscaler_mcp._outcome import DEFAULT_CONVENTION, read_result
from envscaler_mcp.compare.diff import diff_states
from envscaler_mcp.qa.mutation import is_records
from envscaler_mcp.qa.transcript import calls_transcript
from envscaler_mcp.references.reference import Reference
from envscaler_mcp.references.replay import EpisodeFactory, replay_calls
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import Scenario, ToolCall

ProbeKind = Literal["extra_call", "without_last_change", "given"]
_MAX_CANDIDATES = 24
_OTHERS_PER_ARGUMENT = 6


class WrongProbe(BaseModel):
    """One wrong solution and what noticed it."""

    kind: ProbeKind = Field(description="extra_call / without_last_change / given.")
    description: str = Field(description="What makes the solution wrong.")
    caught_by: list[str] = Field(default_factory=list, description="Items whose validator was not True.")
    unexpected: list[str] = Field(default_factory=list, description="What the state check found (first few).")
    skipped: str | None = Field(None, description="Why the probe could not be built or run.")

    @property
    def caught(self) -> bool:
        """A validator or the state check failed the wrong solution."""
        return bool(self.caught_by or self.unexpected)


class WrongProbeReport(BaseModel):
    """The wrong-solution probes of one scenario."""

    probes: list[WrongProbe] = Field(default_factory=list, description="Every probe, in order.")

    @property
    def uncaught(self) -> list[WrongProbe]:
        """Probes that ran and passed the scoring."""
        return [p for p in self.probes if p.skipped is None and not p.caught]

    def reasons(self) -> list[str]:
        """Failures: wrong solutions the scoring passes."""
        return [f"a wrong solution passes every validator and the state check: {p.description}" for p in self.uncaught]

    def notes(self) -> list[str]:
        """Probes that could not be run, with why."""
        return [f"{p.kind} probe skipped: {p.skipped}" for p in self.probes if p.skipped]


def _likeness(a: JSONObject, b: JSONObject) -> int:
    return sum(1 for k, v in a.items() if b.get(k) == v)


def _string_slots(value: JSON, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _string_slots(v, (*path, k))
    elif isinstance(value, list):
        for n, v in enumerate(value):
            yield from _string_slots(v, (*path, n))


def _replace(arguments: JSONObject, path: tuple[str | int, ...], value: str) -> JSONObject:
    out = copy.deepcopy(arguments)
    node: Any = out
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return out


def extra_call_candidates(scenario: Scenario, changing: list[int], touched: Collection[str], repeat: bool = True
                          ) -> Iterator[tuple[ToolCall, str]]:
    """Harmful extra calls to try, most plausible first: each state-changing reference call (last first) aimed
    at another record (never one in `touched`), then, with `repeat`, repeated as it is."""
    containers = {name: value for name, value in scenario.initial_state.items() if is_records(value)}
    owners = {key: name for name, records in containers.items() for key in records}
    for index in reversed(changing):
        call = scenario.reference_solution[index]
        for path, value in _string_slots(call.arguments):
            container = owners.get(value)
            if container is None:
                continue
            records = containers[container]
            others = [k for k in records if k != value and k not in touched]
            others.sort(key=lambda k: -_likeness(records[value], records[k]))  # stable: file order among equals
            for other in others[:_OTHERS_PER_ARGUMENT]:
                yield (ToolCall(tool=call.tool, arguments=_replace(call.arguments, path, other)),
                       f"the reference solution plus {call.tool} on {container} '{other}' instead of '{value}'")
        if repeat:
            yield call, f"the reference solution plus {call.tool} repeated"


async def _replay_allowing_failures(factory: EpisodeFactory, state: State, calls: Sequence[ToolCall]) -> State:
    _, final, reasons = await replay_calls(calls, state, factory, stop_at_failure=False)
    if final is None:
        raise RuntimeError("; ".join(reasons))
    return final


class ExtraCall(BaseModel):
    """The outcome of looking for a harmful extra call after the reference solution."""

    changing: list[int] = Field(default_factory=list, description="Indexes of the reference's state-changing calls.")
    call: ToolCall | None = Field(None, description="The first extra call that succeeded and changed the state.")
    description: str = Field("", description="What the call does, or why none was found.")
    final_state: State | None = Field(None, description="The state after the reference and the call.")


async def harmful_extra_call(scenario: Scenario, factory: EpisodeFactory, convention: str = DEFAULT_CONVENTION,
                             *, avoid: Collection[str] = (), repeat: bool = True) -> ExtraCall:
    """Replay the reference noting which calls change the state, then try extra calls until one does harm (a call
    succeeds or fails by the environment's `convention`). The calls are never aimed at a record the reference
    changed or one whose key is in `avoid`; `repeat=False` leaves out the reference's calls repeated as they are."""
    changing: list[int] = []
    async with factory(scenario.initial_state) as episode:
        before = await episode.get_state()
        for n, call in enumerate(scenario.reference_solution):
            await episode.call_tool(call.tool, call.arguments)
            after = await episode.get_state()
            if after != before:
                changing.append(n)
            before = after
        if not changing:
            return ExtraCall(description="the reference solution changes nothing, so there is no call to aim elsewhere")
        touched = {str(c.path[1]) for c in diff_states(scenario.initial_state, before) if len(c.path) > 1} | set(avoid)
        tried = 0
        for call, description in extra_call_candidates(scenario, changing, touched, repeat):
            if tried >= _MAX_CANDIDATES:
                break
            tried += 1
            if read_result(await episode.call_tool(call.tool, call.arguments)).failure(convention) is not None:
                continue  # a failed call leaves the state as it was
            after = await episode.get_state()
            if after != before:
                return ExtraCall(changing=changing, call=call, description=description, final_state=after)
    return ExtraCall(changing=changing, description=f"none of {tried} extra calls built from the reference's "
                     "state-changing calls succeeded and changed the state")


async def _judge(judged: Sequence[tuple[WrongProbe, State, Sequence[ToolCall]]], scenario: Scenario,
                 sandbox: ValidatorSandbox, reference: Reference | None) -> None:
    """Every probe's final state judged in one sandbox request; transcript items read the probe's calls followed by
    the reference answer (the wrong thing done, the right thing said)."""
    results = await sandbox.run_probes(scenario.initial_state, [
        (scenario.checklist, final, calls_transcript(scenario, calls)) for _, final, calls in judged])
    for (probe, final, _), checks in zip(judged, results, strict=True):
        probe.caught_by = [r.item_id for r in checks if not r.passed]
        if reference is not None:
            probe.unexpected = [c.describe() for c in reference.check(final).changes[:3]]


async def wrong_probe_check(scenario: Scenario, episode_factory: EpisodeFactory, sandbox: ValidatorSandbox,
                               reference: Reference | None, extra: Sequence[Sequence[ToolCall]] = (),
                               convention: str = DEFAULT_CONVENTION) -> WrongProbeReport:
    """Run the wrong-solution probes of one scenario (see the module docstring); `extra` adds given ones."""
    report = WrongProbeReport()
    judged: list[tuple[WrongProbe, State, Sequence[ToolCall]]] = []  # judged together at the end
    extra_call = await harmful_extra_call(scenario, episode_factory, convention)
    changing = extra_call.changing
    probe = WrongProbe(kind="extra_call", description=extra_call.description)
    report.probes.append(probe)
    if extra_call.final_state is None:
        probe.skipped = extra_call.description
    else:
        judged.append((probe, extra_call.final_state,
                       [*scenario.reference_solution, *([extra_call.call] if extra_call.call else [])]))
    if changing:
        last = changing[-1]
        call = scenario.reference_solution[last]
        probe = WrongProbe(kind="without_last_change",
                           description=f"the reference solution without its last state-changing call, {call.tool} "
                                       f"(call {last + 1})")
        calls = [c for n, c in enumerate(scenario.reference_solution) if n != last]
        report.probes.append(probe)
        judged.append((probe, await _replay_allowing_failures(episode_factory, scenario.initial_state, calls), calls))
    else:
        report.probes.append(WrongProbe(kind="without_last_change", description="",
                                        skipped="the reference solution changes nothing"))
    for n, given in enumerate(extra, start=1):
        probe = WrongProbe(kind="given", description=f"given wrong solution {n} ({len(given)} calls)")
        report.probes.append(probe)
        judged.append((probe, await _replay_allowing_failures(episode_factory, scenario.initial_state, given), given))
    await _judge(judged, scenario, sandbox, reference)
    return report

"""Tool coverage: is each tool seen doing its job? A tool works when some call succeeded with its effect (a state
change for a state-changing tool, a non-empty answer for a query) on a state holding records it can act on.

The calls come from three places: probes built from the state's records (synth/skel/probes.py; no model),
calls known to succeed elsewhere (the tester's calls, a catalog's reference solutions), each replayed from a
fresh episode at its own state. A tool with a crash, or whose record-built probes were all refused, is a
defect: the check repairs it or drops it (checkstage.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from envscaler_mcp._json import JSONObject, State
from envscaler_mcp._outcome import read_result
from envscaler_mcp.launch.episodes import Episode
from envscaler_mcp.skeleton.models import EnvSkeleton, QualityCheck, ToolProof, ToolSpec
from envscaler_mcp.synth._common_diff import state_diff
from envscaler_mcp.synth.skel.probes import MAX_PROBES, later_state, probes_for, varied_state
from envscaler_mcp.synth.skel.quality import (
    EpisodeFactory,
    call_outcome,
    mcp_episode,
)

Opener = Callable[[State], AbstractAsyncContextManager[Episode]]
_QUIET = ("success", "message", "msg", "status")


@dataclass(frozen=True)
class KnownCall:
    """A call known to succeed from some state after some calls: a tester's call, a reference solution's step."""

    state: State
    tool: str
    arguments: JSONObject
    before: tuple[tuple[str, JSONObject], ...] = ()  # calls made first, in the same episode


@dataclass
class Tally:
    """What one tool's calls did."""

    spec: ToolSpec
    built: int = 0  # record-built probes refused
    calls: int = 0
    succeeded: int = 0
    refused: int = 0
    crashed: int = 0
    shown: tuple[JSONObject, str] | None = None  # the call that shows the status
    refusal: tuple[JSONObject, str] | None = None

    def add(self, arguments: JSONObject, outcome: str, payload: Any, changed: bool, *, built: bool = False) -> None:
        if outcome == "invalid":
            return  # the server's own argument check refused it: the method never ran
        self.calls += 1
        said = str(payload)[:300]
        if outcome == "crashed":
            self.crashed += 1
            if self.crashed == 1:
                self.shown = (arguments, said)
        elif outcome == "succeeded" and has_effect(self.spec, payload, changed):
            self.succeeded += 1
            if self.succeeded == 1 and not self.crashed:
                self.shown = (arguments, said)
        else:
            self.refused += 1
            self.built += built
            why = said if outcome == "refused" else f"succeeded with no effect: {said}"
            self.refusal = self.refusal or (arguments, why)

    def proof(self) -> ToolProof:
        if self.crashed:
            status = "crashes"
        elif self.succeeded:
            status = "works"
        else:
            status = "never succeeds" if self.built else "refused only"
        arguments, detail = self.shown if status in ("works", "crashes") and self.shown else \
            (self.refusal or ({}, "no call could be made"))
        return ToolProof(tool=self.spec.name, status=status, calls=self.calls, succeeded=self.succeeded,
                         refused=self.refused, crashed=self.crashed, example=arguments or None, detail=detail)


def has_effect(spec: ToolSpec, payload: Any, changed: bool) -> bool:
    """A state change must change the state; a query must answer something besides its success flag."""
    if spec.kind == "state_change":
        return changed
    if isinstance(payload, dict):
        return any(v not in (None, "", [], {}) for k, v in payload.items() if k not in _QUIET)
    return payload not in (None, "", [], {})


@asynccontextmanager
async def opener_for(skeleton: EnvSkeleton, episode_factory: EpisodeFactory = mcp_episode) -> AsyncIterator[Opener]:
    """Episodes of `skeleton` at any state: one server for all of them when the factory is the real one."""
    if episode_factory is mcp_episode:
        from envscaler_mcp.launch import launch_server

        async with launch_server(skeleton, transport="http") as server:
            yield server.episode
    else:
        yield lambda state: episode_factory(skeleton, state)


@dataclass(frozen=True)
class Made:
    """One call made: what it did, and the state after it."""

    outcome: str
    payload: Any
    changed: bool
    after: State


async def _call(opener: Opener, state: State, tool: str, arguments: JSONObject,
                before: Sequence[tuple[str, JSONObject]] = ()) -> Made:
    async with opener(state) as episode:
        for name, args in before:
            await episode.call_tool(name, args)
        first = await episode.get_state()
        result = read_result(await episode.call_tool(tool, arguments))
        after = await episode.get_state()
    payload = result.value
    return Made(call_outcome(payload, result.is_error), payload, bool(state_diff(first, after, limit=1)), after)


class Prover:
    """Runs the calls of `prove_tools`, one tally per tool, and keeps the states successful changes led to."""

    def __init__(self, skeleton: EnvSkeleton, opener: Opener) -> None:
        self.opener = opener
        self.tallies = {t.name: Tally(t) for t in skeleton.tools}
        self.reached: list[tuple[State, JSONObject]] = []  # (state after a successful change, its arguments)

    def open(self, tool: str) -> bool:
        tally = self.tallies[tool]
        return not tally.succeeded and not tally.crashed

    async def run(self, state: State, tool: str, arguments: JSONObject, before: Sequence[tuple[str, JSONObject]] = (),
                  *, built: bool = False) -> None:
        made = await _call(self.opener, state, tool, arguments, before)
        tally = self.tallies[tool]
        tally.add(arguments, made.outcome, made.payload, made.changed, built=built)
        if made.outcome == "succeeded" and made.changed and tally.spec.kind == "state_change":
            self.reached.append((made.after, arguments))

    async def probe(self, spec: ToolSpec, state: State, limit: int) -> None:
        for probe in probes_for(spec, state, limit):
            if not self.open(spec.name):
                return
            await self.run(state, spec.name, probe.arguments, built=probe.record is not None)

    async def follow_up(self, spec: ToolSpec) -> None:
        """Calls at the states other tools' successes reached, with the arguments those calls used (the
        day a doctor's day was blocked on, to unblock it)."""
        required = spec.required_parameters()
        for after, used in list(self.reached):
            if not self.open(spec.name):
                return
            arguments = {p: used[p] for p in spec.parameters() if p in used}
            if arguments and all(p in arguments for p in required):
                await self.run(after, spec.name, arguments)


async def prove_tools(skeleton: EnvSkeleton, state: State, opener: Opener, *, known: Sequence[KnownCall] = (),
                      states: Sequence[State] = (), tools: Sequence[str] | None = None,
                      limit: int = MAX_PROBES) -> list[ToolProof]:
    """Each tool's status. Per tool until it is seen working: the known calls; probes built from `state` varied
    apart (probes.varied_state); then, for the tools still unproven, calls at the states other tools' successes
    reached, and probes built from each of `states` (other generated states, e.g. scenarios' initial states).
    A crash ends a tool's calls."""
    prover = Prover(skeleton, opener)
    specs = [t for t in skeleton.tools if tools is None or t.name in tools]
    varied = varied_state(state)
    for spec in specs:
        for call in [c for c in known if c.tool == spec.name]:
            if prover.open(spec.name):
                await prover.run(call.state, call.tool, call.arguments, call.before)
        await prover.probe(spec, varied, limit)
    for spec in specs:
        await prover.follow_up(spec)
        for other in [*states, *(later_state(s) for s in [state, *(after for after, _ in prover.reached[:8])])]:
            if other is not None:
                await prover.probe(spec, varied_state(other), limit // 4)
    return [prover.tallies[t.name].proof() for t in specs]


def reference_calls(scenarios: Sequence[Any]) -> list[KnownCall]:
    """Every step of the scenarios' reference solutions, each after the steps before it, from its initial state."""
    calls = []
    for scenario in scenarios:
        steps = [(c.tool, dict(c.arguments)) for c in scenario.reference_solution]
        calls += [KnownCall(scenario.initial_state, tool, args, tuple(steps[:n])) for n, (tool, args) in enumerate(steps)]
    return calls


def tester_calls(checks: Sequence[QualityCheck], state: State) -> list[KnownCall]:
    """The tester's calls that succeeded, to replay from the initial state (they ran on an accumulated one)."""
    return [KnownCall(state, c.tool, c.arguments) for c in checks if c.outcome == "succeeded"]


def failing_checks(proofs: Sequence[ToolProof]) -> list[QualityCheck]:
    """A failed check per tool not proven to work, showing the call that shows it, for the repair round."""
    reasons = {"crashes": "this call failed with an error instead of answering",
               "never succeeds": "no call built from the records in the state ever succeeded with an effect: "
                                 "the method looks records up where they are not, or compares the wrong fields",
               "refused only": "every call was refused; no call was ever seen succeeding"}
    return [QualityCheck(tool=p.tool, arguments=p.example or {}, result=p.detail, verdict="fail",
                         reason=reasons[p.status], outcome="crashed" if p.status == "crashes" else "refused")
            for p in proofs if p.status in reasons]


async def judge_tools(skeleton: EnvSkeleton, state: State, checks: Sequence[QualityCheck],
                      episode_factory: EpisodeFactory = mcp_episode) -> list[ToolProof]:
    """Each tool's status at the check's initial state, with the tester's successful calls as known calls."""
    async with opener_for(skeleton, episode_factory) as opener:
        return await prove_tools(skeleton, state, opener, known=tester_calls(checks, state))


def working(proofs: Sequence[ToolProof]) -> int:
    """How many tools were seen working."""
    return sum(p.status == "works" for p in proofs)


def dropped(proofs: Sequence[ToolProof]) -> list[ToolProof]:
    """`proofs` with every tool not seen working marked dropped (its status kept in the detail)."""
    return [p if p.status == "works" else p.model_copy(update={"status": "dropped",
                                                               "detail": f"{p.status}: {p.detail}"})
            for p in proofs]


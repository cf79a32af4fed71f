"""The reference final state of a scenario, and the state check of an agent's final state against it.

The reference solution is replayed through real server episodes started at the scenario's initial state
(twice: any field whose value differs between the two replays is non-deterministic, so free). The result is
cached per scenario for the life of a `ReferenceCache` (one per run, or per gate invocation): all trials of a
scenario share one replay, and the gate's replay fills the same cache. A gate that finds the scenario's reference
kept by an earlier run of the very same server code (references/store.py) replays once and takes the kept replay
as the second one when the two agree byte for byte; when they do not, it replays a second time, as without it.

`Reference.check(agent_final)` gives the verdict: pass / fail (with the unexpected changes) / not_available
(with the reason: no reference solution, its replay failed, two replays disagree on which records exist,
no final state to compare, or the scenario turns the check off).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from pydantic import BaseModel, Field

from envscaler_mcp._json import ParsedState, State, encode_json
from envscaler_mcp._outcome import DEFAULT_CONVENTION
from envscaler_mcp.compare.diff import StateChange, diff_states
from envscaler_mcp.compare.freefields import FreeFields
from envscaler_mcp.compare.matching import strings_in
from envscaler_mcp.compare.statecheck import (
    StateCheckStatus,
    UnexpectedChange,
    compare_states,
    nondeterministic_fields,
)
from envscaler_mcp.references.replay import EpisodeFactory, ReplayCall, replay_reference
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.skeleton.models import FreeField, canonical_hash
from envscaler_mcp.transcript.record import call_record

NO_REFERENCE = "the scenario has no reference solution"
_REPLAYS = 2
# Replays of a larger initial state run one after the other (each holds an episode process with its copy of the
# state, and a final state read back): a 1.4 MB state costs tens of megabytes per replay across the process tree.
_CONCURRENT_REPLAYS_MAX_BYTES = 1 << 20
_INFRA_ATTEMPTS = 3


class StateVerdict(BaseModel):
    """The state check of one final state."""

    status: StateCheckStatus = Field(description="pass / fail / not_available.")
    reason: str = Field("", description="Why it is not available.")
    changes: list[UnexpectedChange] = Field(default_factory=list, description="Unexpected changes (when failed).")
    ignored: list[str] = Field(default_factory=list, description="Free-field paths whose values differ.")


def scenario_free_fields(scenario: Scenario, env_free: Sequence[FreeField] = ()) -> FreeFields:
    """The environment's free fields with the scenario's own additions and exceptions."""
    options = scenario.state_check
    extra = options.free if options else []
    return FreeFields([*env_free, *extra], options.not_free if options else [])


def fixed_keys(scenario: Scenario) -> set[str]:
    """Strings the reference solution passes as arguments: keys the task names, never renamed."""
    found: set[str] = set()
    for call in scenario.reference_solution:
        strings_in(call.arguments, found)
    return found


@dataclass
class Reference:
    """A scenario's reference final state and how to compare other final states with it."""

    scenario: Scenario
    final_state: State | None
    calls: list[ReplayCall] = field(default_factory=list)
    replay_reasons: list[str] = field(default_factory=list)
    unavailable: str = ""
    free: FreeFields = field(default_factory=FreeFields)
    nondeterministic: list[tuple[str, str]] = field(default_factory=list)
    unstable_results: list[int] = field(default_factory=list)  # calls (0-based) whose results differ between replays
    seconds: float = 0.0
    turn_states: list[State] = field(default_factory=list)  # the state at the end of each turn but the last
    confirmed: bool = False  # replayed once here, the second replay the kept one of an earlier run (same bytes)
    _encoded: bytes | None = field(default=None, repr=False)
    _diff: list[StateChange] | None = field(default=None, repr=False)
    _records: list[dict[str, Any]] | None = field(default=None, repr=False)

    def call_records(self) -> list[dict[str, Any]]:
        """The replayed calls as transcript call records (transcript/record.py), their results parsed once for
        every trial's observation check. The records are shared: read them, never change them."""
        if self._records is None:
            self._records = [call_record(c.tool, c.arguments, c.result_text, c.is_error) for c in self.calls]
        return list(self._records)

    def diff_from_initial(self) -> list[StateChange]:
        """The state diff of the scenario's initial state to this final state (worked out once)."""
        if self._diff is None:
            self._diff = diff_states(self.scenario.initial_state, self.final_state) if self.final_state else []
        return list(self._diff)

    @property
    def reason(self) -> str:
        """Why the state check is not available for this scenario ('' when it is)."""
        options = self.scenario.state_check
        if options is not None and options.disabled:
            return f"the scenario turns the state check off: {options.disabled}"
        return self.unavailable

    def check(self, agent_final: State | None, *, no_state_reason: str = "") -> StateVerdict:
        """The state check of `agent_final` (None: the final state could not be read)."""
        if self.reason or self.final_state is None:
            return StateVerdict(status="not_available", reason=self.reason or "no reference final state")
        if agent_final is None:
            return StateVerdict(status="not_available", reason=no_state_reason or "the final state could not be read")
        if isinstance(agent_final, ParsedState):
            # The server's JSON of the agent's final state, byte for byte the reference's (the same code
            # encodes both): every value is the same, so the walk below could find nothing.
            if self._encoded is None:
                self._encoded = encode_json(self.final_state)
            if agent_final.encoded == self._encoded:
                return StateVerdict(status="pass")
        result = compare_states(self.scenario.initial_state, self.final_state, agent_final, self.free,
                                fixed_keys(self.scenario))
        return StateVerdict(status="pass" if result.passed else "fail", changes=result.changes,
                            ignored=result.ignored)


    def check_turn(self, turn: int, agent_state: State | None, *, no_state_reason: str = "") -> StateVerdict:
        """The state check of the agent's state at the end of turn `turn` (0-based) of a multi-turn scenario,
        against the reference's state at that point; the last turn's is `check` of the final state."""
        if turn >= len(self.turn_states):
            return self.check(agent_state, no_state_reason=no_state_reason)
        if self.reason or self.final_state is None:
            return StateVerdict(status="not_available", reason=self.reason or "no reference final state")
        if agent_state is None:
            return StateVerdict(status="not_available", reason=no_state_reason or "the state could not be read")
        result = compare_states(self.scenario.initial_state, self.turn_states[turn], agent_state, self.free,
                                fixed_keys(self.scenario))
        return StateVerdict(status="pass" if result.passed else "fail", changes=result.changes,
                            ignored=result.ignored)
def unstable_results(calls: Sequence[ReplayCall], other: Sequence[ReplayCall]) -> list[int]:
    """The calls (0-based) whose results differ between two replays: generated ids, clock readings, random
    values. The observation check skips them (an agent's call would differ in the same way)."""
    return [n for n, (a, b) in enumerate(zip(calls, other, strict=False)) if a.result_text != b.result_text]


def _same_text(first: State, second: State) -> bool:
    """Both states were read from a server as the very same JSON text."""
    return isinstance(first, ParsedState) and isinstance(second, ParsedState) and first.encoded == second.encoded


def unavailable(scenario: Scenario, reason: str) -> Reference:
    """A Reference whose state check is not available, for the given reason."""
    return Reference(scenario=scenario, final_state=None, unavailable=reason)


_Replay = tuple[list[ReplayCall], State | None, list[str], list[State]]  # calls, final state, reasons, turn ends


async def _replay(scenario: Scenario, factory: EpisodeFactory, convention: str, like: State | None = None
                  ) -> _Replay:
    """One replay; an episode that fails without a failing call (the server, the transport) is retried. `like`: an
    earlier replay's final state, given back (not parsed again) when this one's is the same text."""
    for attempt in range(1, _INFRA_ATTEMPTS + 1):
        snapshots: list[State] = []
        calls, final, reasons = await replay_reference(scenario, factory, snapshots, convention=convention,
                                                       like=like)
        if final is not None or (calls and not calls[-1].ok) or attempt == _INFRA_ATTEMPTS:
            return calls, final, reasons, snapshots
        await anyio.sleep(0.5 * attempt)
    raise AssertionError("unreachable")  # pragma: no cover


def _agrees(replay: _Replay, kept: Reference) -> bool:
    """Whether a fresh replay is the kept reference's replay over again: the same calls with the same results, and
    the same final state, byte for byte (its JSON text). Only a kept reference whose own two replays agreed in
    every field and result can stand for a second replay (one with free fields or unstable results found by its
    replays is replayed again, so that the fields found now are those of two replays, as without it)."""
    calls, final, reasons, _ = replay
    if reasons or final is None or kept.final_state is None or kept.unavailable or kept.replay_reasons:
        return False
    if kept.nondeterministic or kept.unstable_results or len(calls) != len(kept.calls):
        return False
    same_calls = all((a.tool, a.arguments, a.ok, a.result_text, a.is_error) == (b.tool, b.arguments, b.ok, b.result_text,
                                                                              b.is_error)
                     for a, b in zip(calls, kept.calls, strict=True))
    return same_calls and encode_json(final) == encode_json(kept.final_state)


async def build_reference(scenario: Scenario, factory: EpisodeFactory, env_free: Sequence[FreeField] = (), *,
                          replays: int = _REPLAYS, convention: str = DEFAULT_CONVENTION,
                          kept: Reference | None = None) -> Reference:
    """Replay the reference solution `replays` times (concurrently, one after the other for an initial state of more
    than 1 MB) and build the scenario's Reference; a call's success is read under the environment's
    `convention`. `kept`: the scenario's reference as an earlier run of the same server code kept it
    (references/store.py): the solution is replayed once, and when that replay agrees with the kept one
    (`_agrees`) the kept replay is the second, else it is replayed a second time (`confirmed` says which)."""
    started = anyio.current_time()
    free = scenario_free_fields(scenario, env_free)
    if not scenario.has_reference():
        return Reference(scenario=scenario, final_state=None, unavailable=NO_REFERENCE, free=free)
    if kept is not None and replays == _REPLAYS:
        first = await _replay(scenario, factory, convention, kept.final_state)
        if _agrees(first, kept):
            assert kept.final_state is not None
            ref = _assembled(scenario, [first, (kept.calls, kept.final_state, [], kept.turn_states)], free)
            ref.confirmed = True
        else:
            ref = _assembled(scenario, [first, await _replay(scenario, factory, convention, first[1])], free)
        ref.seconds = round(anyio.current_time() - started, 4)
        return ref
    results: list[Any] = [None] * max(1, replays)

    async def one(n: int, like: State | None = None) -> None:
        results[n] = await _replay(scenario, factory, convention, like)

    state = scenario.initial_state
    if isinstance(state, ParsedState) and len(state.encoded) > _CONCURRENT_REPLAYS_MAX_BYTES:
        # One after the other: each holds an episode process and a final state. A later replay's final state
        # is the first's object when its text is the same (usually): one parse held, not one per replay.
        for n in range(len(results)):
            await one(n, results[0][1] if n else None)
    else:
        async with anyio.create_task_group() as tg:
            for n in range(len(results)):
                tg.start_soon(one, n)
    ref = _assembled(scenario, results, free)
    ref.seconds = round(anyio.current_time() - started, 4)
    return ref


def _assembled(scenario: Scenario, results: Sequence[_Replay], free: FreeFields) -> Reference:
    """The Reference of a scenario's replays: the first's calls and final state, the fields and results where the
    others differ from it (free, unstable), or why the state check is not available."""
    calls, final, reasons, snapshots = results[0]
    ref = Reference(scenario=scenario, final_state=final, calls=calls, replay_reasons=reasons, free=free,
                    turn_states=snapshots)
    if final is None:
        ref.unavailable = "the reference solution failed when replayed: " + "; ".join(reasons)
        return ref
    for other_calls, other, other_reasons, _ in results[1:]:
        if other is None:
            ref.unavailable = "a second replay of the reference solution failed: " + "; ".join(other_reasons)
            break
        if not _same_text(final, other):  # the server's JSON of both, byte for byte: the walk finds nothing
            patterns, problems = nondeterministic_fields(scenario.initial_state, final, other, free)
            if problems:
                ref.unavailable = "two replays of the reference solution disagree: " + "; ".join(problems[:5])
                break
            ref.nondeterministic += [p for p in patterns if p not in ref.nondeterministic]
        ref.unstable_results = sorted({*ref.unstable_results, *unstable_results(calls, other_calls)})
    if ref.nondeterministic:
        ref.free = free + FreeFields(ref.nondeterministic)
    return ref


class ReferenceCache:
    """References by scenario, computed once each (concurrent requests for one scenario wait for the first).

    With a `store` (references.store) references also outlive the run: one asked for with the environment's
    content hash is read from the store when an earlier run kept it, and kept there once replayed. With
    `reuse=False` (the QA gate: replaying the reference solution is one of its checks) every reference is
    replayed, and then kept for the runs that follow; a kept one stands for the second of its two replays when
    the first agrees with it byte for byte (`build_reference`'s `kept`), and is then not written again."""

    def __init__(self, replays: int = _REPLAYS, store: Any = None, *, reuse: bool = True) -> None:
        self.replays = replays
        self.store = store
        self.reuse = reuse
        self.loaded = 0  # how many came from the store
        self.confirmed = 0  # how many were replayed once, the kept replay agreeing (reuse=False)
        self.code_hashes: dict[Any, str] = {}  # servers' code hashes, worked out once per run
        self._done: dict[tuple[str, str, str], Reference] = {}
        self._locks: dict[tuple[str, str, str], anyio.Lock] = {}

    @staticmethod
    def key(scenario: Scenario, env_key: str = "") -> tuple[str, str, str]:
        """Cache key: environment, scenario id (a hash of its initial state, task and checklist), and the content
        of its reference solution and state-check options."""
        body = [[c.tool, c.arguments] for c in scenario.reference_solution]
        options = scenario.state_check.model_dump(mode="json") if scenario.state_check else None
        return env_key, scenario.id or scenario.compute_id(), canonical_hash([body, options])

    async def get(self, scenario: Scenario, factory: EpisodeFactory, env_free: Sequence[FreeField] = (), *,
                  env_key: str = "", env_hash: str | None = None, convention: str = DEFAULT_CONVENTION
                  ) -> Reference:
        """The scenario's Reference, replayed through `factory` the first time it is asked for (or read from
        the store, given the environment's content hash)."""
        key = self.key(scenario, env_key)
        if key in self._done:
            return self._done[key]
        lock = self._locks.setdefault(key, anyio.Lock())
        async with lock:
            if key not in self._done:
                self._done[key] = await self._stored_or_built(key, scenario, factory, env_free, env_hash,
                                                              convention)
        return self._done[key]

    async def _stored_or_built(self, key: tuple[str, str, str], scenario: Scenario, factory: EpisodeFactory,
                               env_free: Sequence[FreeField], env_hash: str | None, convention: str) -> Reference:
        if self.store is None or not env_hash:
            return await build_reference(scenario, factory, env_free, replays=self.replays, convention=convention)
        path = self.store.path(env_hash, key[1:], env_free, convention)
        stored: Reference | None = self.store.load(path, scenario, env_free)
        if stored is not None and self.reuse:
            self.loaded += 1
            return stored
        built = await build_reference(scenario, factory, env_free, replays=self.replays, convention=convention,
                                      kept=stored)
        if built.confirmed:  # the store holds these very bytes already
            self.confirmed += 1
        else:
            self.store.save(path, built)
        return built

    def forget(self, scenario: Scenario, env_key: str = "") -> None:
        """Drop the scenario's Reference (its final state): nothing will ask for it again, and a gate or run over
        thousands of scenarios would otherwise hold every final state to the end."""
        key = self.key(scenario, env_key)
        self._done.pop(key, None)
        self._locks.pop(key, None)

    def __len__(self) -> int:
        return len(self._done)

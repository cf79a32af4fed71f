"""Turning a final state and a transcript into checklist verdicts: the validator sandbox behind a small
Checker interface, and the transcript a transcript item reads, built from an episode's messages."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any, Protocol

import anyio

from envscaler_mcp._json import JSONObject, State, encode_json, initial_states
from envscaler_mcp._outcome import DEFAULT_CONVENTION
from envscaler_mcp.harness.models import CheckOutcome, CheckStatus
from envscaler_mcp.harness.readings import values_read
from envscaler_mcp.isolation.report import IsolationReport
from envscaler_mcp.providers.base import Message
from envscaler_mcp.sandbox.results import CheckResult
from envscaler_mcp.scenario.models import ChecklistItem
from envscaler_mcp.scoring.metrics import ItemVerdict
from envscaler_mcp.transcript.record import call_record, make_transcript

NO_ADMIN_REASON = (
    "the server has no admin plane, so the final state cannot be read and state checks cannot run"
)


class Checker(Protocol):
    """Runs a scenario's validators: state items on a final state, transcript items on a transcript."""

    async def check(
        self,
        items: list[ChecklistItem],
        initial_state: State,
        final_state: State | None,
        transcript: JSONObject | None = None,
    ) -> list[CheckOutcome]:
        """One CheckOutcome per item, in order; state items are not scorable when `final_state` is None."""
        ...


def episode_transcript(messages: list[Message], final_answer: str, convention: str = DEFAULT_CONVENTION
                       ) -> dict[str, Any]:
    """The plain-data transcript of an episode (transcript/record.py): every tool call in order with its
    result and the user turn it was made in, the final answer, and every text the agent wrote (in conversation
    mode, what the user read); a call's success is read under the environment's `convention`."""
    calls: list[dict[str, Any]] = []
    pending: list[tuple[str, dict[str, Any]]] = []  # (call id, its record) awaiting a tool result
    users = 0  # user messages so far: a call's `turn` is the user turn it answers (0: the first)
    for message in messages:
        users += message.role == "user"
        if message.role == "assistant":
            for call in message.tool_calls:
                record = call_record(call.name, call.arguments, "", True)  # no result seen: an error
                record["turn"] = max(users - 1, 0)
                calls.append(record)
                pending.append((call.id, record))
        elif message.role == "tool" and pending:
            # Results follow their calls in order; match by id first (ids may repeat across turns).
            n = next((k for k, (cid, _) in enumerate(pending) if cid == message.tool_call_id), 0)
            _, record = pending.pop(n)
            record.update(call_record(record["name"], record["arguments"], message.content, message.is_error))
    told = [m.content for m in messages if m.role == "assistant" and m.content]
    return make_transcript(calls, final_answer, told, convention)


def not_scorable(items: list[ChecklistItem], reason: str) -> list[CheckOutcome]:
    """Every item marked not scorable, with the reason."""
    return [
        CheckOutcome(id=i.id, description=i.description, status="not_scorable", reason=reason, kind=i.kind)
        for i in items
    ]


def item_verdicts(outcomes: list[CheckOutcome]) -> list[ItemVerdict]:
    """The outcomes as scoring.metrics reads them (the one score rule: `checklist_score(item_verdicts(...))`)."""
    return [ItemVerdict(None if o.status == "not_scorable" else o.passed, o.at_start) for o in outcomes]


def mark_at_start(outcomes: list[CheckOutcome], at_start: list[CheckOutcome]) -> list[CheckOutcome]:
    """The outcomes with `at_start` set from the same items' outcomes before the agent acted (the initial
    state as the final state, an empty transcript)."""
    return [o.model_copy(update={"at_start": s.passed}) for o, s in zip(outcomes, at_start, strict=True)]


def outcome_from_result(item: ChecklistItem, result: CheckResult, final_state: State | None = None) -> CheckOutcome:
    """Convert a scoring CheckResult (passed; a reason when the validator gave no bool) to a CheckOutcome.

    Every failed item gets a reason: the validator's exception, time-out or refusal, else "check_func
    returned False", followed for a state item by the values its source reads in the final state."""
    passed = result.passed is True
    reason = result.reason or ""
    status: CheckStatus = "pass" if passed else ("error" if reason else "fail")
    if status == "fail":
        reason = "check_func returned False"
        if item.kind == "state" and item.validator and final_state is not None:
            read = values_read(item.validator, final_state)
            if read:
                reason += "; it read " + "; ".join(read)
    return CheckOutcome(id=item.id, description=item.description, status=status, reason=reason, kind=item.kind,
                        evidence=list(result.evidence))


class _AtStart:
    """The outcomes of a checklist on an untouched initial state, once the first comer has them."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.outcomes: list[CheckOutcome] | None = None


class SandboxChecker(AbstractAsyncContextManager["SandboxChecker"]):
    """A Checker on sandbox.validators.ValidatorSandbox (worker processes with time and memory limits).

    One instance is shared by every episode of a run; use it as an async context manager. The items on an
    untouched initial state (`final_state is initial_state`: the guards of every episode) give the same
    outcomes for every trial of a scenario, so they run once per checklist, initial state and transcript;
    outcomes with an error (a validator's time-out on a loaded machine) are not kept.
    """

    AT_START_KEPT = 4096  # checklists whose outcomes on their initial state are kept (small: verdicts only)

    def __init__(self, timeout_s: float = 2.0, memory_mb: int = 512, workers: int = 1, isolation: bool = True) -> None:
        from envscaler_mcp.sandbox.validators import ValidatorSandbox

        self._sandbox = ValidatorSandbox(timeout_s=timeout_s, memory_mb=memory_mb, workers=workers,
                                         isolation=isolation)
        self._at_start: OrderedDict[tuple[Any, ...], _AtStart] = OrderedDict()

    @property
    def isolation(self) -> IsolationReport:
        """The sandbox's IsolationReport (which OS layers are in force), once entered."""
        return self._sandbox.isolation

    async def __aenter__(self) -> SandboxChecker:
        await self._sandbox.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._sandbox.__aexit__(exc_type, exc, tb)

    async def check(
        self,
        items: list[ChecklistItem],
        initial_state: State,
        final_state: State | None,
        transcript: JSONObject | None = None,
    ) -> list[CheckOutcome]:
        """Run the items with validators in the sandbox. Not scorable: items without a validator, state items
        without a final state, transcript items without a transcript."""
        if final_state is None or final_state is not initial_state:
            return await self._check(items, initial_state, final_state, transcript)
        # The initial state's text from the process's cache (the sandbox encodes it from there too): one
        # encoding per scenario, not one per episode.
        key = (tuple((i.id, i.kind, i.description, i.validator) for i in items),
               hashlib.blake2b(initial_states().encode(initial_state)).digest(),
               None if transcript is None else encode_json(transcript))
        while True:
            kept = self._at_start.get(key)
            if kept is None:
                return await self._first_at_start(key, items, initial_state, transcript)
            self._at_start.move_to_end(key)
            await kept.done.wait()
            if kept.outcomes is not None:
                return list(kept.outcomes)

    async def _first_at_start(self, key: tuple[Any, ...], items: list[ChecklistItem], initial_state: State,
                              transcript: JSONObject | None) -> list[CheckOutcome]:
        kept = self._at_start[key] = _AtStart()
        while len(self._at_start) > self.AT_START_KEPT:
            self._at_start.popitem(last=False)
        outcomes: list[CheckOutcome] | None = None
        try:
            outcomes = await self._check(items, initial_state, initial_state, transcript)
        finally:
            if outcomes is not None and not any(o.status == "error" for o in outcomes):
                kept.outcomes = outcomes
            elif self._at_start.get(key) is kept:
                del self._at_start[key]  # whoever waits asks again
            kept.done.set()
        return list(outcomes)

    async def _check(self, items: list[ChecklistItem], initial_state: State, final_state: State | None,
                     transcript: JSONObject | None) -> list[CheckOutcome]:
        available = {"state": final_state is not None, "transcript": transcript is not None}
        runnable = [i for i in items if i.validator and available[i.kind]]
        results = (
            await self._sandbox.run(runnable, initial_state, final_state, transcript) if runnable else []
        )
        by_id = {item.id: outcome_from_result(item, res, final_state) for item, res in zip(runnable, results, strict=True)}
        return [by_id.get(i.id) or not_scorable([i], _unscorable_reason(i))[0] for i in items]


def _unscorable_reason(item: ChecklistItem) -> str:
    if not item.validator:
        return "the item has no validator (a checklist text without a check function)"
    if item.kind == "state":
        return NO_ADMIN_REASON
    return "no transcript was recorded"

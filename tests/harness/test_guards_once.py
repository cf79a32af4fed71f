"""The checklist on an untouched initial state (the guards) runs once per scenario in a run: every trial gets
the same outcomes, a final state runs every time, and outcomes with an error are asked for again."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from envscaler_mcp._json import ParsedState, encode_json
from envscaler_mcp.harness.checks import SandboxChecker
from envscaler_mcp.scenario.models import ChecklistItem
from envscaler_mcp.transcript.record import EMPTY_TRANSCRIPT

pytestmark = pytest.mark.anyio

SHIPPED = ChecklistItem(id="c1", description="O1 shipped",
                        validator="def check_func(final_state):\n    return final_state['orders']['O1'] == 'shipped'\n")
KEPT = ChecklistItem(id="c2", description="O2 untouched",
                     validator="def check_func(final_state):\n    return final_state['orders']['O2'] == 'pending'\n")
SAID = ChecklistItem(id="c3", description="said done", kind="transcript",
                     validator="def check_func(transcript):\n    return 'done' in transcript['answer']\n")
ITEMS = [SHIPPED, KEPT, SAID]


def _state(o1: str) -> ParsedState:
    value = {"orders": {"O1": o1, "O2": "pending"}}
    return ParsedState(value, encode_json(value))


@pytest.fixture
async def counted() -> AsyncIterator[tuple[SandboxChecker, list[Any]]]:
    """A checker whose sandbox requests are recorded (the final state each was asked about)."""
    async with SandboxChecker(workers=2) as checker:
        asked: list[Any] = []
        run = checker._sandbox.run

        async def counting(items: Any, initial: Any, final: Any, transcript: Any = None) -> Any:
            asked.append(final)
            return await run(items, initial, final, transcript)

        checker._sandbox.run = counting  # type: ignore[method-assign]
        yield checker, asked


async def test_trials_share_the_outcomes_on_the_initial_state(counted: tuple[SandboxChecker, list[Any]]) -> None:
    checker, asked = counted
    found: list[list[Any]] = []

    async def start(initial: ParsedState) -> None:
        found.append(await checker.check(ITEMS, initial, initial, dict(EMPTY_TRANSCRIPT)))

    async with anyio.create_task_group() as tg:  # three trials at once, each reading the scenario afresh
        for _ in range(3):
            tg.start_soon(start, _state("pending"))
    await start(_state("pending"))  # a later trial
    assert len(asked) == 1
    assert all([o.model_dump() for o in f] == [o.model_dump() for o in found[0]] for f in found)
    assert [o.status for o in found[0]] == ["fail", "pass", "fail"]

    other = _state("shipped")  # another scenario's initial state, the same checklist: asked, and its own verdicts
    assert [o.status for o in await checker.check(ITEMS, other, other, dict(EMPTY_TRANSCRIPT))] == ["pass", "pass", "fail"]
    told = {"calls": [], "answer": "done", "told": []}
    initial = _state("pending")
    assert [o.status for o in await checker.check(ITEMS, initial, initial, told)] == ["fail", "pass", "pass"]
    assert len(asked) == 3


async def test_a_final_state_is_always_checked(counted: tuple[SandboxChecker, list[Any]]) -> None:
    checker, asked = counted
    initial = _state("pending")
    for o1 in ("shipped", "pending"):
        final = _state(o1)  # equal content to the initial state the second time, but read from the server
        outcomes = await checker.check(ITEMS, initial, final, dict(EMPTY_TRANSCRIPT))
        assert outcomes[0].status == ("pass" if o1 == "shipped" else "fail")
    assert len(asked) == 2


async def test_outcomes_with_an_error_are_asked_for_again(counted: tuple[SandboxChecker, list[Any]]) -> None:
    checker, asked = counted
    broken = ChecklistItem(id="c9", description="reads a missing key",
                           validator="def check_func(final_state):\n    return final_state['missing'] == 1\n")
    initial = _state("pending")
    for _ in range(2):
        outcomes = await checker.check([SHIPPED, broken], initial, initial, None)
        assert [o.status for o in outcomes] == ["fail", "error"]
    assert len(asked) == 2

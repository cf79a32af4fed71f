"""catalog.inflight.LineBudget: scenarios start while their lines fit the budget; one always starts when none
is in flight, however large; what a block held is given back even when it fails."""

from __future__ import annotations

import anyio
import pytest

from envscaler_mcp.catalog.inflight import LineBudget


async def _run(budget: LineBudget, sizes: list[int]) -> list[int]:
    """Hold each size for a moment, all started at once; the bytes held seen by each block."""
    seen: list[int] = []

    async def one(size: int) -> None:
        async with budget.hold(size):
            seen.append(budget.held)
            await anyio.sleep(0.01)

    async with anyio.create_task_group() as tg:
        for size in sizes:
            tg.start_soon(one, size)
    return seen


def test_lines_held_at_once_stay_within_the_budget() -> None:
    budget = LineBudget(max_bytes=10)
    seen = anyio.run(_run, budget, [4, 4, 4, 4, 4])
    assert len(seen) == 5 and budget.most == 8 and budget.held == 0  # two at a time: 4 + 4 <= 10 < 12


def test_small_lines_are_not_held_back_and_a_large_one_runs_alone() -> None:
    small = LineBudget(max_bytes=1000)
    anyio.run(_run, small, [10] * 8)
    assert small.most == 80  # every one at once
    large = LineBudget(max_bytes=10)
    seen = anyio.run(_run, large, [50, 50, 1])
    assert large.most == 50 and 51 not in seen and 100 not in seen and large.held == 0


def test_a_failing_block_gives_its_bytes_back() -> None:
    budget = LineBudget(max_bytes=10)

    async def fail() -> None:
        async with budget.hold(8):
            raise ValueError("boom")

    with pytest.raises(ValueError):
        anyio.run(fail)
    assert budget.held == 0
    assert anyio.run(_run, budget, [8]) == [8]


def test_a_block_cancelled_while_it_waits_holds_nothing_and_the_next_gets_in() -> None:
    budget = LineBudget(max_bytes=10)

    async def main() -> list[int]:
        async with budget.hold(8):
            with anyio.move_on_after(0.05):
                async with budget.hold(8):
                    pytest.fail("8 + 8 bytes do not fit 10: the second block must wait")
            assert budget.held == 8
        assert budget.held == 0
        return await _run(budget, [8, 8])

    assert anyio.run(main) == [8, 8] and budget.most == 8

"""The gate on large states: one validator worker process, and the command's freed state buffers given back."""

from __future__ import annotations

import gc
import json
import os
import sys
import weakref
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from envscaler_mcp._json import ParsedState
from envscaler_mcp.catalog.inflight import IN_FLIGHT_BYTES
from envscaler_mcp.catalog.store import ScenarioLine, load_scenarios
from envscaler_mcp.qa.batch import GateSettings, StoredScenario, _SandboxOnDemand, is_large
from envscaler_mcp.qa.gate import check_scenario
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from tests.harness.shop import MINI_SHOP
from tests.qa.fake_episode import FakeShopEpisode


def _item(length: int) -> StoredScenario:
    header = load_scenarios(MINI_SHOP / "scenarios.jsonl")[0]
    return StoredScenario(Path("s.jsonl"), header, ScenarioLine(0, length, "d"))


def test_a_line_over_half_the_bytes_in_flight_is_large() -> None:
    assert is_large(_item(IN_FLIGHT_BYTES // 2 + 1)) and not is_large(_item(IN_FLIGHT_BYTES // 2))
    assert not is_large(load_scenarios(MINI_SHOP / "scenarios.jsonl")[0])  # held in full: nothing to bound


def _descendants() -> int:
    """Processes under this one (from /proc)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    mine, found = {os.getpid()}, True
    while found:
        found = False
        for pid, parent in parents.items():
            if parent in mine and pid not in mine:
                mine.add(pid)
                found = True
    return len(mine) - 1


def _sandbox_processes(items: list[StoredScenario], workers: int) -> tuple[int, int]:
    """(worker processes started, processes under this one while the sandbox is up) for a gate of `items`."""
    async def main() -> tuple[int, int]:
        async with AsyncExitStack() as stack:
            sandboxes = _SandboxOnDemand(GateSettings(workers=workers), stack)
            sandbox = await sandboxes.get(items)
            assert await sandboxes.get([_item(100)]) is sandbox  # started once, by the first listing
            return len(sandbox.worker_pids()), _descendants()
    return anyio.run(main)


def test_large_scenarios_are_gated_with_one_validator_process() -> None:
    small = _sandbox_processes([_item(100_000), _item(900_000)], workers=2)
    large = _sandbox_processes([_item(100_000), _item(3_000_000)], workers=2)
    assert small[0] == 2 and large[0] == 1, (small, large)
    assert large[1] < small[1], (small, large)  # the second worker's processes were never started


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_gating_a_large_scenario_gives_its_buffers_back(monkeypatch: pytest.MonkeyPatch) -> None:
    from envscaler_mcp.qa import batch

    calls: list[str] = []
    monkeypatch.setattr(batch, "give_back_large_buffers", lambda: calls.append("set") or True)
    monkeypatch.setattr(batch, "trim", lambda: calls.append("trim"))

    @asynccontextmanager
    async def server(*_args: Any, **_kwargs: Any) -> AsyncIterator[Any]:
        yield SimpleNamespace(episode=None)

    async def judge(*_args: Any, **_kwargs: Any) -> Any:
        calls.append("judge")
        return SimpleNamespace()

    monkeypatch.setattr(batch, "launch_server", server)
    monkeypatch.setattr(batch, "judge", judge)
    anyio.run(lambda: batch.check_groups([("mini_shop", [_item(3_000_000)])], GateSettings(), keep=False))
    assert calls == ["set", "judge", "trim"], calls  # set before its states are read, trimmed before the next
    calls.clear()
    anyio.run(lambda: batch.check_groups([("mini_shop", [_item(10_000)])], GateSettings(), keep=False))
    assert calls == ["judge"], calls


class _LargeShopEpisode(FakeShopEpisode):
    """The fake shop whose states come back as a server's do: parsed, with their JSON text."""

    async def get_state(self) -> dict[str, Any]:
        state = await super().get_state()
        return ParsedState(state, json.dumps(state).encode())


@asynccontextmanager
async def _large_episode(initial_state: dict[str, Any]) -> AsyncIterator[FakeShopEpisode]:
    yield _LargeShopEpisode(initial_state)


def test_large_wrong_states_go_in_a_request_of_their_own(monkeypatch: pytest.MonkeyPatch) -> None:
    from envscaler_mcp.sandbox import process
    from tests.qa.test_gate import calls, scenario

    sizes: list[list[int]] = []
    real = process.Worker.ask

    async def ask(worker: process.Worker, header: dict[str, Any], *args: Any) -> Any:
        sizes.append(list(header["sizes"]))
        return await real(worker, header, *args)

    monkeypatch.setattr(process.Worker, "ask", ask)
    forgot_note = calls(("cancel_order", {"order_id": "O1"}))
    wrong_order = calls(("cancel_order", {"order_id": "O2"}), ("add_note", {"order_id": "O1", "text": "refund requested"}))
    base = scenario().model_copy(update={"wrong_solutions": [forgot_note, wrong_order]})

    async def gate(filler: int) -> Any:
        sc = base.model_copy(update={"initial_state": {**base.initial_state, "filler": ["x" * 1000] * filler}})
        async with ValidatorSandbox(timeout_s=5.0, memory_mb=256) as sb:
            return await check_scenario(sc.with_id(), _large_episode, sb)

    small = anyio.run(gate, 10)
    assert len(sizes) == 1  # small states: the scenario's one request
    sizes.clear()
    large = anyio.run(gate, 1200)  # 1.2 MB states
    # the initial state (and it again as the initial-false probe's) with the reference's final state; then the
    # initial state with the two wrong solutions' final states: never the reference's and a wrong one's together
    assert [len(s) for s in sizes] == [3, 3], sizes
    assert large.passed and small.passed, (large.reasons(), small.reasons())
    assert [(w.label, w.failing) for w in large.wrong_solutions] == [(w.label, w.failing) for w in small.wrong_solutions] \
        == [("wrong solution 1", ["c2"]), ("wrong solution 2", ["c1", "c3"])]
    assert [r.passed for r in large.initial_results] == [r.passed for r in small.initial_results] == [False, False, True]


class _Tracked(ParsedState):
    __slots__ = ("__weakref__",)


def test_wrong_states_are_dropped_before_the_consistency_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """The consistency step indexes the reference's records (its own peak): the wrong solutions' states, judged
    by then, are no longer held."""
    from envscaler_mcp.qa import gate as gate_module
    from tests.qa.test_gate import calls, scenario

    returned: list[weakref.ref[_Tracked]] = []
    alive_then: list[list[bool]] = []

    class Episode(FakeShopEpisode):
        async def get_state(self) -> dict[str, Any]:
            state = await super().get_state()
            tracked = _Tracked(state, json.dumps(state).encode())
            returned.append(weakref.ref(tracked))
            return tracked

    @asynccontextmanager
    async def episode(initial_state: dict[str, Any]) -> AsyncIterator[FakeShopEpisode]:
        yield Episode(initial_state)

    real = gate_module.consistency_problems

    def consistency(*args: Any) -> list[str]:
        gc.collect()
        alive_then.append([ref() is not None for ref in returned])
        return real(*args)

    monkeypatch.setattr(gate_module, "consistency_problems", consistency)
    wrong = [calls(("cancel_order", {"order_id": "O1"})), calls(("cancel_order", {"order_id": "O2"}))]
    sc = scenario().model_copy(update={"wrong_solutions": wrong}).with_id()

    async def run() -> Any:
        async with ValidatorSandbox(timeout_s=5.0, memory_mb=256) as sb:
            return await check_scenario(sc, episode, sb)

    report = anyio.run(run)
    # the reference's two replays, then the two wrong solutions'
    assert len(returned) == 4 and len(alive_then) == 1, (len(returned), alive_then)
    assert alive_then[0][2:] == [False, False], alive_then  # the wrong solutions' states: gone
    assert any(alive_then[0][:2]), alive_then  # the reference's: still there for the step
    assert [(w.label, w.failing) for w in report.wrong_solutions] == [
        ("wrong solution 1", ["c2"]), ("wrong solution 2", ["c1", "c2", "c3"])]

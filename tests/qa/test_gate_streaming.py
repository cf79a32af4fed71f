"""The gate over many environments: a few servers at a time, each environment's scenarios listed when its turn
comes, each scenario read in full only while it is checked."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

import envscaler_mcp.qa.batch
from envscaler_mcp.catalog.store import save_scenarios, scenario_headers
from envscaler_mcp.qa.batch import GateSettings, Group, StoredScenario, check_groups
from envscaler_mcp.scenario.models import Scenario
from tests.qa.fake_episode import fake_shop_episode
from tests.qa.test_gate import scenario

LIVE = {"now": 0, "most": 0}


@dataclass(frozen=True)
class _Counted(StoredScenario):
    """A StoredScenario that counts how many are held in full at once (loaded, report not yet made)."""

    def load(self) -> Scenario:
        LIVE["now"] += 1
        LIVE["most"] = max(LIVE["most"], LIVE["now"])
        full = super().load()  # its state keeps the line's text, which the in-process fake would copy along
        return full.model_copy(update={"initial_state": dict(full.initial_state)})


def test_groups_run_a_few_servers_at_a_time_and_hold_only_the_scenarios_being_checked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    LIVE.update(now=0, most=0)
    up: set[str] = set()
    most_up = 0
    listed_while_up: list[int] = []

    @asynccontextmanager
    async def launch_server(target: str, transport: str = "http", **_: Any) -> AsyncIterator[Any]:
        nonlocal most_up
        up.add(target)
        most_up = max(most_up, len(up))
        await anyio.sleep(0.01)
        try:
            yield SimpleNamespace(episode=fake_shop_episode)
        finally:
            up.discard(target)

    monkeypatch.setattr(envscaler_mcp.qa.batch, "launch_server", launch_server)
    base = scenario()
    groups: list[Group] = []
    for k in range(6):
        path = tmp_path / f"env{k}.jsonl"
        save_scenarios([base.model_copy(update={"id": f"s{k}-{n}", "task": f"{base.task} ({n})"}) for n in range(5)],
                       path, index=True)

        def listing(path: Path = path) -> list[StoredScenario]:
            listed_while_up.append(len(up))
            return [_Counted(path, header, line) for header, line in scenario_headers(path)]

        groups.append((f"fake_shop{k}", listing))

    def reported(_report: Any) -> None:
        LIVE["now"] -= 1

    reports = anyio.run(lambda: check_groups(groups, GateSettings(concurrency=3, servers=2), on_report=reported))
    assert len(reports) == 30 and all(r.passed for r in reports), [r.reasons() for r in reports][:2]
    assert [r.scenario_id for r in reports] == [f"s{k}-{n}" for k in range(6) for n in range(5)]  # input order
    assert most_up == 2  # two environments at a time, not six
    assert max(listed_while_up) <= 1  # a group is listed when its turn comes (one other may still be running)
    assert 1 <= LIVE["most"] <= 3  # at most --concurrency scenarios read in full at once
    headers = [h for h, _ in scenario_headers(tmp_path / "env0.jsonl")]
    assert all(h.initial_state == {} for h in headers)  # what waits in the queue holds no state


@pytest.mark.parametrize(("lines_in_budget", "most"), [(2.5, 2), (100, 4)])
def test_scenarios_in_flight_are_bounded_by_their_line_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines_in_budget: float, most: int) -> None:
    """Large scenarios run a few at a time whatever --concurrency says; small ones at the full concurrency."""
    LIVE.update(now=0, most=0)

    @asynccontextmanager
    async def launch_server(target: str, transport: str = "http", **_: Any) -> AsyncIterator[Any]:
        yield SimpleNamespace(episode=fake_shop_episode)

    monkeypatch.setattr(envscaler_mcp.qa.batch, "launch_server", launch_server)
    base = scenario()
    padding = {f"P{n}": {"order_id": f"P{n}", "status": "placed", "total": 1.0} for n in range(300)}
    big = {**base.initial_state, "orders": {**base.initial_state["orders"], **padding}}
    path = tmp_path / "env.jsonl"
    save_scenarios([base.model_copy(update={"id": f"s{n}", "task": f"{base.task} ({n})", "initial_state": big})
                    for n in range(8)], path, index=True)
    found = scenario_headers(path)
    length = max(line.length for _, line in found)

    def reported(_report: Any) -> None:
        LIVE["now"] -= 1

    items = [_Counted(path, header, line) for header, line in found]
    reports = anyio.run(lambda: check_groups([("fake_shop", items)], GateSettings(concurrency=4), on_report=reported,
                                             in_flight_bytes=int(length * lines_in_budget)))
    assert len(reports) == 8 and all(r.passed for r in reports), [r.reasons() for r in reports][:2]
    assert LIVE["most"] == most  # 2: the budget holds two lines; 4: --concurrency, the budget never binds

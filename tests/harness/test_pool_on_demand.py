"""A run over many environments starts each server when its first episode needs it and stops it after its last
episode: never every server of the catalog at once."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from envscaler_mcp.harness.config import EnvPlan, RunConfig
from envscaler_mcp.harness.pool import open_pool
from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.rundir import RunDir
from envscaler_mcp.harness.seats import Seat
from envscaler_mcp.report.summary import finish_run
from tests.harness.shop import MINI_SHOP, shop_server

pytestmark = pytest.mark.anyio


def _copies(tmp_path: Path, n: int) -> list[str]:
    """`n` copies of mini_shop as skeleton folders with their own ids (shop_0, shop_1, ...)."""
    skeleton = json.loads((MINI_SHOP / "skeleton.json").read_text())
    lines = (MINI_SHOP / "scenarios.jsonl").read_text().splitlines()
    folders = []
    for k in range(n):
        folder = tmp_path / f"shop_{k}"
        folder.mkdir(parents=True)
        (folder / "skeleton.json").write_text(json.dumps({**skeleton, "id": f"shop_{k}"}))
        records = [json.loads(line) for line in lines if line.strip()]
        (folder / "scenarios.jsonl").write_text("".join(
            json.dumps({**r, "env_id": f"shop_{k}", "id": f"{r['id']}-{k}"}) + "\n" for r in records))
        folders.append(str(folder))
    return folders


async def test_servers_start_on_demand_and_stop_after_their_last_episode(tmp_path: Path) -> None:
    envs = _copies(tmp_path / "envs", 6)
    events: list[tuple[str, str]] = []
    up: set[str] = set()
    most = 0

    @asynccontextmanager
    async def factory(plan: EnvPlan, config: RunConfig) -> AsyncIterator[Any]:
        nonlocal most
        events.append(("start", plan.env_id))
        up.add(plan.env_id)
        most = max(most, len(up))
        try:
            async with shop_server("memory") as server:
                yield server
        finally:
            up.discard(plan.env_id)
            events.append(("stop", plan.env_id))

    config = RunConfig.model_validate({"envs": envs, "agent": "oracle", "transport": "memory", "concurrency": 1,
                                       "trials": 2, "progress": False})
    run = await run_eval(config, tmp_path / "run", agent=Seat.oracle(), source_factory=factory)
    summary = finish_run(run.path)
    records = RunDir(tmp_path / "run").read_results()
    assert summary.overall.episodes == 6 * 2 * 2 and summary.overall.success_rate == 1.0
    assert [e for e in events if e[0] == "start"] == [("start", f"shop_{k}") for k in range(6)]  # once each
    assert sorted(e for e in events if e[0] == "stop") == sorted(("stop", f"shop_{k}") for k in range(6))
    # with one episode at a time: the environment under way, the next one's server (started ahead) and, for a
    # moment, the one whose last episode just ended: never all six
    assert most <= 3, events
    for k in range(3):  # stopped during the run, once its environment was done, not at the end
        assert events.index(("stop", f"shop_{k}")) < events.index(("start", f"shop_{k + 3}"))
    assert {r.env_id for r in records} == {f"shop_{k}" for k in range(6)}


async def test_a_pool_starts_nothing_until_asked_and_stops_a_server_after_its_uses() -> None:
    started: list[str] = []
    stopped: list[str] = []

    def opener(key: str) -> Any:
        @asynccontextmanager
        async def open_source() -> AsyncIterator[Any]:
            started.append(key)
            try:
                async with shop_server("memory") as server:
                    yield server
            finally:
                stopped.append(key)
        return open_source

    async with open_pool({"a": opener("a"), "b": opener("b")}, {"a": 2, "b": 1}) as pool:
        await anyio.sleep(0)
        assert started == []
        async with pool.source("a").episode() as ep:
            assert await ep.list_tools()
        assert started == ["a"] and pool.running() == 1
        pool.finished("a")
        assert stopped == []  # one use of a left
        pool.finished("a")
        with anyio.fail_after(30):
            while stopped != ["a"]:
                await anyio.sleep(0.01)
        assert pool.running() == 0 and started == ["a"]
    assert started == ["a"] and stopped == ["a"]  # b was never asked for

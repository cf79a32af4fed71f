"""The gate replays every reference solution (one of its checks) and keeps what it replayed in the reference
store, under the key eval asks for: an eval of the same server and scenarios after `scenarios check` opens one
episode per scenario and replays nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp.catalog.store import scenarios_for
from envscaler_mcp.harness.config import EnvPlan, RunConfig, build_plan
from envscaler_mcp.harness.run import open_source, run_eval
from envscaler_mcp.harness.seats import Seat
from envscaler_mcp.qa.batch import GateSettings, check_groups

pytestmark = pytest.mark.anyio

ENV = "ecommerce_orders"


async def test_an_eval_after_the_gate_replays_no_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVSCALER_MCP_CACHE_DIR", str(tmp_path / "cache"))
    scenarios = scenarios_for(ENV)[:3]
    reports = await check_groups([(ENV, scenarios)], GateSettings(transport="memory", workers=1))
    assert [r.passed for r in reports] == [True] * len(scenarios)
    assert len(list((tmp_path / "cache" / "references").glob("*.json"))) == len(scenarios)

    opened: list[str] = []

    @asynccontextmanager
    async def counted(plan: EnvPlan, config: RunConfig) -> AsyncIterator[Any]:
        async with open_source(plan, config) as server:
            real = server.episode

            def episode(state: Any = None, **kw: Any) -> Any:
                opened.append(plan.env_id)
                return real(state, **kw)

            server.episode = episode
            yield server

    config = RunConfig(envs=[ENV], scenario_ids=[s.id for s in scenarios], agent="oracle", trials=1,
                       transport="memory", progress=False)  # type: ignore[arg-type]
    run = await run_eval(config, tmp_path / "run", plans=build_plan(config), agent=Seat.oracle(),
                         source_factory=counted)
    assert len(opened) == len(scenarios)  # the episodes only: every reference was read from the store
    results = run.read_results()
    assert len(results) == len(scenarios) and all(r.success for r in results)

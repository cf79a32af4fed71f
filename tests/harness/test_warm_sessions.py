"""Warm sessions (launch/episodes.py WarmCache): a run whose episodes skip the protocol handshake and
`tools/list` after the first writes the same results.jsonl, timings aside, as a run that asks the server
every time, and really sends fewer requests."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp.types import JSONRPCMessage

from envscaler_mcp.catalog.store import get_skeleton, scenarios_for
from envscaler_mcp.harness.config import EnvPlan, RunConfig, scenario_hashes
from envscaler_mcp.harness.prompts import EnvInfo
from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.seats import Seat
from envscaler_mcp.launch import launch_server
from envscaler_mcp.launch.servers import HttpServer
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.scenario.models import Scenario
from tests.harness.shop import ALICE, BOB, MINI_SHOP, calls

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

_TIMES = {"run_id", "started_at", "latency_s"}  # differ between any two runs


def _comparable(out: Path) -> list[dict[str, Any]]:
    """results.jsonl without what differs between any two runs (run id, start time, wall times)."""
    records = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    for record in records:
        for key in _TIMES:
            record.pop(key)
        for timing in record["timings"]:
            timing.pop("seconds")
    return sorted(records, key=lambda r: (r["scenario_id"], r["trial"]))


async def _run(out: Path, env: str, scenarios: list[Scenario], agent: Seat, warm: bool, transport: str = "http",
               skeleton: Any = None, trials: int = 2) -> Counter[str]:
    """One run; returns how many MCP requests of each method reached the server (HTTP only)."""
    sent: Counter[str] = Counter()

    def count(message: JSONRPCMessage) -> None:
        sent[getattr(message, "method", "")] += 1

    sk = skeleton or get_skeleton(env)
    plan = EnvPlan(env_id=env, env_info=EnvInfo(name=sk.name), scenarios=scenarios,
                   hashes={"environment": sk.content_hash(), **scenario_hashes(scenarios)})

    @asynccontextmanager
    async def source(plan: EnvPlan, config: RunConfig) -> AsyncIterator[Any]:
        async with launch_server(sk, transport=transport, scenarios=scenarios, warm=warm) as server:  # type: ignore[arg-type]
            if isinstance(server, HttpServer):
                server.on_post = count
            yield server

    config = RunConfig(envs=[env], agent="mock", trials=trials, concurrency=4, transport=transport,  # type: ignore[arg-type]
                       progress=False)
    os.environ["ENVSCALER_MCP_CACHE_DIR"] = str(out / "cache")  # each run replays its references (counted)
    await run_eval(config, out, plans=[plan], agent=agent, source_factory=source)
    return sent


async def test_oracle_results_are_the_same_with_warm_sessions(tmp_path: Path) -> None:
    scenarios = [s for s in scenarios_for("ecommerce_orders") if s.reference_solution][:6]
    cold = await _run(tmp_path / "cold", "ecommerce_orders", scenarios, Seat.oracle(), warm=False)
    warm = await _run(tmp_path / "warm", "ecommerce_orders", scenarios, Seat.oracle(), warm=True)
    old, new = _comparable(tmp_path / "cold"), _comparable(tmp_path / "warm")
    assert len(new) == 2 * len(scenarios) and all(r["success"] for r in new)
    assert new == old
    # Every episode and reference replay asks for the handshake and the tools on the old path; on the new one
    # the server's one shared client shakes hands and lists the tools while the server starts.
    assert cold["server/discover"] >= 3 * len(scenarios) and cold["tools/list"] >= 2 * len(scenarios)
    assert warm["server/discover"] == 0 and warm["tools/list"] == 0
    assert warm["tools/call"] == cold["tools/call"] > 0


def _agent(scenario: Scenario) -> MockProvider:
    """Wrong calls, a rejected argument and an unknown tool along the way (error results in the transcript)."""
    if scenario.id == BOB.id:
        return MockProvider([
            calls(("cancel_order", {"order_id": "O-1003"}), ("cancel_order", {"order_id": 7})),
            calls(("no_such_tool", {}), ("add_note", {"order_id": "O-1002"})),
            "Done.",
        ])
    return MockProvider([calls(("cancel_order", {"order_id": "O-1001", "reason": "moving abroad"})), "Done."])


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_error_results_are_the_same_with_warm_sessions(tmp_path: Path, transport: str) -> None:
    from tests.harness.shop import SCENARIOS, SKELETON

    agent = Seat("mock", factory=_agent)
    trials = 1 if transport == "stdio" else 2  # a process per episode: keep it short
    await _run(tmp_path / "cold", str(MINI_SHOP), SCENARIOS, agent, warm=False, transport=transport,
               skeleton=SKELETON, trials=trials)
    await _run(tmp_path / "warm", str(MINI_SHOP), SCENARIOS, agent, warm=True, transport=transport,
               skeleton=SKELETON, trials=trials)
    old, new = _comparable(tmp_path / "cold"), _comparable(tmp_path / "warm")
    assert {r["scenario_id"] for r in new} == {ALICE.id, BOB.id}
    assert any(m.get("is_error") for r in new for m in r["messages"])
    assert new == old

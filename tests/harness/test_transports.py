"""End to end over real transports: the oracle on every bundled scenario (HTTP, one shared server per
environment), and identical scores over stdio, HTTP and memory on mini_shop."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp.catalog.paths import environments_dir
from envscaler_mcp.catalog.store import load_skeleton, scenarios_for
from envscaler_mcp.harness.config import EnvPlan, RunConfig, scenario_hashes
from envscaler_mcp.harness.prompts import EnvInfo
from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.rundir import RunDir
from envscaler_mcp.harness.seats import Seat
from envscaler_mcp.launch import launch_server
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.report.summary import finish_run
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.skeleton.build import build_skeleton_from_dir
from envscaler_mcp.skeleton.models import EnvSkeleton
from tests.harness.shop import ALICE, BOB, MINI_SHOP, calls

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _catalog() -> list[tuple[EnvSkeleton, list[Scenario]]]:
    out = []
    for folder in sorted(p for p in environments_dir().iterdir() if (p / "environment.py").is_file()):
        skeleton = (
            load_skeleton(folder) if (folder / "skeleton.json").is_file() else build_skeleton_from_dir(folder)
        )
        out.append((skeleton, scenarios_for(skeleton.id)))
    return out


async def test_oracle_scores_full_marks_on_every_bundled_scenario(tmp_path: Path) -> None:
    catalog = _catalog()
    assert catalog and all(scenarios for _, scenarios in catalog)
    skeletons = {sk.id: sk for sk, _ in catalog}
    plans = [
        EnvPlan(
            env_id=sk.id,
            env_info=EnvInfo(name=sk.name),
            scenarios=scs,
            hashes={"environment": sk.content_hash(), **scenario_hashes(scs)},
        )
        for sk, scs in catalog
    ]

    @asynccontextmanager
    async def source(plan: EnvPlan, config: RunConfig) -> AsyncIterator[Any]:
        async with launch_server(
            skeletons[plan.env_id], transport="http", scenarios=plan.headers()
        ) as server:
            yield server

    config = RunConfig(envs=list(skeletons), agent="oracle", concurrency=8, progress=False)
    await run_eval(config, tmp_path, plans=plans, agent=Seat.oracle(), source_factory=source)
    summary = finish_run(tmp_path)
    failed = [
        (r.env_id, r.scenario_id, r.status, r.infra_reason, [c.reason for c in r.checks if not c.passed])
        for r in RunDir(tmp_path).read_results()
        if not r.success
    ]
    assert failed == []
    assert summary.overall.episodes == sum(len(s) for _, s in catalog) and summary.overall.mean_score == 1.0


def _agent(scenario: Scenario) -> MockProvider:
    """Partly right on both scenarios, with a failing call and an error result along the way."""
    if scenario.id == BOB.id:
        return MockProvider(
            [
                calls(("cancel_order", {"order_id": "O-1003"}), ("cancel_order", {"order_id": "O-1002"})),
                calls(("add_note", {"order_id": "O-1002"})),
                "Done.",
            ]
        )
    assert scenario.id == ALICE.id
    return MockProvider([calls(("cancel_order", {"order_id": "O-1001", "reason": "moving abroad"})), "Done."])


async def test_scores_are_identical_over_stdio_http_and_memory(tmp_path: Path) -> None:
    outcomes = {}
    for transport in ("stdio", "http", "memory"):
        config = RunConfig(
            envs=[str(MINI_SHOP)],
            agent="mock",
            transport=transport,
            concurrency=2,  # type: ignore[arg-type]
            progress=False,
        )
        await run_eval(config, tmp_path / transport, agent=Seat("mock", factory=_agent))
        records = sorted(RunDir(tmp_path / transport).read_results(), key=lambda r: r.scenario_id)
        outcomes[transport] = [
            (
                r.scenario_id,
                r.status,
                r.score,
                [c.status for c in r.checks],
                [m.content for m in r.messages[2:]],
                [c.model_dump() for c in r.diff],
            )
            for r in records
        ]
    assert outcomes["stdio"] == outcomes["http"] == outcomes["memory"]
    scores = {sid: score for sid, _, score, *_ in outcomes["http"]}
    assert scores == {BOB.id: 0.5, ALICE.id: 0.3333}  # Alice: 1 of 3 goals (her 4th item is a guard)


async def test_an_agent_that_does_nothing_never_succeeds_on_a_bundled_scenario(tmp_path: Path) -> None:
    catalog = _catalog()
    skeletons = {sk.id: sk for sk, _ in catalog}
    plans = [
        EnvPlan(
            env_id=sk.id,
            env_info=EnvInfo(name=sk.name),
            scenarios=scs,
            hashes={"environment": sk.content_hash(), **scenario_hashes(scs)},
        )
        for sk, scs in catalog
    ]

    @asynccontextmanager
    async def source(plan: EnvPlan, config: RunConfig) -> AsyncIterator[Any]:
        async with launch_server(
            skeletons[plan.env_id], transport="memory", scenarios=plan.headers()
        ) as server:
            yield server

    config = RunConfig(envs=list(skeletons), agent="mock", concurrency=4, transport="memory", progress=False)
    agent = Seat("mock", factory=lambda s: MockProvider(["I have taken care of everything."]))
    await run_eval(config, tmp_path, plans=plans, agent=agent, source_factory=source)
    summary = finish_run(tmp_path)
    records = RunDir(tmp_path).read_results()
    assert len(records) == sum(len(s) for _, s in catalog) and summary.overall.infra_errors == 0
    assert [r.scenario_id for r in records if r.success] == [] and all(r.diff == [] for r in records)
    assert summary.overall.mean_score is not None and summary.overall.mean_score < 0.5

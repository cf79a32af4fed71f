"""A run holds where each scenario is, not the scenarios: an environment's scenarios are read when its turn comes
and let go after its last episode, so eval's memory does not grow with the catalog (episodes stubbed: only the
plan and the run's loop are measured)."""

from __future__ import annotations

import json
import shutil
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp.catalog import store
from envscaler_mcp.harness import run as run_module
from envscaler_mcp.harness.config import EnvPlan, RunConfig
from envscaler_mcp.harness.models import EpisodeResult
from envscaler_mcp.harness.rundir import RunDir
from envscaler_mcp.harness.seats import Seat
from envscaler_mcp.scenario.models import Scenario
from tests.harness.shop import BOB, MINI_SHOP, replay_agent

pytestmark = pytest.mark.anyio

PER_ENV = 5
HEADER_BYTES = 20_000  # each scenario's task: what a plan of headers would hold


def _catalog(root: Path, envs: int) -> list[str]:
    """`envs` copies of mini_shop, each with PER_ENV scenarios whose headers are about 20 kB."""
    skeleton = json.loads((MINI_SHOP / "skeleton.json").read_text())
    record = BOB.model_dump(mode="json")
    folders = []
    for e in range(envs):
        folder = root / f"shop{e:03d}"
        shutil.copytree(MINI_SHOP, folder)
        env_id = f"shop{e:03d}"
        (folder / "skeleton.json").write_text(json.dumps({**skeleton, "id": env_id}))
        lines = [json.dumps({**record, "id": f"{env_id}-s{i}", "env_id": env_id,
                             "task": f"{record['task']} {env_id}-{i} " + "x" * HEADER_BYTES}) for i in range(PER_ENV)]
        (folder / "scenarios.jsonl").write_text("\n".join(lines) + "\n")
        folders.append(str(folder))
    return folders


class _Checker:
    """No validator runs: the episodes are stubbed."""


@asynccontextmanager
async def _source(plan: EnvPlan, config: RunConfig) -> AsyncIterator[object]:
    yield object()


async def _run(tmp: Path, envs: int, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> tuple[int, list[tuple[str, int]]]:
    """Peak bytes traced over a run of `envs` environments (its plan included), and the episodes in the order
    they started."""
    folders = _catalog(tmp / "catalog", envs)
    started: list[tuple[str, int]] = []

    async def episode(scenario: Scenario, *, run_id: str, trial: int, **_: Any) -> EpisodeResult:
        assert scenario.initial_state  # read in full for its episode
        started.append((scenario.id, trial))
        return EpisodeResult(run_id=run_id, env_id=scenario.env_id, scenario_id=scenario.id, trial=trial,
                             mode="task", status="completed")

    async def no_reference(*_: Any) -> None:
        return None

    monkeypatch.setattr(run_module, "run_episode", episode)
    monkeypatch.setattr(run_module, "reference_for", no_reference)
    monkeypatch.setattr(store, "_RECENT", store._Recent(0))  # no line kept between episodes (a fixed 4 MB)
    config = RunConfig(envs=folders, agent="mock", progress=False, **kw)
    tracemalloc.start()
    try:
        await run_module.run_eval(config, tmp / "run", agent=Seat("mock", factory=replay_agent), checker=_Checker(),
                                  source_factory=_source)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, started


@pytest.mark.parametrize("concurrency", [4, None], ids=["4", "the-seats-default"])  # None: 8 for the mock seat
async def test_a_runs_memory_does_not_grow_with_the_catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               concurrency: int | None) -> None:
    small, _ = await _run(tmp_path / "small", 4, monkeypatch, concurrency=concurrency)
    large, started = await _run(tmp_path / "large", 40, monkeypatch, concurrency=concurrency)
    assert len(started) == 40 * PER_ENV
    # 180 more scenarios of 20 kB headers: holding them (a plan of headers, or a task per episode started at
    # once) would add over 3.6 MB; their ids, lines' digests and run.json's ids add well under 1 kB each
    assert large - small < 1_000_000, (small, large)


async def test_episodes_start_in_the_plans_order_and_resume_runs_the_rest(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _, started = await _run(tmp_path / "a", 3, monkeypatch, concurrency=2, trials=2)
    expected = [(f"shop{e:03d}-s{i}", t) for e in range(3) for i in range(PER_ENV) for t in range(2)]
    assert started == expected
    run = tmp_path / "a" / "run"
    results = RunDir(run).read_results()
    assert sorted((r.scenario_id, r.trial) for r in results) == sorted(expected)
    kept = [line for line in (run / "results.jsonl").read_text().splitlines()
            if json.loads(line)["env_id"] != "shop001"]
    (run / "results.jsonl").write_text("\n".join(kept) + "\n")

    again: list[tuple[str, int]] = []

    async def episode(scenario: Scenario, *, run_id: str, trial: int, **_: Any) -> EpisodeResult:
        again.append((scenario.id, trial))
        return EpisodeResult(run_id=run_id, env_id=scenario.env_id, scenario_id=scenario.id, trial=trial,
                             mode="task", status="completed")

    monkeypatch.setattr(run_module, "run_episode", episode)
    config = RunConfig(envs=[str(tmp_path / "a" / "catalog" / f"shop{e:03d}") for e in range(3)], agent="mock",
                       progress=False, concurrency=2, trials=2)
    await run_module.run_eval(config, run, resume=True, agent=Seat("mock", factory=replay_agent),
                              checker=_Checker(), source_factory=_source)
    assert again == [(f"shop001-s{i}", t) for i in range(PER_ENV) for t in range(2)]
    assert len(RunDir(run).read_results()) == len(expected)

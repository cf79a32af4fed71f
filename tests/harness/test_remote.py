"""A run whose episodes run elsewhere (harness/run.py RemoteEpisodes; `eval --ray` passes adapters/ray_run.py's):
the driver hands over exactly the missing pairs, writes each returned result and the isolation it ran under,
and a Ray run without its runner is refused before anything is written."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from envscaler_mcp.errors import UsageError
from envscaler_mcp.harness.config import EnvPlan, RunConfig, build_plan
from envscaler_mcp.harness.models import EpisodeResult
from envscaler_mcp.harness.run import Finished, run_eval
from envscaler_mcp.harness.rundir import RunDir
from envscaler_mcp.harness.seats import Seat
from envscaler_mcp.isolation.report import IsolationReport, Layer
from tests.harness.shop import MINI_SHOP

pytestmark = pytest.mark.anyio

REPORT = IsolationReport(subject="validators", layers=[Layer(name="seccomp", active=True, detail="on a worker")])


def _config(**kw: object) -> RunConfig:
    return RunConfig.model_validate({"envs": [str(MINI_SHOP)], "agent": "oracle", "transport": "memory",
                                     "progress": False, "ray": "local", "trials": 2, **kw})


class FakeRemote:
    """Runs nothing: answers each item with a record naming it, as a worker's result would arrive."""

    def __init__(self) -> None:
        self.connected: list[str | None] = []
        self.given: list[tuple[str, str, int]] = []

    def connect(self, config: RunConfig) -> None:
        self.connected.append(config.ray)

    async def run(self, config: RunConfig, plans: list[EnvPlan], todo: list[tuple[str, str, int]], run_id: str,
                  finished: Finished, warn: Callable[[str], None]) -> None:
        assert self.connected, "connect comes first"
        for env_id, scenario_id, trial in todo:
            self.given.append((env_id, scenario_id, trial))
            finished(EpisodeResult(run_id=run_id, env_id=env_id, scenario_id=scenario_id, trial=trial, mode="task",
                                   status="completed", final_answer=f"{scenario_id}/{trial}"),
                     {"worker:1/validators": REPORT})


async def test_a_ray_run_without_its_runner_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="RayEpisodes"):
        await run_eval(_config(), tmp_path / "run", agent=Seat.oracle())
    assert not (tmp_path / "run").exists()


async def test_the_driver_writes_each_remote_result_and_the_isolation_it_ran_under(tmp_path: Path) -> None:
    remote = FakeRemote()
    run_dir = await run_eval(_config(), tmp_path / "run", agent=Seat.oracle(), remote=remote)
    (plan,) = build_plan(_config())
    scenarios = [s.id for s in plan.headers()]
    assert remote.connected == ["local"]
    assert sorted(remote.given) == sorted((plan.env_id, s, t) for s in scenarios for t in range(2))
    records = RunDir(run_dir.path).read_results()
    assert sorted((r.scenario_id, r.trial) for r in records) == sorted((s, t) for s in scenarios for t in range(2))
    assert all(r.final_answer == f"{r.scenario_id}/{r.trial}" for r in records)
    manifest = json.loads((run_dir.path / "run.json").read_text())
    assert manifest["isolation"]["worker:1/validators"]["layers"][0]["detail"] == "on a worker"


async def test_a_resumed_remote_run_is_given_only_the_missing_pairs(tmp_path: Path) -> None:
    out = tmp_path / "run"
    await run_eval(_config(trials=1), out, agent=Seat.oracle(), remote=FakeRemote())
    remote = FakeRemote()
    await run_eval(_config(trials=1), out, agent=Seat.oracle(), remote=remote, resume=True)
    assert remote.given == []  # every pair is already in results.jsonl
    assert len(RunDir(out).read_results()) == len([s for p in build_plan(_config()) for s in p.headers()])


async def test_a_local_run_ignores_a_remote_runner(tmp_path: Path) -> None:
    remote = FakeRemote()
    await run_eval(_config(ray=None, trials=1, limit=1), tmp_path / "run", agent=Seat.oracle(), remote=remote)
    assert remote.connected == [] and remote.given == []
    assert [r.status for r in RunDir(tmp_path / "run").read_results()] == ["completed"]

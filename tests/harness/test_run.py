"""Runs on the in-process to-do fixture: results folder, summary, resume after an interruption."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from envscaler_mcp.errors import UsageError
from envscaler_mcp.harness.config import EnvPlan, RunConfig, scenario_hashes
from envscaler_mcp.harness.prompts import EnvInfo
from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.rundir import RunDir
from envscaler_mcp.harness.seats import Seat
from envscaler_mcp.providers.base import Message, ToolCallRequest
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.scenario.models import Scenario
from tests.harness.fakes import FakeSource, InProcessChecker, todo_scenario

pytestmark = pytest.mark.anyio


def _scenarios(n: int) -> list[Scenario]:
    return [todo_scenario(f"Add an item 'milk' and mark item 1 as done (variant {i}).") for i in range(n)]


def _plan(scenarios: list[Scenario]) -> list[EnvPlan]:
    return [EnvPlan(env_id="todo", env_info=EnvInfo(name="To-do"), scenarios=scenarios,
                    hashes={"environment": "x", **scenario_hashes(scenarios)})]


def _replay(scenario: Scenario) -> MockProvider:
    """Scripted agent replaying the reference solution (one call per turn), then answering."""
    calls = [Message(role="assistant", tool_calls=[ToolCallRequest(id=f"c{i}", name=c.tool, arguments=c.arguments)])
             for i, c in enumerate(scenario.reference_solution)]
    return MockProvider([*calls, "Task completed."])


@asynccontextmanager
async def _fake_source(plan: EnvPlan, config: RunConfig) -> AsyncIterator[FakeSource]:
    yield FakeSource()


def _config(**kw: object) -> RunConfig:
    return RunConfig.model_validate({"envs": ["todo"], "agent": "mock", "progress": False, **kw})


async def _run(tmp_path: Path, scenarios: list[Scenario], agent: Seat, **kw: object):  # type: ignore[no-untyped-def]
    resume = bool(kw.pop("resume", False))
    return await run_eval(_config(**kw), tmp_path, resume=resume, plans=_plan(scenarios), agent=agent,
                          checker=InProcessChecker(), source_factory=_fake_source)


async def test_run_writes_results_manifest_and_summary(tmp_path: Path) -> None:
    summary = await _run(tmp_path, _scenarios(3), Seat("mock", factory=_replay), trials=2, concurrency=3)
    records = RunDir(tmp_path).read_results()
    assert sorted((r.scenario_id, r.trial) for r in records) == sorted(
        (s.id, t) for s in _scenarios(3) for t in range(2))
    assert summary.overall.episodes == 6 and summary.overall.mean_score == 1.0
    assert summary.overall.pass_at_k == {"1": 1.0, "2": 1.0} and summary.overall.pass_hat_k["2"] == 1.0
    manifest = json.loads((tmp_path / "run.json").read_text())
    assert manifest["versions"]["mcp"] and manifest["hashes"]["todo"]["validators"]
    assert json.loads((tmp_path / "summary.json").read_text())["overall"]["success_rate"] == 1.0


async def test_infra_errors_are_recorded_and_kept_out_of_scores(tmp_path: Path) -> None:
    scenarios = _scenarios(2)
    bad = scenarios[0].id

    def agent(s: Scenario) -> MockProvider:
        return MockProvider([]) if s.id == bad else _replay(s)  # empty script: ProviderError

    summary = await _run(tmp_path, scenarios, Seat("mock", factory=agent),
                         episode={"infra_retries": 1})
    assert summary.overall.infra_errors == 1 and summary.overall.scored == 1
    assert summary.overall.mean_score == 1.0 and summary.overall.success_rate == 1.0
    infra = [r for r in RunDir(tmp_path).read_results() if r.status == "infra_error"]
    assert infra[0].scenario_id == bad and "ProviderError" in (infra[0].infra_reason or "")


async def test_refuses_to_overwrite_an_existing_run(tmp_path: Path) -> None:
    await _run(tmp_path, _scenarios(1), Seat("mock", factory=_replay))
    with pytest.raises(UsageError, match="--resume"):
        await _run(tmp_path, _scenarios(1), Seat("mock", factory=_replay))


async def test_interrupted_run_resumes_each_episode_exactly_once(tmp_path: Path) -> None:
    scenarios = _scenarios(5)
    created: list[str] = []
    with anyio.CancelScope() as scope:
        def stopping_agent(s: Scenario) -> MockProvider:
            created.append(s.id)
            if len(created) == 4:  # "Ctrl-C" while the 4th episode starts
                scope.cancel()
            return _replay(s)

        await _run(tmp_path, scenarios, Seat("mock", factory=stopping_agent), trials=2, concurrency=1)
    first = RunDir(tmp_path).read_results()
    assert 0 < len(first) < 10
    # a crash in the middle of the next write leaves a torn line
    with open(tmp_path / "results.jsonl", "a") as f:
        f.write('{"run_id": "torn')
    summary = await _run(tmp_path, scenarios, Seat("mock", factory=_replay), trials=2, concurrency=4, resume=True)
    records = RunDir(tmp_path).read_results()
    pairs = [(r.scenario_id, r.trial) for r in records]
    assert len(pairs) == len(set(pairs)) == 10
    assert summary.overall.episodes == 10 and summary.overall.success_rate == 1.0
    assert all(line.endswith("}") for line in (tmp_path / "results.jsonl").read_text().splitlines())
    assert {r.run_id for r in records} == {first[0].run_id}


async def test_resume_refuses_a_changed_configuration(tmp_path: Path) -> None:
    await _run(tmp_path, _scenarios(1), Seat("mock", factory=_replay))
    with pytest.raises(UsageError, match=r"max_steps|episode"):
        await _run(tmp_path, _scenarios(1), Seat("mock", factory=_replay), resume=True, episode={"max_steps": 5})
    with pytest.raises(UsageError, match="validators changed"):
        changed = [s.model_copy(update={"task": "other"}).with_id() for s in _scenarios(1)]
        await _run(tmp_path, changed, Seat("mock", factory=_replay), resume=True)

"""Runs on the mini_shop fixture (in memory, validators in the sandbox): run folder, summary, resume."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from envscaler_mcp.errors import UsageError
from envscaler_mcp.harness.config import RunConfig, build_plan
from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.rundir import RunDir
from envscaler_mcp.harness.seats import Seat
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.report.summary import RunSummary, finish_run
from envscaler_mcp.scenario.models import Scenario
from tests.harness.shop import BOB, MINI_SHOP, SCENARIOS, replay_agent

pytestmark = pytest.mark.anyio


def _config(**kw: object) -> RunConfig:
    return RunConfig.model_validate(
        {"envs": [str(MINI_SHOP)], "agent": "mock", "transport": "memory", "progress": False, **kw}
    )


async def _run(out: Path, agent: Seat, *, resume: bool = False, **kw: object) -> RunSummary:
    return finish_run((await run_eval(_config(**kw), out, resume=resume, agent=agent)).path)


def test_run_json_never_holds_url_credentials() -> None:
    config = _config(agent_base_url="https://user:s3cret@llm.example:8443/v1?key=abc")
    dumped = json.dumps(config.model_dump(mode="json"))
    assert "s3cret" not in dumped and "abc" not in dumped and "https://llm.example:8443/v1" in dumped
    assert config.agent_base_url is not None and "s3cret" in config.agent_base_url  # still used for requests


def test_plan_from_a_skeleton_folder_uses_its_scenarios() -> None:
    plans = build_plan(_config(limit=1))
    assert [(p.env_id, p.target) for p in plans] == [("mini_shop", str(MINI_SHOP))]
    assert plans[0].scenario_ids() == [BOB.id]
    assert set(plans[0].hashes) == {"environment", "scenarios", "validators"}
    with pytest.raises(UsageError, match="--scenarios"):
        build_plan(_config(url="http://127.0.0.1:1/mcp"))


async def test_run_writes_results_manifest_and_summary(tmp_path: Path) -> None:
    summary = await _run(tmp_path, Seat("mock", factory=replay_agent), trials=2, concurrency=3)
    records = RunDir(tmp_path).read_results()
    assert sorted((r.scenario_id, r.trial) for r in records) == sorted(
        (s.id, t) for s in SCENARIOS for t in range(2)
    )
    assert summary.overall.episodes == 4 and summary.overall.mean_score == 1.0
    assert summary.overall.pass_at_k == {1: 1.0, 2: 1.0} and summary.overall.pass_hat_k[2] == 1.0
    assert [g.name for g in summary.per_env] == ["mini_shop"]
    manifest = json.loads((tmp_path / "run.json").read_text())
    assert manifest["versions"]["mcp"] and manifest["hashes"]["mini_shop"]["validators"]
    assert "api_key" not in json.dumps(manifest)
    assert json.loads((tmp_path / "summary.json").read_text())["overall"]["success_rate"] == 1.0


async def test_infra_errors_are_recorded_and_kept_out_of_scores(tmp_path: Path) -> None:
    def agent(s: Scenario) -> MockProvider:
        return MockProvider([]) if s.id == BOB.id else replay_agent(s)  # empty script: ProviderError

    summary = await _run(
        tmp_path, Seat("mock", factory=agent), episode={"infra_retries": 1, "infra_backoff_s": 0}
    )
    assert summary.overall.infra_errors == 1 and summary.overall.scored == 1
    assert summary.overall.mean_score == 1.0 and summary.overall.success_rate == 1.0
    infra = [r for r in RunDir(tmp_path).read_results() if r.status == "infra_error"]
    assert infra[0].scenario_id == BOB.id and "ProviderError" in (infra[0].infra_reason or "")


async def test_refuses_to_overwrite_an_existing_run(tmp_path: Path) -> None:
    await _run(tmp_path, Seat("mock", factory=replay_agent), limit=1)
    with pytest.raises(UsageError, match="--resume"):
        await _run(tmp_path, Seat("mock", factory=replay_agent), limit=1)


async def test_interrupted_run_resumes_each_episode_exactly_once(tmp_path: Path) -> None:
    created: list[str] = []
    with anyio.CancelScope() as scope:

        def stopping_agent(s: Scenario) -> MockProvider:
            created.append(s.id)
            if len(created) == 4:  # "Ctrl-C" while the 4th episode starts
                scope.cancel()
            return replay_agent(s)

        await _run(tmp_path, Seat("mock", factory=stopping_agent), trials=4, concurrency=1)
    first = RunDir(tmp_path).read_results()
    assert len(first) == 3
    with open(tmp_path / "results.jsonl", "a") as f:  # a crash in the middle of the next write
        f.write('{"run_id": "torn')
    summary = await _run(tmp_path, Seat("mock", factory=replay_agent), trials=4, concurrency=3, resume=True)
    pairs = [(r.scenario_id, r.trial) for r in RunDir(tmp_path).read_results()]
    assert len(pairs) == len(set(pairs)) == 8
    assert summary.overall.episodes == 8 and summary.overall.success_rate == 1.0
    assert all(line.endswith("}") for line in (tmp_path / "results.jsonl").read_text().splitlines())
    assert {r.run_id for r in RunDir(tmp_path).read_results()} == {first[0].run_id}
    # resuming a finished run runs nothing
    again = await _run(tmp_path, Seat("mock", factory=lambda s: MockProvider([])), trials=4, resume=True)
    assert again.overall.episodes == 8 and again.overall.infra_errors == 0


async def test_resume_refuses_a_changed_configuration(tmp_path: Path) -> None:
    await _run(tmp_path, Seat("mock", factory=replay_agent), limit=1)
    with pytest.raises(UsageError, match=r"option 'episode'"):
        await _run(
            tmp_path, Seat("mock", factory=replay_agent), resume=True, limit=1, episode={"max_steps": 5}
        )
    with pytest.raises(UsageError, match="scenarios"):
        await _run(tmp_path, Seat("mock", factory=replay_agent), resume=True)


async def test_a_conversational_run_uses_the_user_seat(tmp_path: Path) -> None:
    def user(s: Scenario) -> MockProvider:
        return MockProvider([s.task, "###STOP###"])

    config = _config(user="mock", episode={"mode": "conversation"})
    await run_eval(config, tmp_path, agent=Seat.oracle(), user=Seat("mock", role="user", factory=user))
    summary = finish_run(tmp_path)
    records = RunDir(tmp_path).read_results()
    assert summary.mode == "conversation" and summary.user == "mock" and summary.overall.success_rate == 1.0
    assert all(r.mode == "conversation" and r.user_usage.calls == 2 and r.user_messages for r in records)
    with pytest.raises(UsageError, match="--user"):
        await run_eval(_config(episode={"mode": "conversation"}), tmp_path / "x", agent=Seat.oracle())


async def test_resume_with_retry_infra_reruns_only_the_infra_errors(tmp_path: Path) -> None:
    def flaky(s: Scenario) -> MockProvider:
        return MockProvider([]) if s.id == BOB.id else replay_agent(s)  # Bob's episodes hit a "provider outage"

    await _run(tmp_path, Seat("mock", factory=flaky), trials=2, episode={"infra_retries": 0})
    assert sum(r.status == "infra_error" for r in RunDir(tmp_path).read_results()) == 2
    with pytest.raises(UsageError, match="--resume"):
        await run_eval(_config(trials=2, episode={"infra_retries": 0}), tmp_path / "new", retry_infra=True)
    await run_eval(_config(trials=2, episode={"infra_retries": 0}), tmp_path, resume=True,
                   retry_infra=True, agent=Seat("mock", factory=replay_agent))
    summary = finish_run(tmp_path)
    records = RunDir(tmp_path).read_results()
    pairs = [(r.scenario_id, r.trial) for r in records]
    assert len(pairs) == len(set(pairs)) == 4 and all(r.status == "completed" for r in records)
    assert summary.overall.infra_errors == 0 and summary.overall.success_rate == 1.0

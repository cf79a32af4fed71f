"""The state check on the whole bundled catalog, end to end through `run_eval` (servers in memory):

* the reference solution alone succeeds on every scenario;
* the reference plus one harmful extra state-changing call that succeeds fails on every scenario that has one;
* different words in free-text arguments (reasons, notes, comments) never fail the state check;
* an agent that does nothing (no call; an empty answer, or "I can't help") scores 0.0 on every scenario: items
  already true at the start are guards and earn nothing, while the oracle scores 1.0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp.catalog.store import list_env_ids, scenarios_for
from envscaler_mcp.harness.config import RunConfig
from envscaler_mcp.harness.oracle import OraclePolicy
from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.rundir import RunDir
from envscaler_mcp.harness.seats import Seat
from envscaler_mcp.launch import launch_server
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.qa.wrong_probes import harmful_extra_call
from envscaler_mcp.report.summary import finish_run
from envscaler_mcp.scenario.models import Scenario, ToolCall

pytestmark = pytest.mark.anyio
FREE_TEXT_ARGUMENTS = {"reason", "note", "notes", "body", "description", "resolution", "title"}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


async def _run(out: Path, solutions: dict[str, list[ToolCall]]) -> list[Any]:
    config = RunConfig(all_envs=True, agent="oracle", transport="memory", progress=False, concurrency=4)
    agent = Seat("oracle", factory=lambda sc: OraclePolicy(sc, solution=solutions.get(sc.id)))
    finish_run((await run_eval(config, out, agent=agent)).path)
    return RunDir(out).read_results()


async def test_the_reference_alone_succeeds_everywhere(tmp_path: Path) -> None:
    results = await _run(tmp_path, {})
    assert len(results) == sum(len(scenarios_for(e)) for e in list_env_ids()) >= 69
    assert all(r.score == 1.0 for r in results), [(r.scenario_id, r.score) for r in results if r.score != 1.0]
    assert all(r.state_check == "pass" and r.success is True for r in results), [
        (r.scenario_id, r.state_check_reason, [c.describe() for c in r.unexpected_changes]) for r in results
        if not r.success]


@pytest.mark.parametrize("answer", ["", "Sorry, I can't help with that."])
async def test_doing_nothing_scores_zero_everywhere(tmp_path: Path, answer: str) -> None:
    config = RunConfig(all_envs=True, agent="mock", transport="memory", progress=False, concurrency=4)
    agent = Seat("mock", factory=lambda sc: MockProvider([answer]))
    finish_run((await run_eval(config, tmp_path, agent=agent)).path)
    results = RunDir(tmp_path).read_results()
    assert len(results) == sum(len(scenarios_for(e)) for e in list_env_ids()) >= 81
    assert all(r.status == "completed" and r.tool_calls == 0 for r in results)
    assert all(r.score == 0.0 and r.success is False for r in results), [
        (r.scenario_id, r.score) for r in results if r.score != 0.0]
    # what used to earn it credit: items already true at the start, now guards
    assert sum(c.at_start and c.passed for r in results for c in r.checks) >= len(results) // 2


async def test_one_harmful_extra_call_fails_every_episode(tmp_path: Path) -> None:
    solutions: dict[str, list[ToolCall]] = {}
    for env in list_env_ids():
        async with launch_server(env, transport="memory") as server:
            for sc in scenarios_for(env):
                found = await harmful_extra_call(sc, server.episode)
                if found.call is not None:
                    solutions[sc.id] = [*sc.reference_solution, found.call]
    assert len(solutions) >= 60  # a few scenarios admit no such call (every candidate is refused)
    results = [r for r in await _run(tmp_path, solutions) if r.scenario_id in solutions]
    assert len(results) == len(solutions)
    assert all(r.success is False and r.state_check == "fail" for r in results)
    missed_by_checklist = [r for r in results if r.score == 1.0]
    assert len(missed_by_checklist) >= len(results) // 2  # most would have passed on the checklist alone


def _other_words(sc: Scenario) -> list[ToolCall] | None:
    changed, calls = False, []
    for call in sc.reference_solution:
        args = dict(call.arguments)
        for name in FREE_TEXT_ARGUMENTS & set(args):
            if isinstance(args[name], str):
                args[name], changed = f"In other words: {args[name].lower()}", True
        calls.append(ToolCall(tool=call.tool, arguments=args))
    return calls if changed else None


async def test_other_words_in_free_text_pass_the_state_check(tmp_path: Path) -> None:
    solutions = {sc.id: calls for env in list_env_ids() for sc in scenarios_for(env)
                 if (calls := _other_words(sc)) is not None}
    assert len(solutions) >= 20
    results = [r for r in await _run(tmp_path, solutions) if r.scenario_id in solutions]
    assert all(r.state_check == "pass" for r in results), [
        (r.scenario_id, [c.describe() for c in r.unexpected_changes]) for r in results if r.state_check != "pass"]
    assert all(r.success == (r.score == 1.0) for r in results)  # only a validator that wants the words can fail it
    assert sum(r.success for r in results) >= len(results) // 2

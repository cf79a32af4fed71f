"""The state check in runs on the mini_shop fixture: verdicts, unexpected changes, --success rules, one
reference replay per scenario shared by its trials, summaries and run.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp.harness.config import RunConfig
from envscaler_mcp.harness.oracle import OraclePolicy
from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.rundir import RunDir
from envscaler_mcp.harness.seats import Seat
from envscaler_mcp.references import reference as reference_module
from envscaler_mcp.report.summary import RunSummary, finish_run
from envscaler_mcp.report.table import summary_table
from envscaler_mcp.scenario.models import Scenario, ToolCall
from tests.harness.shop import ALICE, BOB, MINI_SHOP

pytestmark = pytest.mark.anyio


def _config(**kw: object) -> RunConfig:
    return RunConfig.model_validate(
        {"envs": [str(MINI_SHOP)], "agent": "mock", "transport": "memory", "progress": False, **kw}
    )


def plus(scenario: Scenario, *extra: tuple[str, dict[str, Any]]) -> list[ToolCall]:
    return [*scenario.reference_solution, *(ToolCall(tool=t, arguments=a) for t, a in extra)]


def seat(solutions: dict[str, list[ToolCall]]) -> Seat:
    """An oracle that replays the given solution per scenario id (the reference where none is given)."""
    return Seat("oracle", factory=lambda sc: OraclePolicy(sc, solution=solutions.get(sc.id)))


async def _run(out: Path, agent: Seat, **kw: object) -> RunSummary:
    return finish_run((await run_eval(_config(**kw), out, agent=agent)).path)


async def test_the_reference_passes_and_an_extra_change_fails(tmp_path: Path) -> None:
    solutions = {BOB.id: plus(BOB, ("cancel_order", {"order_id": "O-1004"}))}  # also cancels Alice's order
    summary = await _run(tmp_path, seat(solutions))
    results = {r.scenario_id: r for r in RunDir(tmp_path).read_results()}
    alice, bob = results[ALICE.id], results[BOB.id]
    assert (alice.state_check, alice.success, alice.unexpected_changes) == ("pass", True, [])
    assert bob.score == 1.0 and bob.state_check == "fail" and bob.success is False  # the checklist alone passes
    assert [(c.path, c.kind, c.expected, c.actual) for c in bob.unexpected_changes] == [
        ("orders['O-1004'].status", "collateral", "pending", "cancelled")]
    assert summary.success_rule == "checklist+state+observation" and summary.overall.state_check_failed == 1
    assert summary.overall.state_check_passed == 1 and summary.overall.success_rate == 0.5
    manifest = json.loads((tmp_path / "run.json").read_text())
    assert manifest["config"]["episode"]["success"] == "checklist+state+observation"
    assert any(t.kind == "state_check" for t in bob.timings)


async def test_success_checklist_ignores_the_state_check(tmp_path: Path) -> None:
    solutions = {BOB.id: plus(BOB, ("cancel_order", {"order_id": "O-1004"}))}
    summary = await _run(tmp_path, seat(solutions), episode={"success": "checklist"})
    bob = next(r for r in RunDir(tmp_path).read_results() if r.scenario_id == BOB.id)
    assert bob.state_check == "fail" and bob.success is True  # still recorded, not counted
    assert summary.overall.success_rate == 1.0 and "(success: checklist)" in str(summary_table(summary).title)


async def test_success_state_passes_a_right_state_the_checklist_misses(tmp_path: Path) -> None:
    other_words = [ToolCall(tool=c.tool, arguments={**c.arguments, "reason": "relocating"} if "reason" in c.arguments
                            else c.arguments) for c in ALICE.reference_solution]
    await _run(tmp_path, seat({ALICE.id: other_words}), episode={"success": "state"})
    alice = next(r for r in RunDir(tmp_path).read_results() if r.scenario_id == ALICE.id)
    assert alice.state_check == "pass" and alice.success is True  # notes are free text (inferred)
    assert alice.score is not None and alice.score < 1.0  # a validator wants the words 'moving abroad'


async def test_one_reference_replay_per_scenario_for_all_trials(tmp_path: Path, monkeypatch: Any) -> None:
    built: list[str] = []
    original = reference_module.build_reference

    async def counting(scenario: Scenario, *args: Any, **kwargs: Any) -> Any:
        built.append(scenario.id)
        return await original(scenario, *args, **kwargs)

    monkeypatch.setattr(reference_module, "build_reference", counting)
    summary = await _run(tmp_path, seat({}), trials=3, concurrency=4)
    assert sorted(built) == sorted([ALICE.id, BOB.id]) and summary.overall.episodes == 6
    assert summary.overall.state_check_passed == 6


async def test_no_reference_solution_is_not_available_and_judged_on_the_checklist(tmp_path: Path) -> None:
    bare = [s.model_copy(update={"reference_solution": []}) for s in (BOB, ALICE)]
    path = tmp_path / "bare.jsonl"
    path.write_text("".join(json.dumps(s.model_dump(mode="json")) + "\n" for s in bare))
    solutions = {BOB.id: plus(BOB), ALICE.id: plus(ALICE)}
    config = _config(scenarios_file=str(path))
    summary = finish_run((await run_eval(config, tmp_path / "run", agent=seat(solutions))).path)
    records = RunDir(tmp_path / "run").read_results()
    assert {r.state_check for r in records} == {"not_available"}
    assert {r.state_check_reason for r in records} == {"the scenario has no reference solution"}
    assert summary.overall.state_check_not_available == 2 and summary.overall.success_rate == 1.0
    assert "0 fail, 2 n/a" in " ".join(str(c) for col in summary_table(summary).columns for c in col._cells)

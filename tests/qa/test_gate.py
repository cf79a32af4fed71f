"""The scenario QA gate, with a fake episode standing in for a server."""

from __future__ import annotations

from typing import Any

import pytest

from envscaler_mcp.qa.gate import check_scenario
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import ChecklistItem, Scenario, ToolCall
from envscaler_mcp.skeleton.models import Provenance
from tests.qa.fake_episode import broken_episode, fake_shop_episode

pytestmark = pytest.mark.anyio

INITIAL = {
    "orders": {"O1": {"status": "pending", "total": 30}, "O2": {"status": "pending", "total": 5}},
    "notes": [],
}
CANCELLED = ("def check_func(final_state):\n"
             "    return final_state['orders']['O1']['status'] == 'cancelled'\n")
NOTE = ("def check_func(final_state):\n"
        "    return any(n['order_id'] == 'O1' and n['text'] == 'refund requested' for n in final_state['notes'])\n")
O2_UNTOUCHED = ("def check_func(final_state):\n"
                "    return final_state['orders']['O2'] == initial_state['orders']['O2']\n")


def scenario(checks: list[tuple[str, bool]] | None = None, solution: list[tuple[str, dict[str, Any]]] | None = None
             ) -> Scenario:
    checks = checks if checks is not None else [(CANCELLED, True), (NOTE, True), (O2_UNTOUCHED, False)]
    solution = solution if solution is not None else [
        ("cancel_order", {"order_id": "O1"}), ("add_note", {"order_id": "O1", "text": "refund requested"})]
    return Scenario(
        env_id="fake_shop", title="Cancel O1", task="Cancel order O1 and note that a refund was requested.",
        initial_state=INITIAL,
        checklist=[ChecklistItem(id=f"c{i}", description=f"Has item {i}?", validator=src, claims_change=claims)
                   for i, (src, claims) in enumerate(checks, start=1)],
        reference_solution=[ToolCall(tool=t, arguments=a) for t, a in solution],
        provenance=Provenance(source="hand-authored"),
    ).with_id()


async def gate(sc: Scenario, **kwargs: Any) -> Any:
    async with ValidatorSandbox(timeout_s=1.0, memory_mb=256) as sb:
        return await check_scenario(sc, kwargs.pop("factory", fake_shop_episode), sb, **kwargs)


def statuses(report: Any) -> dict[str, str]:
    return {s.name: s.status for s in report.steps}


async def test_good_scenario_passes() -> None:
    report = await gate(scenario())
    assert report.passed, report.reasons()
    assert statuses(report) == {"validators": "pass", "initial_false": "pass", "replay": "pass", "final_true": "pass",
                                "consistency": "pass"}
    assert [r.passed for r in report.initial_results] == [False, False, True]
    assert [r.passed for r in report.final_results] == [True, True, True]
    assert [c.ok for c in report.replay] == [True, True]
    assert report.final_state is not None and report.final_state["orders"]["O1"]["status"] == "cancelled"
    assert "final_state" not in report.model_dump()


async def test_item_already_true_on_the_initial_state_fails() -> None:
    report = await gate(scenario([(CANCELLED, True), (O2_UNTOUCHED, True)]))
    assert not report.passed
    assert statuses(report)["initial_false"] == "fail"
    assert report.step("initial_false").reasons == ["c2 claims a change but is already True on the initial state"]
    report = await gate(scenario([(O2_UNTOUCHED, False)], solution=[("cancel_order", {"order_id": "O1"})]))
    assert report.step("initial_false").reasons == ["every validator is already True on the initial state"]


async def test_failing_replay_call_fails_the_gate() -> None:
    report = await gate(scenario(solution=[("cancel_order", {"order_id": "O9"})]))
    assert not report.passed
    assert statuses(report)["replay"] == "fail" and statuses(report)["final_true"] == "skip"
    [reason] = report.step("replay").reasons
    assert reason.startswith("call 1 cancel_order") and "order O9 not found" in reason
    report = await gate(scenario(solution=[("no_such_tool", {})]))
    assert "is_error: Unknown tool: no_such_tool" in report.step("replay").reasons[0]


async def test_replay_that_does_not_solve_the_task_fails_final_true() -> None:
    report = await gate(scenario(solution=[("cancel_order", {"order_id": "O1"})]))
    assert statuses(report)["replay"] == "pass" and statuses(report)["final_true"] == "fail"
    assert report.step("final_true").reasons == ["c2 is not True after the reference solution"]


async def test_validator_crash_fails_the_gate() -> None:
    crash = "def check_func(final_state):\n    return final_state['orders']['O1']['missing_field'] == 1\n"
    report = await gate(scenario([(CANCELLED, True), (crash, True)]))
    assert not report.passed
    assert report.step("validators").status == "fail"
    assert "c2 on the initial state: raised KeyError: 'missing_field'" in report.step("validators").reasons
    report = await gate(scenario([(CANCELLED, True), ("def check_func(s):\n    return 'yes'\n", True)]))
    assert any("returned 'yes' (str), not a bool" in r for r in report.step("validators").reasons)


async def test_missing_reference_empty_checklist_and_broken_server() -> None:
    report = await gate(scenario(solution=[]))
    assert statuses(report)["replay"] == "fail"
    report = await gate(scenario(solution=[]), require_reference=False)
    assert report.passed and statuses(report)["replay"] == "skip" and statuses(report)["final_true"] == "skip"
    report = await gate(scenario(checks=[]))
    assert not report.passed and "the checklist is empty" in report.step("validators").reasons
    report = await gate(scenario(), factory=broken_episode)
    assert report.step("replay").reasons == ["the episode failed: ConnectionError: server exited with code 1"]


async def test_mutation_check_flags_an_existence_only_validator() -> None:
    exists_only = "def check_func(final_state):\n    return any(n['order_id'] == 'O1' for n in final_state['notes'])\n"
    report = await gate(scenario([(CANCELLED, True), (exists_only, True)]), mutation=True)
    assert report.mutation is not None
    assert report.mutation.unguarded == ["notes[0].text", "notes[0].author", "orders.O2.status", "orders.O2"]
    caught = {(p.path, p.mutation): p.caught_by for p in report.mutation.probes}
    assert caught[("orders.O1.status", "reverted to its initial value \"pending\"")] == ["c1"]
    assert caught[("notes[0]", "removed again")] == ["c2"]
    # what no validator guards, the state check catches: the gate passes
    assert report.passed and report.step("mutation").status == "pass" and report.mutation.uncaught == []
    text = next(p for p in report.mutation.probes if p.path == "notes[0].text")
    assert text.caught_by == [] and text.unexpected == ['notes[0].text: expected "refund requested", got "refund '
                                                        'requested-x"']


async def test_mutation_check_passes_when_every_field_is_guarded() -> None:
    full_note = ("def check_func(final_state):\n"
                 "    return final_state['notes'] == [{'order_id': 'O1', 'text': 'refund requested', 'author': 'agent'}]\n")
    report = await gate(scenario([(CANCELLED, True), (full_note, True), (O2_UNTOUCHED, False)]), mutation=True)
    assert report.step("mutation").status == "pass", report.reasons()
    assert report.mutation is not None and report.mutation.unguarded == []
    # status: revert + other value; note: removal + 3 fields; collateral: O2 cancelled too, O2 removed
    assert len(report.mutation.probes) == 8 and sum(p.collateral for p in report.mutation.probes) == 2


def calls(*pairs: tuple[str, dict[str, Any]]) -> list[ToolCall]:
    return [ToolCall(tool=t, arguments=a) for t, a in pairs]


async def test_wrong_solutions_must_each_fail_some_validator() -> None:
    forgot_note = calls(("cancel_order", {"order_id": "O1"}))
    wrong_order = calls(("cancel_order", {"order_id": "O2"}), ("add_note", {"order_id": "O1", "text": "refund requested"}))
    report = await gate(scenario().model_copy(update={"wrong_solutions": [forgot_note, wrong_order]}))
    assert report.passed, report.reasons()
    assert report.step("wrong_solutions").status == "pass"
    assert [(w.label, w.failing) for w in report.wrong_solutions] == [
        ("wrong solution 1", ["c2"]), ("wrong solution 2", ["c1", "c3"])]


async def test_the_initial_reference_and_wrong_states_are_judged_in_one_request(monkeypatch: pytest.MonkeyPatch
                                                                                  ) -> None:
    """A wrong solution that fails only on the reference's final state, with one between it and a failed
    replay: each probe's verdicts come back to its own step from the scenario's one validator request."""
    from envscaler_mcp.sandbox import process

    sent: list[int] = []
    real = process.Worker.ask

    async def ask(worker: process.Worker, header: dict[str, Any], *args: Any) -> Any:
        sent.append(int(header.get("episodes", 1)))
        return await real(worker, header, *args)

    monkeypatch.setattr(process.Worker, "ask", ask)
    forgot_note = calls(("cancel_order", {"order_id": "O1"}))
    report = await gate(scenario().model_copy(update={"wrong_solutions": [forgot_note]}))
    assert sent == [3]  # the initial state, the reference's and the wrong solution's
    assert [r.passed for r in report.initial_results] == [False, False, True]
    assert [r.passed for r in report.final_results] == [True, True, True]
    assert [(w.label, w.failing) for w in report.wrong_solutions] == [("wrong solution 1", ["c2"])]


async def test_a_wrong_solution_the_checklist_accepts_fails_the_gate() -> None:
    # Without the O2 check, cancelling both orders passes; the failed first call is skipped, not fatal.
    lenient = scenario([(CANCELLED, True), (NOTE, True)])
    both = calls(("cancel_order", {"order_id": "O9"}), ("cancel_order", {"order_id": "O1"}),
                 ("cancel_order", {"order_id": "O2"}), ("add_note", {"order_id": "O1", "text": "refund requested"}))
    report = await gate(lenient.model_copy(update={"wrong_solutions": [both]}))
    assert not report.passed
    assert statuses(report)["final_true"] == "pass" and statuses(report)["wrong_solutions"] == "fail"
    assert report.step("wrong_solutions").reasons == [
        "wrong solution 1 passes every validator; the checklist is too lenient"]
    assert [c.ok for c in report.wrong_solutions[0].calls] == [False, True, True, True]


async def test_the_caller_adds_wrong_solutions_and_a_broken_episode_is_reported() -> None:
    from envscaler_mcp.qa.wrong import WrongSolution

    probe = WrongSolution(label="probe: reference only", calls=scenario().reference_solution)
    report = await gate(scenario(), wrong_solutions=[probe])
    assert report.step("wrong_solutions").reasons == [
        "probe: reference only passes every validator; the checklist is too lenient"]
    report = await gate(scenario().model_copy(update={"wrong_solutions": [calls(("get_order", {"order_id": "O1"}))]}),
                        factory=broken_episode)
    assert report.step("wrong_solutions").reasons == [
        "wrong solution 1 could not be replayed: the episode failed: ConnectionError: server exited with code 1"]

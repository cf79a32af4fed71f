"""Multi-turn scenarios on mini_shop: turns revealed verbatim one per agent reply, tools that appear at a turn,
items judged at a turn's end, and the state checked after every turn (an agent acting a turn early fails
although its final state is the reference's), on every transport."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import ValidationError

from envscaler_mcp.harness.checks import SandboxChecker
from envscaler_mcp.harness.episode import run_episode
from envscaler_mcp.harness.models import EpisodeResult
from envscaler_mcp.harness.oracle import OraclePolicy
from envscaler_mcp.harness.turns import TurnScoring
from envscaler_mcp.harness.user_sim import ScriptedSeat
from envscaler_mcp.providers.base import Message, ToolCallRequest
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.references.reference import Reference, StateVerdict, build_reference
from envscaler_mcp.scenario.models import ChecklistItem, Scenario, StateCheckOptions, ToolCall, Turn
from tests.harness.shop import BOB, ENV_INFO, calls, shop_server

pytestmark = pytest.mark.anyio

TURN1 = "Please cancel Bob's order O-1002."
TURN2 = "Thanks. Now add the note 'Customer changed mind' to it."
GET = ("get_order", {"order_id": "O-1002"})
CANCEL = ("cancel_order", {"order_id": "O-1002"})
NOTE = ("add_note", {"order_id": "O-1002", "text": "Customer changed mind"})


def _call(item: tuple[str, dict[str, Any]]) -> ToolCall:
    return ToolCall(tool=item[0], arguments=item[1])


def two_turns(*, hide_note: bool) -> Scenario:
    """Bob's scenario in two turns: cancel (item c1 judged then), then the note (c2, at the end)."""
    turns = [Turn(user=TURN1, reference=[_call(GET), _call(CANCEL)], checks=["c1"], answer="Cancelled."),
             Turn(user=TURN2, reference=[_call(NOTE)], tools_added=["add_note"] if hide_note else [])]
    data = BOB.model_dump(exclude={"id", "reference_solution"})
    return Scenario.model_validate({**data, "task": f"{TURN1} {TURN2}", "turns": turns}).with_id()


@pytest.fixture(params=["memory", "pipe", "http", "stdio"])
async def server(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    async with shop_server(request.param) as s:
        yield s


async def _run(server: Any, scenario: Scenario, agent: Any, user: Any = None) -> EpisodeResult:
    reference = await build_reference(scenario, server.episode)
    assert not reference.reason, reference.reason
    async with SandboxChecker() as checker:
        return await run_episode(scenario, source=server, agent=agent, checker=checker, env_info=ENV_INFO,
                                 reference=reference, user=user)


def test_the_reference_solution_is_the_turns_calls_in_order() -> None:
    scenario = two_turns(hide_note=False)
    assert [c.tool for c in scenario.reference_solution] == ["get_order", "cancel_order", "add_note"]
    assert scenario.id != BOB.id  # turns are part of what identifies the scenario
    with pytest.raises(ValidationError, match="turns' reference calls"):
        Scenario.model_validate({**scenario.model_dump(), "reference_solution": [_call(NOTE).model_dump()]})
    with pytest.raises(ValidationError, match="do not exist: c9"):
        Scenario.model_validate({**scenario.model_dump(),
                                 "turns": [{"user": "x", "checks": ["c9"]}], "reference_solution": []})
    assert Scenario.model_validate_json(scenario.model_dump_json()) == scenario  # round trip


async def test_the_oracle_passes_every_turn(server: Any) -> None:
    scenario = two_turns(hide_note=True)
    result = await _run(server, scenario, OraclePolicy(scenario))
    assert result.success is True and result.score == 1.0 and result.state_check == "pass"
    assert [(t.turn, t.reached, t.state_check) for t in result.turns] == [(1, True, "pass"), (2, True, "pass")]
    users = [m.content for m in result.messages if m.role == "user"]
    assert users == [TURN1, TURN2]  # revealed verbatim, one per agent reply


async def test_acting_a_turn_early_fails_although_the_final_state_is_the_references(server: Any) -> None:
    scenario = two_turns(hide_note=False)
    eager = MockProvider([calls(GET), calls(CANCEL), calls(NOTE), "Done, and I added the note too.", "Done."])
    result = await _run(server, scenario, eager)
    assert result.checks[0].status == "pass" and result.checks[1].status == "pass"  # the final state is right
    assert result.turns[0].state_check == "fail" and result.turns[1].state_check == "pass"
    assert result.state_check == "fail"
    assert result.state_check_reason == "turn 1 of 2: the state differs from the reference's"
    assert result.success is False


async def test_a_turn_that_does_not_check_the_state_lets_the_work_come_early(server: Any) -> None:
    scenario = two_turns(hide_note=False)
    unjudged = [scenario.turns[0].model_copy(update={"checks": [], "check_state": False}), scenario.turns[1]]
    scenario = Scenario.model_validate({**scenario.model_dump(exclude={"id"}), "turns": unjudged}).with_id()
    assert "check_state" in scenario.turns[0].model_dump() and "check_state" not in scenario.turns[1].model_dump()
    eager = MockProvider([calls(GET), calls(CANCEL), calls(NOTE), "Done, and I added the note too.", "Done."])
    result = await _run(server, scenario, eager)
    assert [(t.state_check, t.state_check_reason[:40]) for t in result.turns] == [
        ("not_available", "the scenario does not judge the state at"), ("pass", "")]
    assert result.state_check == "pass" and result.success is True
    lazy = MockProvider(["Sure.", "Done."])  # the last turn is judged whatever the earlier ones say
    result = await _run(server, scenario, lazy)
    assert result.turns[1].state_check == "fail" and result.success is False


async def test_an_item_judged_at_its_turn_fails_when_the_work_comes_a_turn_late(server: Any) -> None:
    scenario = two_turns(hide_note=False)
    late = MockProvider(["Sure, give me a moment.", calls(GET), calls(CANCEL), calls(NOTE), "All done."])
    result = await _run(server, scenario, late)
    verdicts = {c.id: c.status for c in result.checks}
    assert verdicts == {"c1": "fail", "c2": "pass"}  # c1 read the state at turn 1's end: not cancelled yet
    assert result.turns[0].state_check == "fail" and result.success is False


async def test_a_tool_added_at_a_later_turn_is_hidden_before_it(server: Any) -> None:
    scenario = two_turns(hide_note=True)
    agent = MockProvider([calls(NOTE), calls(GET), calls(CANCEL), "Cancelled.", calls(NOTE), "Noted."])
    result = await _run(server, scenario, agent)
    offered = [{t.name for t in tools} for _, tools, _ in agent.requests]
    assert "add_note" not in offered[0] and "add_note" in offered[-1]
    first_result = next(m for m in result.messages if m.role == "tool")
    assert first_result.is_error and "Unknown tool 'add_note'" in first_result.content
    assert "add_note" not in first_result.content.split("Available tools:")[1]
    assert result.success is True  # the refused early call changed nothing


async def test_an_episode_that_stops_in_the_first_turn_fails_the_later_ones(server: Any) -> None:
    scenario = two_turns(hide_note=False)
    quitter = MockProvider([calls(GET)], repeat_last=True)  # never answers: the step limit ends it
    reference = await build_reference(scenario, server.episode)
    from envscaler_mcp.harness.models import EpisodeConfig
    async with SandboxChecker() as checker:
        result = await run_episode(scenario, source=server, agent=quitter, checker=checker, env_info=ENV_INFO,
                                   reference=reference, config=EpisodeConfig(max_steps=3))
    assert result.status == "max_steps"
    assert result.turns[0].reached is False and result.turns[0].state_check == "fail"
    assert {c.id: c.status for c in result.checks}["c1"] == "fail"


async def test_the_scripted_user_seat_in_conversation_mode(server: Any) -> None:
    from envscaler_mcp.harness.models import EpisodeConfig
    scenario = two_turns(hide_note=True)
    reference = await build_reference(scenario, server.episode)
    async with SandboxChecker() as checker:
        result = await run_episode(scenario, source=server, agent=OraclePolicy(scenario), checker=checker,
                                   env_info=ENV_INFO, reference=reference, user=ScriptedSeat(),
                                   config=EpisodeConfig(mode="conversation"))
    assert [m.content for m in result.messages if m.role == "user"] == [TURN1, TURN2]
    assert result.success is True and result.user_model == "scripted"


async def test_the_gate_judges_a_turn_item_on_the_references_state_at_that_turn() -> None:
    from envscaler_mcp.qa.gate import check_scenario
    from envscaler_mcp.sandbox.validators import ValidatorSandbox
    from envscaler_mcp.scenario.models import ChecklistItem
    scenario = two_turns(hide_note=False)
    # True only while the order is cancelled and the note is not there yet: the state at turn 1's end.
    between = ChecklistItem(id="c3", description="Has O-1002 been cancelled before the note was added?",
                            validator="def check_func(final_state):\n    o = final_state['orders']['O-1002']\n"
                                      "    return o['status'] == 'cancelled' and 'Customer changed mind' not in o['notes']\n")
    data = scenario.model_dump(exclude={"id", "reference_solution"})
    data["checklist"].append(between.model_dump())
    data["turns"][0]["checks"] = ["c1", "c3"]
    at_turn = Scenario.model_validate(data).with_id()
    data["turns"][0]["checks"] = ["c1"]
    at_end = Scenario.model_validate(data).with_id()
    async with shop_server("memory") as server, ValidatorSandbox() as sandbox:
        passed = await check_scenario(at_turn, server.episode, sandbox)
        failed = await check_scenario(at_end, server.episode, sandbox)
    assert passed.step("final_true").status == "pass", passed.reasons()
    assert failed.step("final_true").status == "fail"
    assert any("c3 is not True" in r for r in failed.reasons())


async def test_the_observation_check_is_judged_turn_by_turn(server: Any) -> None:
    scenario = two_turns(hide_note=False)
    looked = MockProvider([calls(GET), calls(CANCEL), "Cancelled.", calls(NOTE), "Noted."])
    blind = MockProvider([calls(CANCEL), "Cancelled.", calls(NOTE), "Noted."])  # never reads the order
    late = MockProvider([calls(CANCEL), "Cancelled.", calls(GET), calls(NOTE), "Noted."])  # reads it a turn late
    verdicts = [(await _run(server, scenario, agent)).observation for agent in (looked, blind, late)]
    assert [v.status for v in verdicts] == ["passed", "failed", "failed"]
    assert verdicts[2].evidence and verdicts[2].evidence[0].startswith("turn 1")


async def test_a_hedged_or_negated_answer_fails_on_every_transport(server: Any) -> None:
    """The answer attacks of tests/transcript/test_claims.py through whole episodes: the reference's calls, then an
    answer that states the total beside a rival, or denies it, fails the transcript item; the plain one passes."""
    told = ChecklistItem(id="c3", description="Has the agent told Bob his order's total ($12.00)?", kind="transcript",
                         validator="from transcript_checks import says\n"
                                   "def check_func(transcript):\n    return says(transcript, 12)\n")
    data = BOB.model_dump(exclude={"id"})
    data["checklist"].append(told.model_dump())
    scenario = Scenario.model_validate({**data, "reference_answer": "Cancelled and noted; the total was $12.00."})
    scenario = scenario.with_id()
    verdicts = []
    for answer in ("Cancelled and noted; the total was $12.00.", "Cancelled; the total was $12.00 or $13.00.",
                   "Cancelled; the total was not $12.00."):
        agent = MockProvider([calls(GET), calls(CANCEL), calls(NOTE), answer])
        result = await _run(server, scenario, agent)
        verdicts.append((result.checks[-1].status, result.success))
    assert verdicts == [("pass", True), ("fail", False), ("fail", False)]


def test_a_turn_that_ends_on_a_tool_result_is_judged_on_the_agents_words_only() -> None:
    # turn 1 is answered; turn 2 ends on a lookup the agent never spoke about: its answer is the agent's
    # last text, never the user's message or the tool's result
    messages = [Message(role="user", content="Where is O-1002?"),
                Message(role="assistant", content="It is pending."),
                Message(role="user", content="Cancel it."),
                Message(role="assistant", tool_calls=[ToolCallRequest(id="c1", name="get_order",
                                                                      arguments={"order_id": "O-1002"})]),
                Message(role="tool", tool_call_id="c1", name="get_order", content='{"status": "cancelled"}')]
    scenario = BOB.model_copy(update={"turns": [Turn(user="Where is O-1002?"), Turn(user="Cancel it."),
                                                Turn(user="Thanks.")]})
    turns = TurnScoring(scenario, marks=[2, 5], states=[None, None], messages=messages, reference=None)
    assert turns.transcript_at(0)["answer"] == "It is pending."
    assert turns.transcript_at(1)["answer"] == "It is pending."


def test_a_scenario_that_turns_the_state_check_off_judges_no_turn() -> None:
    # the reference's state at turn 1's end has O-1002 cancelled; an agent that did nothing in turn 1 fails
    # that turn, unless the scenario turns the state check off: then no turn is judged at all
    scenario = two_turns(hide_note=False)
    start = scenario.initial_state
    order = start["orders"]["O-1002"]
    cancelled = {**start, "orders": {**start["orders"], "O-1002": {**order, "status": "cancelled"}}}
    noted = {**cancelled, "orders": {**start["orders"], "O-1002": {
        **order, "status": "cancelled", "notes": [*order["notes"], "Customer changed mind"]}}}
    on = Reference(scenario=scenario, final_state=noted, turn_states=[cancelled])
    assert on.check_turn(0, start).status == "fail" and on.check_turn(0, cancelled).status == "pass"
    assert on.check_turn(0, None, no_state_reason="no admin plane") == StateVerdict(status="not_available",
                                                                                    reason="no admin plane")
    assert on.check_turn(1, start) == on.check(start) and on.check(start).status == "fail"  # the last turn
    lazy = TurnScoring(scenario, marks=[2], states=[start], messages=[], reference=on)
    outcomes, verdict = lazy.state_checks(on.check(noted))
    assert [o.state_check for o in outcomes] == ["fail", "pass"] and verdict.reason.startswith("turn 1 of 2:")
    off = Reference(scenario=scenario.model_copy(update={"state_check": StateCheckOptions(disabled="random")}),
                    final_state=noted, turn_states=[cancelled])
    why = "the scenario turns the state check off: random"
    assert off.check_turn(0, start) == StateVerdict(status="not_available", reason=why)
    lazy = TurnScoring(scenario, marks=[2], states=[start], messages=[], reference=off)
    outcomes, verdict = lazy.state_checks(off.check(noted))
    assert [(o.state_check, o.state_check_reason) for o in outcomes] == [("not_available", why)] * 2
    assert verdict.status == "not_available"
    without = Reference(scenario=scenario, final_state=None, turn_states=[cancelled])  # never replayed to the end
    assert without.check_turn(0, cancelled) == StateVerdict(status="not_available", reason="no reference final state")

"""How a validator's result becomes an episode's verdict: a failed state item names the values it read, a
transcript item does not (it reads no state), and a list that became an object is a mismatch of the state check
(both written for survivors of benchmarks/mutation.py)."""

from __future__ import annotations

import pytest

from envscaler_mcp.compare.statecheck import compare_states
from envscaler_mcp.harness.checks import SandboxChecker, mark_at_start, outcome_from_result
from envscaler_mcp.sandbox.results import CheckResult
from envscaler_mcp.scenario.models import ChecklistItem

STATE_ITEM = ChecklistItem(id="c1", description="Has O1 shipped?",
                           validator="def check_func(final_state):\n    return final_state['orders']['O1'] == 'shipped'\n")
SAYS_ITEM = ChecklistItem(id="c2", description="Told the total?", kind="transcript",
                          validator="def check_func(transcript):\n    return 'x' in transcript['answer']\n")
FINAL = {"orders": {"O1": "pending"}}


def test_a_failed_state_item_says_what_it_read_and_a_transcript_item_does_not() -> None:
    failed = CheckResult(item_id="c1", passed=False)
    state = outcome_from_result(STATE_ITEM, failed, FINAL)
    assert state.status == "fail" and "it read" in state.reason and "pending" in state.reason
    said = outcome_from_result(SAYS_ITEM, failed, FINAL)
    assert said.status == "fail" and said.reason == "check_func returned False"
    errored = outcome_from_result(STATE_ITEM, CheckResult(item_id="c1", passed=False, reason="raised KeyError: 'O1'"), FINAL)
    assert errored.status == "error" and errored.reason == "raised KeyError: 'O1'"


def test_at_start_marks_need_one_outcome_per_item() -> None:
    passed = CheckResult(item_id="c1", passed=True)
    outcomes = [outcome_from_result(STATE_ITEM, passed, FINAL), outcome_from_result(SAYS_ITEM, passed, FINAL)]
    with pytest.raises(ValueError):
        mark_at_start(outcomes, outcomes[:1])  # a verdict without its start-of-episode twin is a bug, not a guess
    assert [o.at_start for o in mark_at_start(outcomes, outcomes)] == [True, True]


def test_a_list_that_became_an_object_is_a_mismatch() -> None:
    initial = {"tags": ["a"]}
    reference = {"tags": ["a", "b"]}
    result = compare_states(initial, reference, {"tags": {"0": "a", "1": "b"}})
    assert not result.passed and [c.path for c in result.changes] == ["tags"]
    assert compare_states(initial, reference, {"tags": ["a", "b"]}).passed


def test_a_call_without_a_result_is_an_error_and_a_user_message_is_no_result() -> None:
    from envscaler_mcp.harness.checks import episode_transcript
    from envscaler_mcp.providers.base import Message, ToolCallRequest
    messages = [Message(role="user", content="Cancel O1."),
                Message(role="assistant", tool_calls=[ToolCallRequest(id="c1", name="cancel_order",
                                                                      arguments={"order_id": "O1"})]),
                Message(role="user", content="Are you there?")]  # the call's result never came
    (call,) = episode_transcript(messages, "")["calls"]
    assert call["is_error"] is True and call["result"] in ("", None)


def test_consistency_counts_a_record_reached_through_a_changed_one_and_a_four_letter_search() -> None:
    from envscaler_mcp.qa.consistency import _looked_up, mismatched_records
    from envscaler_mcp.scenario.models import Scenario, ToolCall
    from envscaler_mcp.skeleton.models import Provenance
    state = {"flights": {"FL-1": {"id": "FL-1", "to": "Oslo"}, "FL-2": {"id": "FL-2", "to": "Rome"},
                         "FL-3": {"id": "FL-3", "to": "Oslo"}},
             "tickets": {"T-1": {"id": "T-1", "flight": "FL-1", "seat": "1A"}}}
    final = {**state, "tickets": {"T-1": {"id": "T-1", "flight": "FL-2", "seat": "1A"}}}
    scenario = Scenario(env_id="e", task="I was on FL-1; move ticket T-1 to a later flight.", initial_state=state,
                        checklist=[], reference_solution=[ToolCall(tool="rebook", arguments={"ticket_id": "T-1",
                                                                                           "flight_id": "FL-2"})],
                        provenance=Provenance(source="hand-authored"))
    assert mismatched_records(scenario, final) == []  # FL-1 is the ticket's old flight: accounted for
    wrong = scenario.model_copy(update={"task": "I was on FL-3; move ticket T-1 to a later flight."})
    assert mismatched_records(wrong, final) != []  # FL-3: the ticket never held it, the reference never reads it
    lamps = {"P1": {"name": "Blue Lamp"}, "P2": {"name": "Red Lamp"}}
    assert _looked_up(lamps, "P1", {"Lamp"}) and not _looked_up(lamps, "P1", {"Lam"})
    # a search text another record holds too does not single P1 out; one only P1 holds does
    assert not _looked_up(lamps, "P1", {"Lamp"}, singles_out=True) and _looked_up(lamps, "P1", {"Blue"}, singles_out=True)


@pytest.mark.anyio
async def test_the_checker_eval_uses_runs_validators_under_the_os_layers() -> None:
    # eval and the gym build SandboxChecker without naming isolation: the default must be the confined one
    async with SandboxChecker() as checker:
        [outcome] = await checker.check([STATE_ITEM], {}, {"orders": {"O1": "shipped"}})
        report = checker.isolation
    assert outcome.status == "pass"
    assert report.level != "off" and "seccomp" not in report.refused, report


def test_only_a_stated_id_the_reference_never_reaches_is_a_stray() -> None:
    from envscaler_mcp.qa.consistency import mismatched_records
    from envscaler_mcp.scenario.models import Scenario, ToolCall
    from envscaler_mcp.skeleton.models import Provenance
    rooms = {"lotus": {"id": "lotus", "floor": 2, "guest": ""}, "cedar": {"id": "cedar", "floor": 3, "guest": "Dana"}}
    orders = {"O-1": {"id": "O-1", "item": "Desk Lamp"}, "O-2": {"id": "O-2", "item": "Floor Lamp"}}
    state = {"rooms": rooms, "orders": orders}

    def scenario(task: str, *calls: ToolCall) -> Scenario:
        return Scenario(env_id="e", task=task, initial_state=state, checklist=[], reference_solution=list(calls),
                        provenance=Provenance(source="hand-authored"))

    book = ToolCall(tool="book_room", arguments={"room_id": "lotus", "guest": "Kim"})
    booked = {**state, "rooms": {**rooms, "lotus": {**rooms["lotus"], "guest": "Kim"}}}
    # a room whose key is its name ("cedar") is named for context, not given as an id
    assert mismatched_records(scenario("Cedar is taken, so book the lotus room for Kim.", book), booked) == []
    cancel = ToolCall(tool="cancel_order", arguments={"order_id": "O-1"})
    cancelled = {**state, "orders": {**orders, "O-1": {**orders["O-1"], "item": "", "status": "cancelled"}}}
    task = "Keep order O-2, the floor lamp; cancel O-1."
    assert mismatched_records(scenario(task, cancel), cancelled) == [
        "the task gives the id of orders O-2, which the reference solution neither changes nor looks up, while it "
        "changes O-1"]  # an id the reference never reaches
    search = ToolCall(tool="search_orders", arguments={"query": "Floor"})
    assert mismatched_records(scenario(task, search, cancel), cancelled) == []  # looked up by a search of its item

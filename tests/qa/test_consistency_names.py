"""The consistency step's named-records rule against tasks whose record was swapped for another (the seeded
task/solution mismatches that passed it before: tests/qa/seeded_defects.py, benchmarks/gate_defects.py): a
record named two ways that are two records, a record named by key in place of the one the reference uses, and
an id whose only "look-up" is a value many records share."""

from __future__ import annotations

import copy
from typing import Any

from envscaler_mcp.qa.consistency import consistency_problems
from envscaler_mcp.qa.grounding import contradicting_names
from envscaler_mcp.scenario.models import ChecklistItem, Scenario, ToolCall
from envscaler_mcp.skeleton.models import Provenance

STATE: dict[str, Any] = {
    "plans": {"free": {"name": "free", "quota_gb": 5}, "standard": {"name": "standard", "quota_gb": 100},
              "business": {"name": "business", "quota_gb": 1000}},
    "users": {"U01": {"user_id": "U01", "name": "Ben Okoro", "plan": "business"},
              "U08": {"user_id": "U08", "name": "Priya Nair", "plan": "business"}},
    "tickets": {"INC-3001": {"id": "INC-3001", "reporter": "U01", "category": "hardware", "status": "closed",
                             "title": "Printer jams"},
                "INC-3022": {"id": "INC-3022", "reporter": "U01", "category": "hardware", "status": "closed",
                             "title": "Dock flickers"}},
}
ITEM = ChecklistItem(id="c1", description="Has the change been made?",
                     validator="def check_func(final_state):\n    return True\n")


def scenario(task: str, *calls: ToolCall) -> Scenario:
    return Scenario(env_id="e", task=task, initial_state=STATE, checklist=[ITEM], reference_solution=list(calls),
                    provenance=Provenance(source="hand-authored"))


def after(collection: str, key: str, **fields: Any) -> dict[str, Any]:
    state = copy.deepcopy(STATE)
    state[collection][key].update(fields)
    return state


CHANGE_PLAN = ToolCall(tool="change_plan", arguments={"user_id": "U01", "plan": "standard"})
DOWNGRADED = after("users", "U01", plan="standard")


def test_a_record_named_by_name_and_by_another_records_id_is_a_contradiction() -> None:
    right = scenario("Ben Okoro (U01) here. Please move me to the standard plan.", CHANGE_PLAN)
    assert consistency_problems(right, DOWNGRADED) == []
    for task in ("Ben Okoro (U08) here. Please move me to the standard plan.",
                 "U08, Ben Okoro: please move me to the standard plan."):
        wrong = scenario(task, CHANGE_PLAN)
        assert contradicting_names(STATE, task) == [("users", "Ben Okoro", "U08", "U01")]
        assert "the task calls users U08 'Ben Okoro', which is U01's" in consistency_problems(wrong, DOWNGRADED)
    # two records named apart in one sentence are no contradiction
    assert contradicting_names(STATE, "Ben Okoro wants the plan Priya Nair (U08) has.") == []


def test_a_record_named_by_key_in_place_of_the_one_the_reference_uses_is_refused() -> None:
    wrong = scenario("Ben Okoro (U01) here. Please move me from the business plan to the free plan.", CHANGE_PLAN)
    assert ("the task names plans free, which the reference solution never uses, while it acts on standard, which "
            "the task does not name") in consistency_problems(wrong, DOWNGRADED)
    right = scenario("Ben Okoro (U01) here. Please move me from the business plan to the standard plan.", CHANGE_PLAN)
    assert consistency_problems(right, DOWNGRADED) == []  # the current plan is named for context: accounted for


def test_a_value_many_records_share_does_not_look_up_the_id_the_task_states() -> None:
    reopen = ToolCall(tool="reopen_ticket", arguments={"ticket_id": "INC-3022", "category": "hardware"})
    reopened = after("tickets", "INC-3022", status="open")
    assert consistency_problems(scenario("My dock flickers again (ticket INC-3022): please reopen it.", reopen),
                                reopened) == []
    wrong = scenario("My dock flickers again (ticket INC-3001): please reopen it.", reopen)
    assert consistency_problems(wrong, reopened) == [
        "the task gives the id of tickets INC-3001, which the reference solution neither changes nor looks up, "
        "while it changes INC-3022"]
    # a text only that ticket holds is a look-up of it
    search = ToolCall(tool="find_ticket", arguments={"title": "Printer jams"})
    assert consistency_problems(scenario("My dock flickers again (ticket INC-3001): please reopen it.", search,
                                         reopen), reopened) == []

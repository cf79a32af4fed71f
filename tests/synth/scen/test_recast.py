"""A task about a record the rules do not let change, recast by code onto a record that takes the change
(synth/scen/recast.py). Every model answer here is hand-written (tests/synth/fixtures/scen_answers/mini_shop/
retarget/: a task cancelling Marta's shipped order O-2003, while her O-2001 and Jonas's O-2002 are still
pending)."""

from __future__ import annotations

from typing import Any

import pytest

from envscaler_mcp.catalog.store import load_scenarios
from envscaler_mcp.scenario.models import ChecklistItem, ToolCall
from envscaler_mcp.synth.scen.anchors import Anchor
from envscaler_mcp.synth.scen.recast import recast
from envscaler_mcp.synth.scen.records import Draft
from envscaler_mcp.synth.scen.retarget import Misnamed

from ..fixtures.scen_router import ScenRouter
from .test_retarget import MisnamingModel, task_prompts
from .test_steering import STATE

TASK = ("Hi, this is Marta Lindqvist. I ordered the wrong size, so please cancel my shipped order O-2003 and "
        "record the reason. Please don't change anything on Jonas Weber's orders.")


def anchor(state: dict[str, Any], collection: str, rid: str) -> Anchor:
    return Anchor(collection, rid, state[collection][rid])


def draft(task: str = TASK) -> Draft:
    check = 'def check_func(final_state):\n    return final_state["orders"]["O-2003"]["status"] == "cancelled"\n'
    keep = 'def check_func(final_state):\n    return final_state["orders"].get("O-20031") is None\n'
    return Draft(title="Cancel Marta's shipped order", task=task,
                 checklist=[ChecklistItem(id="c1", description="Has order O-2003 been cancelled?", validator=check),
                            ChecklistItem(id="c2", description="Has no order O-20031 appeared?", validator=keep,
                                          claims_change=False)],
                 solution=[ToolCall(tool="cancel_order", arguments={"order_id": "O-2003", "reason": "wrong size"})])


def wrong(state: dict[str, Any], old: str, *takers: str) -> Misnamed:
    return Misnamed(anchor(state, "orders", old), 'call 1 cancel_order({"order_id": "O-2003"})',
                    "only pending orders can be cancelled", [anchor(state, "orders", t) for t in takers],
                    tool="cancel_order")


def test_the_draft_is_written_about_the_peer_everywhere_and_says_so() -> None:
    got = recast(draft(), wrong(STATE, "O-2003", "O-2001", "O-2002"), STATE)
    assert got is not None
    assert "my pending order O-2001 and" in got.task and "O-2003" not in got.task  # the id, and its status word
    assert got.title == "Cancel Marta's pending order"
    assert got.checklist[0].description == "Has order O-2001 been cancelled?"
    assert '["O-2001"]["status"] == "cancelled"' in (got.checklist[0].validator or "")
    assert "O-20031" in (got.checklist[1].validator or "") and "O-20031" in got.checklist[1].description  # a word
    assert got.solution[0].arguments == {"order_id": "O-2001", "reason": "wrong size"}
    assert got.notes[-1].startswith("task recast from orders O-2003 to O-2001 by code ('O-2003' -> 'O-2001', "
                                    "'shipped' -> 'pending'): the task names orders O-2003")


def test_a_peer_of_someone_else_the_task_names_is_not_taken() -> None:
    # Jonas's O-2002 takes the change, but the task speaks as Marta and names Jonas: "Marta Lindqvist" would
    # become "Jonas Weber" in a task that already asks to leave Jonas's orders alone
    assert recast(draft(), wrong(STATE, "O-2003", "O-2002"), STATE) is None
    got = recast(draft(), wrong(STATE, "O-2003", "O-2002", "O-2001"), STATE)
    assert got is not None and "O-2001" in got.task  # the next taker that fits
    # a peer that differs from the record in a reference to a record the task names (the customer record)
    state = {"customers": {"C1": {"name": "Marta Lindqvist"}, "C2": {"name": "Jonas Weber"}},
             "orders": {"O-2003": {"customer_id": "C1", "status": "shipped"},
                        "O-2002": {"customer_id": "C2", "status": "pending"},
                        "O-2001": {"customer_id": "C1", "status": "pending"}}}
    mine = "Hi, this is Marta Lindqvist: please cancel my order O-2003 and record the reason as wrong size."
    assert recast(draft(mine), wrong(state, "O-2003", "O-2002"), state) is None
    got = recast(draft(mine), wrong(state, "O-2003", "O-2002", "O-2001"), state)
    assert got is not None and "my order O-2001 and" in got.task


def test_nothing_is_recast_without_a_taker_or_an_id_in_the_task() -> None:
    assert recast(draft(), wrong(STATE, "O-2003"), STATE) is None
    assert recast(draft("Please cancel my latest shipped order and record why."),
                  wrong(STATE, "O-2003", "O-2001"), STATE) is None


@pytest.mark.anyio
async def test_a_model_that_keeps_naming_the_locked_record_gets_its_item_kept_by_the_recast(run: Any) -> None:
    router = MisnamingModel(corrects=False)  # never writes another task
    _, _, out = await run("mini_shop", router=router, logged=True)
    [sc] = load_scenarios(out / "mini_shop.jsonl")
    assert "O-2001" in sc.task and "O-2003" not in sc.task
    assert [c.arguments.get("order_id") for c in sc.reference_solution] == ["O-2001", "O-2001"]
    assert all("O-2003" not in (c.validator or "") for c in sc.checklist)
    assert any(n.startswith("task recast from orders O-2003 to O-2001 by code") for n in sc.provenance.notes)
    assert len(task_prompts(router)) == 1  # no model call for the new task
    log = (out / "_work" / "synth.log").read_text()  # the progress log says what happened, in order
    said = [line.split(" ", 1)[1] for line in log.splitlines() if " s001 task: " in line or " s001 gate: " in line]
    assert said[-2].startswith("  s001 task: task recast from orders O-2003 to O-2001 by code")
    assert said[-1] == "  s001 gate: passed"


@pytest.mark.anyio
async def test_a_plan_refused_on_two_records_the_task_names_is_recast_onto_two_peers(run: Any) -> None:
    router = ScenRouter("mini_shop", "retarget_two")  # every answer about shipped O-2003 and delivered O-2004
    _, _, out = await run("mini_shop", router=router, logged=True)
    [sc] = load_scenarios(out / "mini_shop.jsonl")
    assert "orders O-2001 and O-2002" in sc.task
    assert [c.arguments["order_id"] for c in sc.reference_solution] == ["O-2001", "O-2002"]
    assert ['"O-2001"' in (c.validator or "") for c in sc.checklist] == [True, False]
    assert ['"O-2002"' in (c.validator or "") for c in sc.checklist] == [False, True]
    notes = [n for n in sc.provenance.notes if n.startswith("task recast")]
    assert [n.split(" by code")[0] for n in notes] == ["task recast from orders O-2003 to O-2001",
                                                       "task recast from orders O-2004 to O-2002"]
    assert router.calls["task"] == 1


def test_a_recast_that_would_leave_a_value_of_the_refused_record_in_the_text_is_not_made() -> None:
    # the task names O-2003 also by its total, in a form the exact-value swap does not see (112.0 as "112.00")
    total = ("Hi, this is Marta Lindqvist. Please cancel my shipped order O-2003 of 112.00 EUR and record the "
             "reason as wrong size.")
    assert recast(draft(total), wrong(STATE, "O-2003", "O-2001"), STATE) is None
    # by a part of its customer's name: "this is Marta" would ask about Jonas Weber's order
    first = "Hi, this is Marta. Please cancel my order O-2003 and record the reason as wrong size, thanks."
    assert recast(draft(first), wrong(STATE, "O-2003", "O-2002"), STATE) is None
    assert recast(draft(first), wrong(STATE, "O-2003", "O-2002", "O-2001"), STATE) is not None  # hers: kept
    # by its date, written out: "placed on April 7" would stay about the refused order's day
    state = {"orders": {"O-2003": {"status": "shipped", "placed_on": "2026-04-07T09:15:00"},
                        "O-2001": {"status": "pending", "placed_on": "2026-04-09T16:40:00"}}}
    for said in ("placed on April 7", "placed on 7 April 2026", "placed on Apr. 7th", "placed at 09:15"):
        task = f"Please cancel my order O-2003 {said} and record the reason as wrong size, thank you very much."
        assert recast(draft(task), wrong(state, "O-2003", "O-2001"), state) is None, said
    state = {"orders": {"O-2003": {"status": "shipped", "placed_on": "2026-04-07"},
                        "O-2001": {"status": "pending", "placed_on": "2026-04-09"}}}
    task = "Please cancel my order O-2003 placed on 2026-04-07 and record the reason as wrong size."
    got = recast(draft(task), wrong(state, "O-2003", "O-2001"), state)  # the whole value is swapped: kept
    assert got is not None and "placed on 2026-04-09 and" in got.task


def test_a_customer_named_by_part_of_a_name_keeps_the_peer_of_another_customer_out() -> None:
    state = {"customers": {"C1": {"name": "Marta Lindqvist"}, "C2": {"name": "Jonas Weber"}},
             "orders": {"O-2003": {"customer_id": "C1", "status": "shipped"},
                        "O-2002": {"customer_id": "C2", "status": "pending"}}}
    mine = "Hi, this is Marta: please cancel my order O-2003 and record the reason as wrong size."
    assert recast(draft(mine), wrong(state, "O-2003", "O-2002"), state) is None


def test_an_id_that_is_a_number_is_not_swapped() -> None:
    state = {"orders": {"3": {"status": "shipped", "items": 3}, "1": {"status": "pending", "items": 3}}}
    task = "Please cancel my shipped order 3, all 3 of its items, and record the reason as wrong size."
    odd = draft(task).model_copy(update={"solution": [ToolCall(tool="cancel_order", arguments={"order_id": "3"})]})
    # "3" is also the count of items: "order 1, all 1 of its items" would be a task about something else
    assert recast(odd, wrong(state, "3", "1"), state) is None
    # nor in a validator: `len(final_state["orders"]) == 3` would become `== 1`
    check = 'def check_func(final_state):\n    return len(final_state["orders"]) == 3\n'
    odd.checklist[1].validator = check
    assert recast(odd.model_copy(update={"task": "Please cancel my shipped order 3 and record the reason as "
                                                 "wrong size, thank you."}), wrong(state, "3", "1"), state) is None


def test_a_peer_the_checklist_or_a_validator_already_names_is_not_taken() -> None:
    # the checklist asks that O-2001 be left alone: recast onto O-2001, it would ask to cancel it and to keep it
    keep = 'def check_func(final_state):\n    return final_state["orders"]["O-2001"]["notes"] == []\n'
    mine = draft()
    mine.checklist[1] = ChecklistItem(id="c2", description="Is order O-2001 left as it was?", validator=keep,
                                      claims_change=False)
    assert recast(mine, wrong(STATE, "O-2003", "O-2001"), STATE) is None
    mine.checklist[1] = mine.checklist[1].model_copy(update={"description": "Is the other order left as it was?"})
    assert recast(mine, wrong(STATE, "O-2003", "O-2001"), STATE) is None  # the validator alone names it
    mine.checklist[1] = mine.checklist[1].model_copy(update={"validator": keep.replace("O-2001", "O-2005")})
    assert recast(mine, wrong(STATE, "O-2003", "O-2001"), STATE) is not None  # another order: kept
    mine.solution.append(ToolCall(tool="add_note", arguments={"order_id": "O-2001", "note": "kept"}))
    assert recast(mine, wrong(STATE, "O-2003", "O-2001"), STATE) is None  # the plan alone names it


def test_a_value_the_task_also_says_of_something_else_is_not_swapped() -> None:
    # "shipped" is O-2003's status and also what the task says of another parcel: swapped, both would be "pending"
    task = ("Hi, this is Marta Lindqvist. Please cancel my shipped order O-2003 and record the reason as wrong "
            "size; the parcel shipped to my sister last week was fine.")
    assert recast(draft(task), wrong(STATE, "O-2003", "O-2001"), STATE) is None


def test_a_value_nested_in_the_refused_record_left_in_the_text_keeps_it_from_the_recast() -> None:
    state = {"orders": {"O-2003": {"status": "shipped", "items": [{"name": "Blue Hoodie", "qty": 1}]},
                        "O-2001": {"status": "pending", "items": [{"name": "Red Scarf", "qty": 1}]}}}
    task = "Please cancel my shipped order O-2003 with the Blue Hoodie and record the reason as wrong size."
    assert recast(draft(task), wrong(state, "O-2003", "O-2001"), state) is None
    task = "Please cancel my shipped order O-2003 and record the reason as wrong size, thank you."
    assert recast(draft(task), wrong(state, "O-2003", "O-2001"), state) is not None

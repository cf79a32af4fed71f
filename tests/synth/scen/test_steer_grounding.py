"""Steered steps kept to the records the state has: checklist items naming a record that is nowhere, validators
reading a field no record has, plans refused on a record the rules do not allow. Every model answer here is
hand-written (tests/synth/fixtures/scen_answers/, or written inline), modelled on the embedded 1.5B model's
answers on the bundled environments; each pipeline case is run with steering off too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp.catalog.store import load_scenarios, load_skeleton
from envscaler_mcp.providers.base import Message, ToolDef
from envscaler_mcp.scenario.models import ChecklistItem
from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth.scen.anchors import allowed, asked_for, parameter_rules, records, task_anchors
from envscaler_mcp.synth.scen.build import REPAIR_ROUNDS
from envscaler_mcp.synth.scen.checklist_fix import Collector, unknown_ids
from envscaler_mcp.synth.scen.fields import fields_problem, unknown_fields

from ..fixtures.scen_router import ANSWERS, ScenRouter
from .test_steering import STATE, VALIDATORS, ItemWriter, _answer, dropped

pytestmark = pytest.mark.anyio

# --- checklist items naming a record that is nowhere ---------------------------------------------------------

FILES = {"files": {"FIL-0001": {"file_id": "FIL-0001", "name": "brand.pdf", "owner_id": "U01", "trashed": False}},
         "users": {"U01": {"user_id": "U01", "name": "Maya Chen", "plan": "business"}}}


def test_an_item_copied_from_another_system_is_refused_with_the_id_it_names() -> None:
    collect = Collector(FILES, task="Move FIL-0001 to the trash for Maya Chen (U01).")
    with pytest.raises(AnswerFormatError) as refused:  # the 1.5B model's cloud_storage checklist, word for word
        collect(_answer((True, "Has order ORD-1001 status 'cancelled'?"), (True, "Has files FIL-0001 trashed true?")))
    assert "ORD-1001, which no record of the state has and the task does not mention" in str(refused.value)
    assert "kept already (do not repeat them): [change] Has files FIL-0001 trashed true?" in str(refused.value)
    items = collect(_answer((True, "Has users U01 plan 'standard'?")))
    assert [i.description for i in items] == ["Has files FIL-0001 trashed true?", "Has users U01 plan 'standard'?"]


@pytest.mark.parametrize("fact, task, refused", [
    ("Has order ORD-1001 status 'cancelled'?", "", True),
    ("Has ticket INC-2002 assignee 'AG-3'?", "", True),
    ("Has files FIL-0001 owner 'AG-3'?", "", True),  # quoted too: an id the task sets is in the task
    ("Has files FIL-0001 folder 'FLD-0099'?", "Move FIL-0001 into FLD-0099.", False),
    ("Has files FIL-0009 been created?", "Upload brand2.pdf as FIL-0009.", False),  # the task names it
    ("Has user U01 plan 'business'?", "", False),  # a record of the state
    ("Has files FIL-0001 version v2?", "", False),  # lower case: not an id
    ("Has the Q1 2026 report (FIL-0001) stayed in Reports?", "", False),  # a word of a value of the state
])
def test_only_ids_no_state_or_task_has_are_refused(fact: str, task: str, refused: bool) -> None:
    item = ChecklistItem(id="c1", description=fact, claims_change=True)
    known = "\n".join(["FIL-0001", "U01", "business", "Q1 2026 report.pdf"])
    assert (unknown_ids(item, known, task) is not None) is refused


FOREIGN = {**VALIDATORS, "Has order ORD-1001 status 'cancelled'?":
           'final_state.get("orders", {}).get("ORD-1001", {}).get("status") == "cancelled"'}


@pytest.mark.parametrize("steer", [True, False])
async def test_a_checklist_copying_a_foreign_example_is_kept_to_the_state(run: Any, steer: bool) -> None:
    router = ItemWriter("mini_shop", "foreign_example", FOREIGN)
    _, _, out = await run("mini_shop", router=router, steer=steer)
    checklists = [text for step, text in router.prompts if step == "checklist"]
    if steer:  # the copied item refused at once, the good one kept, one replacement asked for: kept
        [sc] = load_scenarios(out / "mini_shop.jsonl")
        assert [c.description for c in sc.checklist] == [
            "Has order O-2001 been cancelled?", 'Has the note "Cancelled: wrong size" been recorded on order O-2001?']
        assert len(checklists) == 2 and "it names ORD-1001, which no record of the state has" in checklists[1]
        assert router.calls["validators"] == 1
    else:  # the copied item reaches the gate, never True after the plan: dropped after the repair rounds
        [record] = dropped(out)
        assert record["step"] == "gate" and "c1 is not True after the reference solution" in record["reason"]
        assert len(checklists) == 1 and router.calls["validators"] == 1 + REPAIR_ROUNDS


def test_the_state_used_here_has_no_order_ord_1001() -> None:
    assert "ORD-1001" not in str(STATE)  # so the foreign item above is one that no record has


# --- validators reading a field no record has --------------------------------------------------------------

@pytest.mark.parametrize("steer", [True, False])
async def test_a_validator_reading_a_field_no_record_has_is_rewritten_before_the_gate(run: Any, steer: bool) -> None:
    _, router, out = await run("mini_shop", "missing_field", steer=steer)
    [sc] = load_scenarios(out / "mini_shop.jsonl")  # the second answer is right either way
    prompts = [text for step, text in router.prompts if step == "validators"]
    assert len(prompts) == 2 and "cancel_note" not in (sc.checklist[1].validator or "")
    gate_rounds = [n for n in sc.provenance.notes if "regenerated after" in n]
    if steer:  # refused statically with the record's real fields; only c2 asked for again, no gate round spent
        assert "- orders O-2001: order_id, customer, status, total, notes" in prompts[0]
        assert ("c2: it reads field 'cancel_note' of a record of orders, which no record of orders has (their "
                "fields: customer, notes, order_id, status, total)") in prompts[1]
        assert "- c2 [change]" in prompts[1] and "- c1 " not in prompts[1] and not gate_rounds
    else:  # found by the gate (KeyError on the initial state) and repaired in a gate round
        assert "The exact fields of the records" not in prompts[0] and "KeyError: 'cancel_note'" in prompts[1] and gate_rounds


async def test_a_model_that_keeps_reading_a_missing_field_drops_at_validators_with_the_reason(run: Any) -> None:
    _, router, out = await run("mini_shop", "missing_field_always")
    [record] = dropped(out)
    assert record["step"] == "validators" and "it reads field 'cancel_note'" in record["reason"]
    # c1, c3, c4 kept; c2 asked 3 times, then left out (synth/scen/spare.py): but c2 was the only check of the
    # reason noted on O-2001 (free text, which the mutation test alone would let pass), so the item is dropped
    assert router.calls["validators"] == 4 and router.calls["solution"] == 1
    assert "no validator checks what the reference solution changed at orders['O-2001'].notes[0]" in record["reason"]


@pytest.mark.parametrize("source, unknown", [
    ('final_state["orders"]["O-2001"]["assignee"] == "AG-3"', [("orders", "assignee")]),
    ('final_state.get("orders", {}).get("O-2001", {}).get("assignee") == "AG-3"', [("orders", "assignee")]),
    ('any(o["gate"] == "B" for o in final_state["orders"].values())', [("orders", "gate")]),
    ('final_state["orders"]["O-2001"]["status"] == "cancelled"', []),  # a field the records have
    ('final_state["orders"]["O-2001"]["refund_id"] is not None', []),  # a field the code writes
    ('final_state["orders"]["O-2001"]["paid_on"] is not None', []),  # a keyword the code writes
    ('final_state["orders"]["O-2001"]["refunded"] is True', [("orders", "refunded")]),  # compared, not written
    ('final_state["orders"]["O-2001"][key] == 1', []),  # a computed key: left to the gate
    ('[o["x"] for o in final_state["orders"]]', []),  # iterating a dict collection gives its ids, not records
    ('[t["gate"] for t in final_state["tickets"]]', [("tickets", "gate")]),  # a list collection's records
    ('[key["x"] for key in final_state["orders"].values()]', []),  # `key` is bound twice: it may hold anything
    ('final_state["today"] == "2026-01-01"', []),  # not a collection of records
])
def test_record_fields_read_statically(source: str, unknown: list[tuple[str, str]]) -> None:
    code = "def check_func(final_state):\n    key = 'status'\n    return " + source + "\n"
    state = {**STATE, "today": "2026-01-01", "tickets": [{"id": "T1", "status": "open"}]}
    assert unknown_fields(code, state, "order['refund_id'] = new_id\nrecord = dict(paid_on=today)\n"
                                       "if refunded == 0: pass") == unknown


# --- a refused plan shown the records the refusal asks for -------------------------------------------------

DESK = {"assets": {"AST-2001": {"asset_id": "AST-2001", "status": "in_use", "assigned_to": "E1001"},
                   "AST-2002": {"asset_id": "AST-2002", "status": "retired", "assigned_to": None},
                   "AST-2003": {"asset_id": "AST-2003", "status": "in_stock", "assigned_to": None}},
        "employees": {"E1002": {"employee_id": "E1002", "status": "active"}}}


@pytest.mark.parametrize("refusal, expected", [
    ("Asset AST-2001 is in_use; only in-stock assets can be issued.", ("in_stock", ["AST-2003"])),
    ("Asset AST-2001 is in use; only in stock assets can be issued.", ("in_stock", ["AST-2003"])),
    ("Asset AST-2001 is in_use; it cannot be issued twice.", None),  # its own status only: nothing to offer
    ("Employee E1001 is inactive; devices go to active employees only.", None),  # another collection's status
])
def test_the_records_a_refusal_asks_for(refusal: str, expected: tuple[str, list[str]] | None) -> None:
    [asset] = [a for a in records(DESK) if a.record_id == "AST-2001"]
    assert asked_for(DESK, asset, refusal) == expected


class PeerPicker(ScenRouter):
    """Plans to cancel the shipped order O-2003 (the 1.5B model's it_helpdesk plans issued an asset in use, every
    time) until a prompt names the orders the refusal asks for; then it plans the task's own order."""

    def __call__(self, messages: list[Message], tools: list[ToolDef]) -> str:
        answer = super().__call__(messages, tools)
        if self.prompts[-1][0] != "solution" or "as the refusal asks: O-2001" in messages[-1].content:
            return answer
        return (ANSWERS / "mini_shop" / "refused_always" / "solution.md").read_text()


@pytest.mark.parametrize("steer", [True, False])
async def test_a_refused_plan_is_shown_the_records_the_refusal_asks_for(run: Any, steer: bool) -> None:
    router = PeerPicker("mini_shop")
    _, _, out = await run("mini_shop", router=router, steer=steer)
    prompts = [text for step, text in router.prompts if step == "solution"]
    if steer:
        [sc] = load_scenarios(out / "mini_shop.jsonl")
        assert [c.arguments["order_id"] for c in sc.reference_solution] == ["O-2001", "O-2003"]
        assert "The orders whose status is pending, as the refusal asks: O-2001, O-2002" in prompts[1]
        assert "a call the task does not ask for" in prompts[1] and router.calls["solution"] == 2
    else:  # told the refusal alone, the same model plans the shipped order every time: dropped with the reason
        [record] = dropped(out)
        assert record["step"] == "gate" and "only pending orders can be cancelled" in record["reason"]
        assert not any("as the refusal asks" in p for p in prompts)


@pytest.mark.parametrize("steer", [True, False])
async def test_a_refused_query_is_left_out_of_the_plan_without_the_model(run: Any, steer: bool) -> None:
    _, router, out = await run("mini_shop", "refused_query", steer=steer)
    if steer:  # the lookup of an order the state lacks changed nothing: left out, no model call, kept
        [sc] = load_scenarios(out / "mini_shop.jsonl")
        assert [c.tool for c in sc.reference_solution] == ["cancel_order", "add_note"]
        assert router.calls["solution"] == 1
        [note] = [n for n in sc.provenance.notes if n.startswith("reference plan")]
        assert note.startswith("reference plan: a query the system refused left out: call 1 get_order")
    else:  # the gate fails the replay at the lookup, and every rewrite repeats it: dropped with the reason
        [record] = dropped(out)
        assert record["step"] == "gate" and "order 'O-9999' not found" in record["reason"]
        assert router.calls["solution"] == 1 + REPAIR_ROUNDS


# --- no false refusal on the bundled catalog ----------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[3]


def test_the_bundled_scenarios_have_no_item_or_validator_these_checks_refuse() -> None:
    checked = 0
    for path in sorted((ROOT / "scenarios").glob("*.jsonl")):
        skeleton = ROOT / "environments" / path.stem / "skeleton.json"
        code = load_skeleton(skeleton).class_source if skeleton.exists() else ""
        for sc in load_scenarios(path):
            collect = Collector(sc.initial_state, task=sc.task)
            for item in sc.checklist:
                assert unknown_ids(item, collect.known, sc.task) is None, (sc.id, item.description)
                assert fields_problem(item.validator or "", sc.initial_state, code) is None, (sc.id, item.id)
                checked += 1
    assert checked >= 300  # every bundled environment's scenarios were read


# --- task anchors the rules allow to change ---------------------------------------------------------------

ASSET_TOOLS = [  # (input schema, description) of it_helpdesk's asset tools, their constraints as written
    ({"properties": {"asset_id": {}, "employee_id": {}}}, "Issue an in-stock asset.\n\nConstraints:\n    Asset must "
     "be in_stock; employee must be active."),
    ({"properties": {"asset_id": {}}}, "Take an asset back.\n\nConstraints:\n    Only in_use assets can be returned."),
    ({"properties": {"asset_id": {}}}, "Retire an asset.\n\nConstraints:\n    The asset must not be in use (return "
     "it first) and no open ticket may reference it."),
]
ASSETS = {"assets": {f"AST-{n}": {"asset_id": f"AST-{n}", "status": status} for n, status in
                     enumerate(["retired", "in_use", "in_repair", "in_stock"], start=1)}}


def test_task_anchors_are_records_whose_status_a_rule_allows_to_change() -> None:
    changers = [schema for schema, _ in ASSET_TOOLS]
    rules = parameter_rules(ASSET_TOOLS)
    picked = {task_anchors(ASSETS, i, changers, rules=rules)[0].record_id for i in range(8)}
    assert picked == {"AST-2", "AST-4"}  # in_use (returned), in_stock (issued); never retired nor in_repair
    assert {task_anchors(ASSETS, i, changers)[0].record_id for i in range(8)} == set(ASSETS["assets"])
    [retired] = [a for a in records(ASSETS) if a.record_id == "AST-1"]
    assert not allowed(retired, {"asset_id": "The asset must not be retired."})  # named only to forbid
    assert allowed(retired, {"asset_id": "Only retired assets can be disposed of."})

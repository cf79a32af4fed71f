"""Plan-first items (`synth/scen/plan_first.py`): the plan's changes read from a real replay, the checklist and
validators written by code from them, the request the model must word, and whole runs on the mini_shop fixture
where every model-first item is dropped. Model answers are hand-written (the scripted router)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp._io import iter_jsonl
from envscaler_mcp.catalog.store import load_scenarios
from envscaler_mcp.compare.freefields import FreeFields
from envscaler_mcp.providers.base import Message, ToolDef
from envscaler_mcp.scenario.models import ToolCall
from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth.scen import pipeline
from envscaler_mcp.synth.scen.plan_changes import changes_of, checklist_for
from envscaler_mcp.synth.scen.plan_request import (
    _accept,
    kinds_of,
    labelled,
    plain_request,
    required,
    sayable,
)

from ..fixtures.scen_router import ScenRouter

ROOT = Path(__file__).resolve().parents[3]
FREE = FreeFields([("orders.*.notes", "free text")])
BEFORE = {"orders": {"O-1": {"status": "pending", "total": 10.0, "notes": [], "tags": []},
                     "O-2": {"status": "pending", "total": 5.0, "notes": [], "tags": []}}}


def after(**fields: Any) -> dict[str, Any]:
    state = json.loads(json.dumps(BEFORE))
    state["orders"]["O-1"].update(fields)
    return state


def run_check(source: str, state: dict[str, Any]) -> bool:
    scope: dict[str, Any] = {}
    exec(source, scope)  # the source the module wrote, on the test's own states
    return bool(scope["check_func"](state))


def test_each_checked_change_gets_an_item_whose_validator_is_false_before_and_true_after() -> None:
    final = after(status="cancelled", notes=["Cancelled: wrong size"], total=None)
    found = changes_of(BEFORE, final, FREE)
    assert found is not None
    assert [(c.field, c.free) for c in found] == [("status", False), ("total", False), ("notes", True)]
    items = checklist_for(found)  # the free note is said in the request, not checked
    assert [i.description for i in items] == ["Has orders O-1 status 'cancelled'?", "Has orders O-1 total no value?"]
    for item in items:
        assert item.claims_change and item.validator is not None
        assert run_check(item.validator, final) and not run_check(item.validator, BEFORE)
    assert not run_check(items[0].validator or "", after(status="cancelled", total=None) | {"orders": []})


@pytest.mark.parametrize("final", [
    after(tags=["vip"]),  # a list changed in a field that is not free: no item could say it
    {"orders": {"O-1": BEFORE["orders"]["O-1"]}},  # a record removed
    {**after(status="cancelled"), "today": "2026-01-02"},  # a change outside any record
])
def test_a_plan_whose_changes_cannot_be_said_as_fields_of_existing_records_is_not_used(final: Any) -> None:
    assert changes_of(BEFORE, final, FREE) is None


def test_an_added_record_is_checked_by_its_fields_not_by_the_id_the_system_chose() -> None:
    final = {"orders": {**BEFORE["orders"], "O-3": {"status": "new", "total": 7.0, "notes": ["gift"], "tags": []}}}
    found = changes_of(BEFORE, final, FREE)
    assert found is not None and [c.added for c in found] == [True]
    plan = [ToolCall(tool="place_order", arguments={"customer": "C-9", "status_hint": "new"})]
    assert "O-3" not in required(plan, found)
    assert plain_request(plan, found) == "Please place order: customer 'C-9', status hint 'new'."
    [item] = checklist_for(found, ["new"])
    assert item.description == "Has a new orders record been added with status 'new'?"
    check = item.validator or ""
    scope: dict[str, Any] = {"initial_state": BEFORE}
    exec(check, scope)  # the source the module wrote, on the test's own states
    assert scope["check_func"](final) and not scope["check_func"](BEFORE)
    renamed = {"orders": {**BEFORE["orders"], "O-9": final["orders"]["O-3"]}}  # another id: still the record
    assert scope["check_func"](renamed)
    for field, value in (("status", "old"), ("total", 8.0), ("tags", ["x"])):  # each field is checked ...
        wrong = json.loads(json.dumps(final))
        wrong["orders"]["O-3"][field] = value
        assert not scope["check_func"](wrong), field
    noted = json.loads(json.dumps(final))
    noted["orders"]["O-3"]["notes"] = ["other words"]  # ... but the free one
    assert scope["check_func"](noted)
    reused = {"orders": {**final["orders"], "O-1": {**final["orders"]["O-3"]}}}
    del reused["orders"]["O-3"]  # an existing record made to look like it is not a new one
    assert not scope["check_func"](reused)


def test_the_plain_request_says_every_change_and_value_the_request_must_keep() -> None:
    plan = [ToolCall(tool="cancel_order", arguments={"order_id": "O-1", "reason": "wrong size"})]
    found = changes_of(BEFORE, after(status="cancelled", notes=["Cancelled: wrong size"]), FREE)
    assert found is not None
    plain = plain_request(plan, found, {"O-1": "orders", "O-2": "orders"})
    assert plain == ("Please cancel order: order O-1, reason 'wrong size'. Afterwards order O-1 should have status "
                     "'cancelled'.")
    assert required(plan, found) == ["O-1", "wrong size"]  # 'cancelled' is what "cancel" says


def test_every_argument_the_user_decides_is_said_and_a_call_that_cannot_be_said_is_not_planned() -> None:
    plan = [ToolCall(tool="refund", arguments={"order_id": "O-1", "amount": 7.5, "customer": "C-9"})]
    found = changes_of(BEFORE, after(total=2.5), FREE)
    assert found is not None
    assert plain_request(plan, found, {"O-1": "orders"}) == (
        "Please refund: order O-1, amount 7.5, customer 'C-9'. Afterwards order O-1 should have total 2.5.")
    assert required(plan, found) == ["O-1", "7.5", "C-9"]
    assert sayable(plan[0])
    for arguments in ({"items": [{"product_id": "P-1", "qty": 2}]}, {"notify": True}, {"address": {"city": "X"}}):
        assert not sayable(ToolCall(tool="place_order", arguments={"customer": "C-9", **arguments}))


def test_what_the_system_does_beside_the_change_is_checked_not_asked_for() -> None:
    # the 1.5B model's ecommerce_orders plan (29 November 2026), cut to what matters: a cancellation puts the
    # stock back and dates itself; the plain request told the agent to set both
    before = {"products": {"P001": {"stock": 60}},
              "orders": {"O-001": {"status": "pending", "cancelled_date": None, "cancel_reason": None}}}
    final = {"products": {"P001": {"stock": 62}},
             "orders": {"O-001": {"status": "cancelled", "cancelled_date": "2026-03-16",
                                  "cancel_reason": "ordered by mistake"}}}
    plan = [ToolCall(tool="cancel_order", arguments={"order_id": "O-001", "reason": "ordered by mistake"})]
    found = changes_of(before, final, FreeFields([("orders.*.cancel_reason", "free text")]))
    assert found is not None
    assert plain_request(plan, found, {"O-001": "orders", "P001": "products"}) == (
        "Please cancel order: order O-001, reason 'ordered by mistake'. Afterwards order O-001 should have status "
        "'cancelled'.")
    assert [i.description for i in checklist_for(found)] == [
        "Has products P001 stock '62'?", "Has orders O-001 status 'cancelled'?",
        "Has orders O-001 cancelled_date '2026-03-16'?"]


class PlanFirstModel(ScenRouter):
    """The scripted mini_shop model of a case whose every model-first item is dropped; asked plan-first, it words
    the plain request as a user (`keeps=False`: it leaves the record's id out every time)."""

    def __init__(self, case: str, keeps: bool = True, adds: str = "") -> None:
        super().__init__("mini_shop", case)
        self.keeps = keeps
        self.adds = adds  # a sentence asking for something more
        self.requests: list[str] = []

    def __call__(self, messages: list[Message], tools: list[ToolDef]) -> str:
        if "You rewrite a plain request" not in messages[0].content:
            return super().__call__(messages, tools)
        self.requests.append(messages[-1].content)  # the prompt, or a retry's message
        prompt = next(m.content for m in messages if "The plain request:" in m.content)
        plain = prompt.split("The plain request:\n", 1)[1].split("\n", 1)[0]
        task = f"Hello, something came up and I need your help. {plain} Thanks a lot for sorting this out."
        if not self.keeps:
            task = re.sub(r"O-\d+", "my order", task)
        task += self.adds
        return json.dumps({"analysis": "-", "title": "Sort out my order", "task": task})


@pytest.fixture
def known(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fixture's hand-written scenarios as the environment's known calls (the catalog has none for it)."""
    scenarios = load_scenarios(ROOT / "tests" / "fixtures" / "mini_shop" / "scenarios.jsonl")
    monkeypatch.setattr(pipeline, "scenarios_for", lambda env_id: scenarios)


@pytest.mark.anyio
@pytest.mark.usefixtures("known")
async def test_an_item_dropped_model_first_is_kept_plan_first_and_gated_like_any(run: Any) -> None:
    router = PlanFirstModel("refused_always")  # every model-first plan cancels a shipped order
    _, _, out = await run("mini_shop", router=router, plan_first="fallback", logged=True)
    [sc] = load_scenarios(out / "mini_shop.jsonl")
    assert [c.tool for c in sc.reference_solution] == ["cancel_order"]
    [order] = {c.arguments["order_id"] for c in sc.reference_solution}
    assert sc.initial_state["orders"][order]["status"] == "pending"
    assert [c.description for c in sc.checklist] == [f"Has orders {order} status 'cancelled'?"]
    assert order in sc.task and "'cancelled'" in sc.task
    assert sc.provenance.notes[0].startswith("made plan-first after the model-first item was dropped (gate: ")
    assert len(router.requests) == 1 and f"cancel_order({{\"order_id\": \"{order}\"}})" in router.requests[0]
    log = (out / "_work" / "synth.log").read_text()
    assert "s001 dropped at gate: " in log and "; making it plan-first" in log
    assert f"s001 plan-first: plan accepted, orders {order}: status 'pending' -> 'cancelled'" in log
    assert log.rstrip().endswith("s001 gate: passed")


@pytest.mark.anyio
@pytest.mark.usefixtures("known")
async def test_when_every_request_leaves_the_record_out_the_plain_request_is_the_task_and_says_so(
        run: Any) -> None:
    router = PlanFirstModel("refused_always", keeps=False)
    _, _, out = await run("mini_shop", router=router, plan_first="fallback", logged=True)
    [sc] = load_scenarios(out / "mini_shop.jsonl")
    [order] = {c.arguments["order_id"] for c in sc.reference_solution}
    assert sc.task == f"Please cancel order: order {order}. Afterwards order {order} should have status 'cancelled'."
    note = sc.provenance.notes[0]
    assert "task worded by code, the plain request (the model's requests were refused: " in note
    assert "the request must contain, written exactly so: 'O-" in note
    assert len(router.requests) == 3  # the first answer and its retries, each without the order's id
    assert "s001 plan-first: the model's requests were refused (" in (out / "_work" / "synth.log").read_text()


@pytest.mark.anyio
@pytest.mark.usefixtures("known")
async def test_a_request_asking_for_more_than_the_plan_does_is_refused(run: Any) -> None:
    router = PlanFirstModel("refused_always", adds=" Also set its total to '999'.")
    _, _, out = await run("mini_shop", router=router, plan_first="fallback")
    [sc] = load_scenarios(out / "mini_shop.jsonl")
    assert "999" not in sc.task and "task worded by code" in sc.provenance.notes[0]
    assert "it also says '999'" in router.requests[1]


@pytest.mark.anyio
async def test_without_known_calls_or_with_it_off_nothing_more_is_tried(run: Any) -> None:
    router = PlanFirstModel("refused_always")
    _, _, out = await run("mini_shop", router=router, plan_first="fallback")  # the catalog knows no mini_shop call
    [(_, record)] = list(iter_jsonl(out / "_work" / "mini_shop" / "dropped.jsonl"))
    assert "(plan-first: no known call was accepted on this state" in record["reason"]
    assert router.requests == []


@pytest.mark.anyio
@pytest.mark.usefixtures("known")
async def test_first_makes_the_item_plan_first_without_the_model_first_steps(run: Any) -> None:
    router = PlanFirstModel("good")
    _, _, out = await run("mini_shop", router=router, plan_first="first")
    [sc] = load_scenarios(out / "mini_shop.jsonl")
    assert sc.provenance.notes[0].startswith("made plan-first before the model-first path: ")
    assert len(router.requests) == 1
    assert router.calls["task"] == router.calls["checklist"] == router.calls["solution"] == 0


@pytest.mark.anyio
async def test_first_falls_back_to_the_model_first_item(run: Any) -> None:
    router = PlanFirstModel("good")  # no known call: the plan-first try finds no plan
    _, _, out = await run("mini_shop", router=router, plan_first="first", logged=True)
    [sc] = load_scenarios(out / "mini_shop.jsonl")
    assert not any(n.startswith("made plan-first") for n in sc.provenance.notes) and router.calls["solution"] == 1
    assert "s001 plan-first: no known call was accepted on this state" in (out / "_work" / "synth.log").read_text()


@pytest.mark.anyio
@pytest.mark.usefixtures("known")
async def test_off_makes_no_plan_first_item_even_with_known_calls(run: Any) -> None:
    router = PlanFirstModel("refused_always")
    _, _, out = await run("mini_shop", router=router, plan_first="off")
    [(_, record)] = list(iter_jsonl(out / "_work" / "mini_shop" / "dropped.jsonl"))
    assert "plan-first" not in record["reason"] and router.requests == []


def test_an_added_record_that_holds_its_own_id_is_still_found_under_another_id() -> None:
    # it_helpdesk's create_ticket writes the id it chose into the record ("ticket_id": "INC-0009"); the state
    # check pairs added records by content, so the validator must not demand that id either
    before = {"tickets": {"INC-0008": {"ticket_id": "INC-0008", "status": "new", "priority": "P3"}}}
    made = {"ticket_id": "INC-0009", "status": "new", "priority": "P2"}
    final = {"tickets": {**before["tickets"], "INC-0009": made}}
    found = changes_of(before, final, FreeFields([]))
    assert found is not None
    [item] = checklist_for(found, ["P2"])
    scope: dict[str, Any] = {"initial_state": before}
    exec(item.validator or "", scope)  # the source the module wrote, on the test's own states
    assert scope["check_func"](final) and not scope["check_func"](before)
    later = {"tickets": {**before["tickets"], "INC-0010": {**made, "ticket_id": "INC-0010"}}}
    assert scope["check_func"](later)  # the agent's ticket got the next id: still the record asked for
    other = {"tickets": {**before["tickets"], "INC-0010": {**made, "ticket_id": "INC-0010", "priority": "P3"}}}
    assert not scope["check_func"](other)
    mangled = {"tickets": {**before["tickets"], "INC-0009": {**made, "ticket_id": "INC-0009-x"}}}
    assert not scope["check_func"](mangled)  # the mutation test's probe of the id field: caught by its shape


def _booking() -> tuple[dict[str, Any], list[ToolCall], list[Any]]:
    """A hospital's state whose doctors, locations and appointments share ids ('1', '2', '3'), a booking of
    doctor '2' at location '1' for patient PT-7, and its changes."""
    state: dict[str, Any] = {
        name: {k: {"status": "scheduled"} if name == "appointments" else {"name": k} for k in ("1", "2", "3")}
        for name in ("doctors", "locations", "appointments")}
    state["patients"] = {"PT-7": {"name": "Ann"}}
    plan = [ToolCall(tool="schedule_appointment", arguments={"patient_id": "PT-7", "doctor_id": "2",
                                                            "location_id": "1", "slots": 2})]
    final = json.loads(json.dumps(state))
    final["appointments"]["4"] = {"status": "scheduled", "doctor_id": "2"}
    found = changes_of(state, final, FreeFields([]))
    assert found is not None
    return state, plan, list(found)


def test_an_argument_is_said_by_its_record_kind_only_when_its_value_names_one_kind() -> None:
    # hospital_appointment_scheduling_system keys doctors, locations and appointments alike ('1', '2', '3'):
    # the doctor and the location of a booking were said as "appointment 2, appointment 1"
    state, plan, found = _booking()
    plain = plain_request(plan, found, kinds_of(state))
    assert plain == "Please schedule appointment: patient PT-7, doctor id '2', location id '1', slots 2."


def test_short_values_of_no_one_kind_must_be_said_with_what_they_are_so_two_cannot_trade_places() -> None:
    """Doctor '2' at location '1': a request for doctor 1 at location 2 holds both values and was accepted."""
    state, plan, found = _booking()
    kinds = kinds_of(state)
    assert labelled(plan, found, kinds) == [("doctor_id", "2"), ("location_id", "1"), ("slots", "2")]
    plain = plain_request(plan, found, kinds)
    accept = _accept(plan, found, plain, kinds)

    def answer(task: str) -> str:
        return json.dumps({"title": "Booking", "task": task})

    assert accept(answer(plain))[1] == plain
    reworded = "Please book patient PT-7 with doctor 2 at location 1, for 2 slots."
    assert accept(answer(reworded))[1] == reworded
    numbered = "Please book 2 slots for patient PT-7 at location 1, with the doctor number 2 on it."
    assert accept(answer(numbered))[1] == numbered
    for swapped in ("Please book patient PT-7 with doctor 1 at location 2, for 2 slots.",
                    "Please book patient PT-7 with doctor 2 at location 12 or 1, 2 slots in all.",
                    "Please book 2 slots for patient PT-7: doctor 1, location 2."):
        with pytest.raises(AnswerFormatError, match="with what it is"):
            accept(answer(swapped))
    # a value that names one kind of record, or a longer one, is said as it likes
    assert labelled([ToolCall(tool="cancel", arguments={"patient_id": "PT-7", "reason": "moved away"})], found,
                    kinds) == []

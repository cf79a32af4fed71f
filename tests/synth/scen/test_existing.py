"""A task asking to create a record the initial state already holds is sent back at the task step
(synth/scen/existing.py): the 1.5B model's `library_loans` task registered member Joel Whitaker, whom the state
already had as M-2002 with the same email, and the item was dropped at the gate half an hour later
(docs/synth-scenarios.md, library_loans at dafea06). None of the bundled hand-written tasks is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp.catalog.store import get_skeleton, load_scenarios
from envscaler_mcp.providers.base import Message, ToolDef
from envscaler_mcp.qa.record_index import keyed
from envscaler_mcp.synth.scen.existing import _CREATE, _kind, existing_record

from ..fixtures.scen_router import ScenRouter

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.anyio


def library() -> dict[str, Any]:
    state: dict[str, Any] = json.loads((ROOT / "scenarios" / "library_loans.jsonl").read_text().splitlines()[0])[
        "initial_state"]
    assert state["members"]["M-2002"]["name"] == "Joel Whitaker"
    return state


REGISTER = ("Please register a new member, Joel Whitaker (joel.whitaker@post.example), as an adult member at the "
            "Riverside branch, and then place a hold for him on the next available copy.")


def test_a_task_registering_a_member_the_state_has_is_refused_naming_the_record() -> None:
    assert existing_record(library(), REGISTER) == (
        "the state already has member M-2002 with email joel.whitaker@post.example and name Joel Whitaker; ask to "
        "create a new one (values no record has) or to change an existing one")


@pytest.mark.parametrize("task", [
    REGISTER.replace("Joel Whitaker", "Joan Whitfield").replace("joel.whitaker@", "joan.whitfield@"),  # new
    REGISTER.replace("joel.whitaker@post.example", "joel.w@mail.example").replace("Joel Whitaker", "Joel Whit"),
    "Please update member M-2002 (Joel Whitaker, joel.whitaker@post.example): his new phone is +1-555-000-1111.",
    "Create a loan for member M-2002 (joel.whitaker@post.example) on copy C-30001.",  # the member is named, not made
    "Register Joel Whitaker's returned copy; his email is joel.whitaker@post.example.",  # no kind after the verb
    "Register the return of copy C-30001 for member M-2002 today.",  # a copy named by its id, not created
    "Add a note to member M-2002 saying his card was replaced, and renew his loans.",  # a note, for a member
    "Open a dispute for member M-2002 (joel.whitaker@post.example) about the fine.",  # the kind: no collection
])
def test_tasks_that_create_nothing_the_state_holds_are_kept(task: str) -> None:
    assert existing_record(library(), task) is None


def test_open_as_an_adjective_and_a_record_named_by_its_id_create_nothing() -> None:
    state = get_skeleton("clinic_appointments").default_state or {}
    slot = next(key for key, record in state["slots"].items() if record["status"] == "open")
    patient = next(iter(state["patients"]))
    assert existing_record(state, f"Book the open slot {slot} for patient {patient}, please.") is None
    assert existing_record(state, f"Register the booking of slot {slot} for patient {patient}.") is None
    assert f"slot {slot} with slot_id {slot}" in (existing_record(state, f"Open a new slot {slot} for Dr. Lee.") or "")


def test_a_name_alone_is_not_enough_but_a_code_or_a_full_name_after_new_is() -> None:
    state = library()
    assert existing_record(state, "Register the member called Joel Whitaker, please.") is None  # one value
    assert existing_record(state, "Register a new member called Joel, please.") is None  # not a full name
    assert "member M-2002 with name Joel Whitaker" in (existing_record(state, "Register a new member called Joel "
                                                                               "Whitaker, please.") or "")
    phone = state["members"]["M-2002"]["phone"]
    assert "member M-2002 with phone" in (existing_record(state, f"Sign up a member with phone {phone}.") or "")


def test_no_bundled_hand_written_task_is_refused() -> None:
    checked = creating = 0
    for path in sorted((ROOT / "scenarios").glob("*.jsonl")):
        for scenario in load_scenarios(path):
            checked += 1
            creating += sum(_kind(m.group("after"), keyed(scenario.initial_state))[0] is not None
                            for m in _CREATE.finditer(scenario.task))
            assert existing_record(scenario.initial_state, scenario.task) is None, (scenario.id, scenario.task)
    assert checked >= 82 and creating >= 5  # some tasks were read against a collection


HELD = """# Analysis
Marta wants her order again.

# Title
Order again

# Task
Hi, this is Marta Lindqvist. Please create a new order O-2003 for me, with a total of 112.0, and add a note to
it saying "Leave the parcel with the neighbour at number 12".
"""


class HeldTaskModel(ScenRouter):
    """The scripted mini_shop model whose first task asks to create order O-2003, which the state has."""

    def __call__(self, messages: list[Message], tools: list[ToolDef]) -> str:
        answer = super().__call__(messages, tools)
        if self.prompts[-1][0] == "task" and self.calls["task"] == 1:
            return HELD
        return answer


@pytest.mark.parametrize("steer", [False, True])
async def test_such_a_task_is_asked_again_before_its_checklist_with_the_record_named(run: Any, steer: bool) -> None:
    router = HeldTaskModel("mini_shop")
    _, _, out = await run("mini_shop", router=router, steer=steer)
    [scenario] = load_scenarios(out / "mini_shop.jsonl")
    assert "cancel my pending order O-2001" in scenario.task  # the second task
    tasks = [text for step, text in router.prompts if step == "task"]
    assert len(tasks) == 2 and router.calls["checklist"] == 1  # no checklist for the first task
    feedback = tasks[1].split("failed the quality checks", 1)[1]
    if steer:  # the offered records are asked about; no value of the held record is shown to be copied
        assert "do not ask to create one" in feedback and "ask for changes to orders " in feedback
        assert "O-2003" not in feedback
    else:
        assert "the state already has order O-2003 with order_id O-2003" in feedback
    assert "create a new order O-2003 for me" not in tasks[1]  # the refused task is not shown
    assert any(n.startswith("task rewritten after: task: the state already has order O-2003")
               for n in scenario.provenance.notes)


def test_the_recorded_clinic_task_registering_a_patient_the_state_has_is_refused() -> None:
    # the task as local/qwen2.5-coder-1.5b wrote it (29 November 2026), its state's patient cut to what matters
    state = {"patients": {"PT-1003": {"patient_id": "PT-1003", "name": "John Doe", "date_of_birth": "1990-03-15",
                                      "email": "john.doe@example.com", "status": "active"},
                          "PT-1001": {"patient_id": "PT-1001", "name": "Margaret Ellison", "status": "active"}}}
    task = ("As a front desk staff member, I need to register a new patient named 'John Doe' with the clinic. "
            "Additionally, I want to update their allergies to include 'allergen3' and 'allergen4'. ")
    assert (existing_record(state, task) or "").startswith("the state already has patient PT-1003 with name John Doe")
    assert existing_record(state, task.replace("John Doe", "Jane Roe")) is None

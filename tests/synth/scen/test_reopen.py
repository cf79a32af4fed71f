"""A state refused for leaving no work to do is mended by code before the model is asked again
(synth/scen/reopen.py): the embedded model, told which statuses and dates the tools accept, wrote the same departed
flights and completed appointments again (docs/synth-scenarios.md, codes K and L). Here the recorded states
(tests/synth/fixtures/state_work/) are reopened and judged again on the real server (memory transport)."""

from __future__ import annotations

import dataclasses
import json
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp._usage import Usage
from envscaler_mcp.catalog.store import get_skeleton, load_scenarios
from envscaler_mcp.providers.base import AssistantTurn, Message
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.synth.scen.feasible import Closed
from envscaler_mcp.synth.scen.records import StateRecord
from envscaler_mcp.synth.scen.reopen import reopen_state, reopened
from envscaler_mcp.synth.scen.store import EnvWork
from envscaler_mcp.synth.skel.checkstage import accept_initial_state
from envscaler_mcp.synth.skel.dangling import dangling_references

from .test_state_work import consistent_clinic, judged, recorded, state_step

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[3]


async def mend(env_id: str, state: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The refused state, reopened and judged workable."""
    before = await judged(env_id, state)
    assert before.refused
    found = await reopen_state(get_skeleton(env_id), state, before, lambda s: judged(env_id, s))
    assert found is not None
    return found


async def test_the_recorded_flight_state_reopens_a_flight_and_is_then_workable() -> None:
    state = recorded("flight_bookings")
    mended, lines = await mend("flight_bookings", state)
    assert lines == ["reopened 1 of 2 flights (status 'scheduled', arrival and departure after today)"]
    flight, other = mended["flights"]["FL-1001"], mended["flights"]["FL-1002"]
    assert flight["status"] == "scheduled" and other == state["flights"]["FL-1002"]  # half of them, at least one
    assert flight["departure"][10:] == "T12:10" and flight["arrival"][10:] == "T08:15"  # time of day kept
    assert flight["departure"][:10] > state["today"] and flight["arrival"][:10] > state["today"]
    assert state["flights"]["FL-1001"]["status"] == "departed"  # the answer itself is left as it was
    after = await judged("flight_bookings", mended)
    assert not after.refused and "tickets" in after.open  # a ticket on the reopened flight takes changes
    assert dangling_references(mended) == [] and accept_initial_state(get_skeleton("flight_bookings"),
                                                                      json.dumps(mended)) == mended


async def test_the_recorded_clinic_state_reopens_slots_no_appointment_names_first() -> None:
    state = undated_slots(consistent_clinic())  # (slot ids holding their date are not reopened: below)
    del state["appointments"]["A-5002"], state["appointments"]["A-5003"]  # two slots no appointment names
    mended, lines = await mend("clinic_appointments", state)
    # the appointments are not reopened: each is on a slot of its day, which would not move with it
    assert lines == ["reopened 2 of 4 slots (status 'open', date after today)"]
    opened = sorted(key for key, slot in mended["slots"].items() if slot["status"] == "open")
    named = {visit["slot_id"] for visit in state["appointments"].values()}
    assert len(opened) == 2 and not named & set(opened)  # the slots no appointment is on
    assert all(mended["slots"][key]["date"] > state["today"] for key in opened)
    days = sorted(date.fromisoformat(mended["slots"][key]["date"]) for key in opened)
    assert days[1] - days[0] == timedelta(days=1)  # a day apart, so that two reopened slots do not collide
    assert not (await judged("clinic_appointments", mended)).refused


async def test_a_closed_collection_that_says_nothing_of_what_it_needs_is_not_reopened() -> None:
    state = recorded("flight_bookings")
    assert reopened(state, [Closed("tickets", ["confirmed"], today="2026-06-15")]) is None
    assert reopened(state, []) is None


async def test_a_reopened_state_still_refused_is_not_kept() -> None:
    """The rule is judged again on the mended state: "reopened" with the status and dates its records already have
    (hints that cannot help), it stays refused, and the mend is not kept."""
    state = recorded("flight_bookings")
    before = await judged("flight_bookings", state)
    wrong = dataclasses.replace(before, closed=[dataclasses.replace(c, accepted=["departed"], later=[])
                                                for c in before.closed if c.collection == "flights"]
                                + [c for c in before.closed if c.collection != "flights"])
    assert reopened(state, wrong.closed) is not None
    assert await reopen_state(get_skeleton("flight_bookings"), state, wrong,
                              lambda s: judged("flight_bookings", s)) is None


async def test_the_state_step_keeps_the_mended_state_without_asking_again(tmp_path: Path) -> None:
    skeleton = get_skeleton("flight_bookings")
    state = recorded("flight_bookings")
    provider = MockProvider([json.dumps(state)], context_tokens=8192)
    record, lines = await state_step(skeleton, provider, tmp_path)
    assert record is not None and len(provider.requests) == 1 and not record.repaired
    assert record.state["flights"]["FL-1001"]["status"] == "scheduled"
    assert record.mends == ["reopened 1 of 2 flights (status 'scheduled', arrival and departure after today)"]
    assert "  s001 states: state mended: reopened 1 of 2 flights (status 'scheduled', arrival and departure after " \
        "today)" in lines
    assert not any("asking again" in line for line in lines)


async def test_the_recorded_clinic_answers_are_not_reopened_where_slot_ids_hold_their_dates(tmp_path: Path) -> None:
    """The clinic run of codes K and L: the state cut off after its appointments (three on slots it lacks), then
    the three empty collections still missing. The dangling records are dropped by code; the state left is not
    reopened (its slots' ids hold their dates, its appointment is on a slot of its day): the model is asked
    again, and its next answer, workable, is kept."""
    skeleton = get_skeleton("clinic_appointments")
    text = json.dumps(recorded("clinic_appointments"))
    workable = undated_slots(consistent_clinic())
    del workable["appointments"]["A-5002"], workable["appointments"]["A-5003"]
    workable = (reopened(workable, [SLOTS]) or ({}, []))[0]
    provider = MockProvider([AssistantTurn(message=Message(role="assistant", content=text[:text.index('"referrals"')]),
                                           finish_reason="length", usage=Usage(output_tokens=4096)),
                             json.dumps({"referrals": {}, "medications": {}, "prescriptions": {}}),
                             json.dumps(workable)], context_tokens=8192)
    record, lines = await state_step(skeleton, provider, tmp_path)
    assert record is not None and len(provider.requests) == 3
    assert record.mends == []  # the dropped appointments were of the refused state, written again
    assert not any("reopened" in line for line in lines)
    assert any(line.startswith("  s001 states: refused") and line.endswith("asking again") for line in lines)
    assert record.state["slots"] == workable["slots"]
    assert not (await judged("clinic_appointments", record.state)).refused


async def test_the_mends_of_an_items_state_are_in_its_scenarios_provenance(run: Any, tmp_path: Path) -> None:
    """The item's state record (as a mended state step wrote it) carries its mends to the kept scenario's notes."""
    out = tmp_path / "out"
    good = (ROOT / "tests" / "synth" / "fixtures" / "scen_answers" / "mini_shop" / "good" / "states.md").read_text()
    state = json.loads(good.split("```json", 1)[1].split("```", 1)[0])
    mends = ["reopened 1 of 5 orders (status 'pending')"]
    EnvWork(out, "mini_shop").states.write("s001", StateRecord(item_id="s001", state=state, mends=mends)
                                           .model_dump(mode="json"))
    _, router, _ = await run("mini_shop", out=out, resume=True)
    [scenario] = load_scenarios(out / "mini_shop.jsonl")
    assert router.calls["states"] == 0 and scenario.initial_state == state
    assert "initial state mended: reopened 1 of 5 orders (status 'pending')" in scenario.provenance.notes


def undated_slots(state: dict[str, Any]) -> dict[str, Any]:
    """`state` with its slots keyed SL-1, SL-2, … (ids that do not hold their date), the appointments following."""
    keys = {old: f"SL-{n}" for n, old in enumerate(state["slots"], 1)}
    state["slots"] = {keys[old]: {**slot, "slot_id": keys[old]} for old, slot in state["slots"].items()}
    for visit in state["appointments"].values():
        visit["slot_id"] = keys.get(visit["slot_id"], visit["slot_id"])
    return state


SLOTS = Closed("slots", ["booked"], accepted=["open"], later=["date"], today="2026-04-07")
VISITS = Closed("appointments", ["completed"], accepted=["scheduled"], later=["date"], today="2026-04-07")


def test_a_record_named_by_a_record_holding_its_date_is_not_reopened() -> None:
    # every slot is the slot of a completed appointment of its day: an open slot after today under a visit made
    state = undated_slots(consistent_clinic())
    assert reopened(state, [SLOTS]) is None
    del state["appointments"]["A-5002"], state["appointments"]["A-5003"]  # two slots no appointment names
    mended, lines = reopened(state, [SLOTS]) or ({}, [])
    assert lines == ["reopened 2 of 4 slots (status 'open', date after today)"]
    named = {visit["slot_id"] for visit in state["appointments"].values()}
    assert all(mended["slots"][key] == state["slots"][key] for key in named)


def test_a_record_whose_id_holds_the_date_to_move_is_not_reopened() -> None:
    # slot D01-2026-04-07-1030 dated a week later would say one day in its id and another in its date
    state = consistent_clinic()
    del state["appointments"]["A-5002"], state["appointments"]["A-5003"]
    assert reopened(state, [SLOTS]) is None


def test_a_record_sharing_its_date_with_a_record_it_names_is_not_reopened() -> None:
    # appointment A-5001 on its slot of 2026-04-07: moved after today alone, it would no longer be on its slot's day
    state = undated_slots(consistent_clinic())
    assert reopened(state, [VISITS]) is None
    for visit in state["appointments"].values():
        visit["slot_id"] = None  # on no slot: nothing else holds its date
    assert (reopened(state, [VISITS]) or ({}, []))[1] == ["reopened 2 of 4 appointments (status 'scheduled', "
                                                          "date after today)"]


def test_a_record_that_keeps_a_trace_of_its_closing_is_not_reopened() -> None:
    # an `active` loan with a return date, a `scheduled` visit with a cancellation reason: open and closed at once
    loans = {"L-1": {"loan_id": "L-1", "status": "returned", "due_date": "2026-03-20", "returned_on": "2026-03-18"},
             "L-2": {"loan_id": "L-2", "status": "returned", "due_date": "2026-03-22", "returned_on": "2026-03-21"}}
    closed = Closed("loans", ["returned"], accepted=["active"], later=["due_date"], today="2026-04-07")
    assert reopened({"today": "2026-04-07", "loans": loans}, [closed]) is None
    loans["L-2"]["returned_on"] = None  # (no return date: the trace is empty)
    mended, lines = reopened({"today": "2026-04-07", "loans": loans}, [closed]) or ({}, [])
    assert lines == ["reopened 1 of 2 loans (status 'active', due_date after today)"]
    assert mended["loans"]["L-2"]["status"] == "active" and mended["loans"]["L-1"] == loans["L-1"]
    visits = {"A-1": {"status": "cancelled", "date": "2026-04-01", "cancel_reason": "patient ill"}}
    closed = Closed("appointments", ["cancelled"], accepted=["scheduled"], later=["date"], today="2026-04-07")
    assert reopened({"today": "2026-04-07", "appointments": visits}, [closed]) is None


def test_of_two_linked_records_only_one_is_reopened() -> None:
    # the 1.5B model's library_loans state of 29 November, cut down: its only copy lost, its only loan on it
    # returned; reopened both, the copy would be `available` under an `active` loan on it
    state = {"today": "2026-04-07",
             "copies": {"C-1": {"copy_id": "C-1", "status": "lost"}},
             "loans": {"L-1": {"loan_id": "L-1", "copy_id": "C-1", "status": "returned"}},
             "members": {"M-1": {"member_id": "M-1", "status": "active"}}}
    copies = Closed("copies", ["lost"], accepted=["available"])
    loans = Closed("loans", ["returned"], accepted=["active"])
    mended, lines = reopened(state, [copies, loans]) or ({}, [])
    assert lines == ["reopened 1 of 1 copies (status 'available')"]  # the loan on it left as it was
    assert mended["loans"]["L-1"]["status"] == "returned" and mended["copies"]["C-1"]["status"] == "available"
    state["loans"]["L-1"]["copy_id"] = "C-9"  # a loan on another copy: both reopened
    assert (reopened(state, [copies, loans]) or ({}, []))[1] == ["reopened 1 of 1 copies (status 'available')",
                                                                  "reopened 1 of 1 loans (status 'active')"]

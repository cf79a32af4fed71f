"""The gate against known-bad scenarios seeded from good bundled ones (tests/qa/seeded_defects.py), one kind at a
time, and the consistency step's own rules on the synthesized scenarios it was written for. The whole catalog's
catch rates: benchmarks/gate_defects.py (docs/synth-scenarios.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envscaler_mcp.catalog.store import get_skeleton, load_scenarios, scenarios_for
from envscaler_mcp.launch import launch_server
from envscaler_mcp.qa.batch import GateSettings, check_groups
from envscaler_mcp.qa.consistency import unseen_state, vacuous_items
from envscaler_mcp.scenario.models import ChecklistItem, Scenario
from tests.qa.seeded_defects import KINDS, reference_with_an_accepted_extra_call

pytestmark = pytest.mark.anyio

ENV = "it_helpdesk"
REFUSED = Path(__file__).resolve().parents[1] / "fixtures" / "refused"


async def test_every_seeded_kind_is_caught_and_the_good_ones_pass() -> None:
    skeleton = get_skeleton(ENV)
    good = [s for s in scenarios_for(ENV) if s.reference_solution and s.reference_answer is None][:4]
    seeded: list[tuple[str, Scenario]] = []  # (kind, scenario); ids leave the reference out, so go by position
    for scenario in good:
        for kind, make in KINDS.items():
            made = make(scenario)
            if made is not None:
                seeded.append((kind, made))
    assert {kind for kind, _ in seeded} >= set(KINDS)  # every kind could be seeded here
    async with launch_server(skeleton, transport="pipe") as server:  # the extra call must be one it accepts
        extras = [await reference_with_an_accepted_extra_call(s, server.episode, skeleton.success_convention)
                  for s in good]
    seeded += [("extra call", made) for made in extras if made is not None]
    assert sum(made is not None for made in extras) >= 3  # the environment accepts one for most of them
    reports = await check_groups([(skeleton, [*good, *(made for _, made in seeded)])], GateSettings(transport="pipe"))
    assert all(r.passed for r in reports[:len(good)]), [r.reasons() for r in reports[:len(good)]]
    outcomes = list(zip(seeded, reports[len(good):], strict=True))
    assert [(kind, r.reasons()) for (kind, _), r in outcomes if r.passed] == []
    extra = [r for (kind, _), r in outcomes if kind == "extra call"]
    assert all(r.step("replay").status == "pass" for r in extra)  # accepted: a defect of the reference, not refused
    # the consistency step names the extra call and its record (final-true catches some too, not all)
    assert [r.step("consistency").status for r in extra] == ["fail"] * len(extra)
    for r, made in zip(extra, [m for m in extras if m is not None], strict=True):
        call = made.reference_solution[-1]
        assert f"call {len(made.reference_solution)} {call.tool} " in " ".join(r.step("consistency").reasons)


async def test_the_synthesized_scenarios_it_was_written_for_are_refused_and_the_kept_one_passes() -> None:
    """The three scenarios the embedded model wrote that the catalog held until this step existed
    (tests/fixtures/refused/: a task naming appointment 3 whose solution cancels 6, a task pointing at "the state
    above", an item asserting a change from a date to itself)."""
    env = "hospital_appointment_scheduling_system"
    refused = load_scenarios(REFUSED / f"{env}.jsonl")
    reports = await check_groups([(get_skeleton(env), [*refused, *scenarios_for(env)])], GateSettings(transport="pipe"))
    reasons = [" ".join(r.step("consistency").reasons) for r in reports]
    assert "names appointments 3" in reasons[0] and "changes 6" in reasons[0]
    assert "Given the state above" in reasons[1]
    assert "from a value to the same value" in reasons[2]
    assert [r.step("consistency").status for r in reports] == ["fail", "fail", "fail", "pass"]


def test_unseen_state_and_vacuous_items() -> None:
    assert unseen_state(["Given the state above, cancel appointment 1."])
    assert unseen_state(["Use initial_state to find the order."])
    assert not unseen_state(["Cancel the appointment above 3 pm."])
    same = ChecklistItem(id="c1", description="Has the date changed from '2023-03-01' to '2023-03-01'?")
    moved = ChecklistItem(id="c2", description="Has the date changed from '2023-03-01' to '2023-03-02'?")
    empty = ChecklistItem(id="c3", description="?? 12")
    assert [p.split(" ")[0] for p in vacuous_items([same, moved, empty])] == ["c1", "c3's"]


def test_items_about_the_systems_tools_are_vacuous() -> None:
    """The embedded 1.5B model's checklists on ecommerce_orders and cloud_storage: what the system can do, not a
    state a solution reaches. Items that merely mention a method or a feature of a record are facts."""
    tools = ["Has place_order tool for creating new orders", "Has a function to create a new folder",
             "Has the update_shipping tool?", "Has an API for refunds"]
    facts = ["Has order O-10052's shipping method been changed to express?",
             "Has the shipping method been changed to express?", "Has the feature flag beta been enabled?",
             "Has the API key of user U1 been rotated?", "Has the tool library's loan L-7 been returned?"]
    items = [ChecklistItem(id=f"c{n}", description=d) for n, d in enumerate(tools + facts, start=1)]
    assert [p.split(" ")[0] for p in vacuous_items(items)] == ["c1", "c2", "c3", "c4"]

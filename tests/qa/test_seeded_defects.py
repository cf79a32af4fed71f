"""The gate against known-bad scenarios seeded from good bundled ones (tests/qa/seeded_defects.py), one kind at a
time, and the consistency step's own rules on the synthesized scenarios it was written for. The whole catalog's
catch rates: benchmarks/gate_defects.py (docs/synth-scenarios.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envscaler_mcp.catalog.store import get_skeleton, load_scenarios, scenarios_for
from envscaler_mcp.qa.batch import check_groups
from envscaler_mcp.qa.consistency import unseen_state, vacuous_items
from envscaler_mcp.scenario.models import ChecklistItem
from tests.qa.seeded_defects import KINDS, reference_with_an_extra_destructive_call

pytestmark = pytest.mark.anyio

ENV = "it_helpdesk"
REFUSED = Path(__file__).resolve().parents[1] / "fixtures" / "refused"


async def test_every_seeded_kind_is_caught_and_the_good_ones_pass() -> None:
    skeleton = get_skeleton(ENV)
    good = [s for s in scenarios_for(ENV) if s.reference_solution and s.reference_answer is None][:4]
    kinds = {t.name: t.kind for t in skeleton.tools}
    seeded: list[tuple[str, object]] = []  # (kind, scenario); ids leave the reference out, so go by position
    for scenario in good:
        for kind, make in {**KINDS, "extra call": lambda s: reference_with_an_extra_destructive_call(s, kinds)}.items():
            made = make(scenario)
            if made is not None:
                seeded.append((kind, made))
    assert {kind for kind, _ in seeded} >= set(KINDS)  # every kind could be seeded here
    reports = await check_groups([(skeleton, [*good, *(made for _, made in seeded)])], transport="pipe")
    assert all(r.passed for r in reports[:len(good)]), [r.reasons() for r in reports[:len(good)]]
    missed = [(kind, r.reasons()) for (kind, _), r in zip(seeded, reports[len(good):], strict=True)
              if r.passed and kind != "extra call"]
    assert missed == []


async def test_the_synthesized_scenarios_it_was_written_for_are_refused_and_the_kept_one_passes() -> None:
    """The three scenarios the embedded model wrote that the catalog held until this step existed
    (tests/fixtures/refused/: a task naming appointment 3 whose solution cancels 6, a task pointing at "the state
    above", an item asserting a change from a date to itself)."""
    env = "hospital_appointment_scheduling_system"
    refused = load_scenarios(REFUSED / f"{env}.jsonl")
    reports = await check_groups([(get_skeleton(env), [*refused, *scenarios_for(env)])], transport="pipe")
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

"""An item that cannot be made to work is dropped, not the scenario, when what remains still checks every change
of the reference solution (synth/scen/spare.py). Every model answer here is hand-written
(tests/synth/fixtures/scen_answers/mini_shop/spare_*/): a validator that reads a field no order has in every
answer (the embedded model's clinic c4 `end_time`), and an item still true on the initial state after the
checklist's repair (its ecommerce_orders c4). Where the dropped item was the only check of a change, the item
is dropped as before: test_steer_grounding.py's missing_field_always (c2, never written, was the only check of the
reason noted on O-2001, free text the mutation test alone lets pass)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp._io import iter_jsonl
from envscaler_mcp.catalog.store import load_scenarios
from envscaler_mcp.launch import LaunchedServer
from envscaler_mcp.references.replay import replay_calls
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import ChecklistItem, Scenario
from envscaler_mcp.synth.llm import StepFailed
from envscaler_mcp.synth.scen.spare import MIN_ITEMS, spared

from .test_steering import ItemWriter

pytestmark = pytest.mark.anyio


def dropped(out: Path) -> list[dict[str, Any]]:
    path = out / "_work" / "mini_shop" / "dropped.jsonl"
    return [r for _, r in iter_jsonl(path)] if path.exists() else []


async def verdicts(scenario: Scenario, final: dict[str, Any]) -> dict[str, bool]:
    async with ValidatorSandbox() as sandbox:
        results = await sandbox.run(scenario.checklist, scenario.initial_state, final)
    return {r.item_id: r.passed and r.reason is None for r in results}


async def judged_right(scenario: Scenario, server: LaunchedServer) -> None:
    """The kept scenario passes the reference's final state and fails wrong ones: the order left pending, the
    reason not recorded, the delivery note missing."""
    _, final, problems = await replay_calls(scenario.reference_solution, scenario.initial_state, server.episode)
    assert not problems and final is not None
    final = dict(final)
    assert all((await verdicts(scenario, final)).values())
    pending, no_reason, no_note = copy.deepcopy(final), copy.deepcopy(final), copy.deepcopy(final)
    pending["orders"]["O-2001"]["status"] = "pending"
    no_reason["orders"]["O-2001"]["notes"] = []
    no_note["orders"]["O-2003"]["notes"] = []
    for wrong in (pending, no_reason, no_note):
        assert not all((await verdicts(scenario, wrong)).values())


async def test_a_validator_never_written_is_dropped_when_the_others_check_every_change(
        run: Any, servers: dict[str, LaunchedServer]) -> None:
    outcomes: list[str] = []
    _, router, out = await run("mini_shop", "spare_redundant", on_item=lambda env, item, outcome: outcomes.append(outcome))
    assert dropped(out) == []
    [sc] = load_scenarios(out / "mini_shop.jsonl")
    assert [c.id for c in sc.checklist] == ["c1", "c3", "c4", "c5"]  # c2 read `cancel_note`, which no order has
    assert router.calls["validators"] == 4  # all but c2 at once; c2 asked three times
    [note] = [n for n in sc.provenance.notes if n.startswith("checklist item(s) c2 dropped at the validators step")]
    assert "it reads field 'cancel_note'" in note
    assert any("c2 dropped at the validators step" in o and o.startswith("passed the gate (4 checks)")
               for o in outcomes)
    await judged_right(sc, servers["mini_shop"])


async def test_an_item_still_true_after_the_checklist_repair_is_dropped_when_the_rest_suffice(
        run: Any, servers: dict[str, LaunchedServer]) -> None:
    router = ItemWriter("mini_shop", "spare_held")  # c4 "O-2004 stayed delivered" [change]: already true
    _, _, out = await run("mini_shop", router=router)
    [sc] = load_scenarios(out / "mini_shop.jsonl")
    assert [c.description for c in sc.checklist] == [
        "Has order O-2001 been cancelled?", 'Has the note "Cancelled: wrong size" been recorded on order O-2001?',
        'Has the note "Leave the parcel with the neighbour at number 12" been added to order O-2003?']
    assert router.calls["checklist"] == 4  # the first checklist, then a repair that never gave a new item
    [note] = [n for n in sc.provenance.notes if n.startswith("checklist item(s) c4 dropped at the checklist step")]
    assert "already true initially" in note and "already True on the initial state" in note
    assert [c.arguments["order_id"] for c in sc.reference_solution] == ["O-2001", "O-2003"]  # the plan rewritten
    await judged_right(sc, servers["mini_shop"])


@pytest.mark.parametrize("guard", ["state"])
async def test_no_item_is_spared_where_the_mutation_test_does_not_judge_the_validators_alone(
        run: Any, guard: str) -> None:
    _, _, out = await run("mini_shop", "spare_redundant", guard=guard)
    [record] = dropped(out)
    assert record["step"] == "validators" and "no validator checks" not in record["reason"]


def item(cid: str, change: bool, validator: str | None = "return True") -> ChecklistItem:
    return ChecklistItem(id=cid, description=f"item {cid}", claims_change=change,
                         validator=None if validator is None else f"def check_func(final_state):\n    {validator}\n")


def test_a_spared_checklist_keeps_enough_different_validators_and_a_change() -> None:
    a, b = item("c1", True, "return 1"), item("c2", False, "return 2")
    assert spared([a, b, item("c3", True)], ["c3"]) == [a, b]
    assert spared([a, b], []) is None  # nothing to drop
    assert spared([a, item("c2", False, "return 1"), item("c3", True)], ["c3"]) is None  # one validator, twice
    assert spared([item("c1", False, "return 1"), b, item("c3", True)], ["c3"]) is None  # no change claimed
    assert spared([a, item("c2", True, None), b], ["c3"]) is None  # an item left without a validator
    assert MIN_ITEMS == 2


def test_partly_written_is_a_step_failure_so_a_caller_that_does_not_spare_drops_as_before() -> None:
    from envscaler_mcp.synth.scen.spare import PartlyWritten

    failed = PartlyWritten(StepFailed("validators", "c2: no", 3), [item("c1", True)], ["c2"])
    assert isinstance(failed, StepFailed) and failed.step == "validators" and failed.reason == "c2: no"

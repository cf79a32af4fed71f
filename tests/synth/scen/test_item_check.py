"""Validators written by code for exact checklist items (`synth/scen/item_check.py`): the claim read from the
item's text, the source it gives, what it refuses to read, and a whole run kept without a repair round."""

from __future__ import annotations

from typing import Any

import pytest

from envscaler_mcp.catalog.store import load_scenarios
from envscaler_mcp.scenario.models import ChecklistItem
from envscaler_mcp.synth.scen.item_check import claim, written_by_code
from envscaler_mcp.synth.scen.parsers import parse_validators
from tests.synth.fixtures.scen_router import ANSWERS

INITIAL = {"orders": {"O-2001": {"order_id": "O-2001", "status": "pending", "total": 30.0},
                      "O-2002": {"order_id": "O-2002", "status": "pending", "total": 12.5}},
           "users": [{"user_id": "U01", "plan": "free", "active": True}]}
FINAL = {"orders": {"O-2001": {"order_id": "O-2001", "status": "cancelled", "total": 30.0},
                    "O-2002": {"order_id": "O-2002", "status": "pending", "total": 12.5},
                    "O-2003": {"order_id": "O-2003", "status": "new", "total": 7.0}},
         "users": [{"user_id": "U01", "plan": "pro", "active": False}]}


def item(text: str, change: bool = True) -> ChecklistItem:
    return ChecklistItem(id="c1", description=text, validator="def check_func(final_state):\n    return False",
                         claims_change=change)


def verdict(source: str, state: dict[str, Any]) -> bool:
    scope: dict[str, Any] = {}
    exec(source, scope)  # the test's own generated source, on the test's own states
    return bool(scope["check_func"](state))


@pytest.mark.parametrize("text", [
    "Has order O-2001 status 'cancelled'?",
    "Has orders O-2001 STATUS \"Cancelled\"?",
    "Has the status of order O-2001 become 'cancelled'?",
    "Has order O-2003 status 'new'?",  # created by the plan: absent initially
    "Has user U01 plan 'pro'?",  # a list collection, found by its id field
    "Has user U01 active 'false'?",
])
def test_an_exact_item_gets_a_validator_true_after_and_false_before(text: str) -> None:
    found = claim(item(text), INITIAL, FINAL)
    assert found is not None
    assert verdict(found.source(), FINAL) is True
    assert verdict(found.source(), INITIAL) is False


def test_the_code_validator_reads_the_field_the_item_names_not_another_one() -> None:
    found = claim(item("Has order O-2001 status 'cancelled'?"), INITIAL, FINAL)
    assert found is not None and (found.collection, found.record_id, found.field) == ("orders", "O-2001", "status")
    other = {"orders": {"O-2001": {"order_id": "O-2001", "status": "pending", "note": "cancelled"}}}
    assert verdict(found.source(), other) is False  # the value in another field is not the claim
    moved = {"orders": {"O-2002": {"order_id": "O-2002", "status": "cancelled"}}}
    assert verdict(found.source(), moved) is False  # nor on another record
    assert verdict(found.source(), {"orders": []}) is False and verdict(found.source(), {}) is False


@pytest.mark.parametrize(("text", "change"), [
    ("Has order O-2001 been cancelled?", True),  # no value quoted
    ("Has order O-2001 status 'cancelled' and order O-2002 status 'pending'?", True),  # two records
    ("Has order O-2001 status 'cancelled' or 'refunded'?", True),  # two values
    ("Has order O-2001 'cancelled'?", True),  # no field named
    ("Has order O-2001 status 'canceled'?", True),  # not the value the field has after the solution
    ("Has order O-2002 status 'pending'?", True),  # a [change] item the solution did not change
    ("Has order O-2001 total '30'?", True),  # idem, a number
    ("Has order O-9999 status 'cancelled'?", True),  # no such record
])
def test_an_item_that_says_less_or_something_else_is_left_to_the_model(text: str, change: bool) -> None:
    assert claim(item(text, change), INITIAL, FINAL) is None


def test_a_keep_item_gets_its_check_and_only_disagreeing_items_are_rewritten() -> None:
    keep = item("Has order O-2002 total '12.50'?", change=False)
    found = claim(keep, INITIAL, FINAL)
    assert found is not None and verdict(found.source(), INITIAL) and verdict(found.source(), FINAL)
    items = [item("Has order O-2001 status 'cancelled'?"), keep.model_copy(update={"id": "c2"})]
    checklist, rewritten = written_by_code(items, ["c1"], INITIAL, FINAL)
    assert rewritten == ["c1"] and checklist[1] == items[1]
    assert checklist[0].validator is not None and "'status'" in checklist[0].validator


@pytest.mark.anyio
async def test_a_wrong_validator_of_an_exact_item_is_written_by_code_without_a_repair_round(run: Any) -> None:
    # c1 "Has order O-2001 status 'cancelled'?" comes with a validator expecting "canceled"
    _, router, out = await run("mini_shop", "coded", logged=True)
    [sc] = load_scenarios(out / "mini_shop.jsonl")
    assert router.calls["validators"] == 1 and router.calls["solution"] == 1  # no repair round
    code = sc.checklist[0].validator or ""
    assert "canceled" not in code and "record.get('status') == 'cancelled'" in code
    written = parse_validators((ANSWERS / "mini_shop" / "coded" / "validators.md").read_text(), ["c2", "c3", "c4"])
    assert [(c.validator or "").strip() for c in sc.checklist[1:]] == [written[i].strip() for i in ("c2", "c3", "c4")]
    assert any(n.startswith("validators of c1 written by code from their items' text") for n in sc.provenance.notes)
    log = (out / "_work" / "synth.log").read_text()
    said = [line.split(" ", 1)[1] for line in log.splitlines() if " s001 gate: " in line or " s001 validators: validators of" in line]
    assert said[0].startswith("  s001 gate: final_true: c1 is not True after the reference solution")
    assert said[1].startswith("  s001 validators: validators of c1 written by code")
    assert said[2] == "  s001 gate: passed"



def test_a_field_named_only_inside_another_fields_name_is_not_the_claim() -> None:
    # "payment status" mentions the word "status": the item is about payment_status, which the solution left
    # 'pending'; a validator of status == 'refunded' would check what the item does not say
    initial = {"orders": {"O-1": {"order_id": "O-1", "status": "paid", "payment_status": "pending"}}}
    final = {"orders": {"O-1": {"order_id": "O-1", "status": "refunded", "payment_status": "pending"}}}
    assert claim(item("Has order O-1 payment status 'refunded'?"), initial, final) is None
    assert claim(item("Has order O-1 payment_status 'refunded'?"), initial, final) is None
    found = claim(item("Has order O-1 status 'refunded'?"), initial, final)
    assert found is not None and found.field == "status"


@pytest.mark.parametrize("text", [
    "Has order O-2001 status not 'cancelled'?",
    "Is order O-2001 no longer 'cancelled' in status?",
    "Isn't order O-2001 status 'cancelled' any more?",
    "Is order O-2001 status different from 'cancelled'?",
    "Has order O-2001 status anything other than 'cancelled'?",
])
def test_an_item_that_denies_the_value_is_not_given_a_validator_that_asserts_it(text: str) -> None:
    # the item says the opposite of the solution; a validator of status == 'cancelled' would agree with the
    # solution while its item says otherwise: the item is left to the repair round
    assert claim(item(text, change=False), INITIAL, FINAL) is None

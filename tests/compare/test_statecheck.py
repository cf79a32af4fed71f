"""The state check on hand-made states: one test per rule, then properties over generated states."""

from __future__ import annotations

import copy
from typing import Any

from envscaler_mcp.compare.freefields import FreeFields
from envscaler_mcp.compare.statecheck import compare_states, nondeterministic_fields

FREE = FreeFields([("orders.*.cancel_reason", "free text"), ("notes[*].text", "free text")])


def shop() -> dict[str, Any]:
    return {
        "today": "2026-03-16",
        "orders": {
            "O-1": {"order_id": "O-1", "customer": "C1", "status": "pending", "total": 30.0, "cancel_reason": None,
                    "items": [{"sku": "lamp", "qty": 1}]},
            "O-2": {"order_id": "O-2", "customer": "C2", "status": "pending", "total": 5.0, "cancel_reason": None,
                    "items": [{"sku": "mug", "qty": 2}]},
        },
        "customers": {"C1": {"orders": ["O-1"], "tags": ["vip", "eu"]}, "C2": {"orders": ["O-2"], "tags": []}},
        "notes": [{"order_id": "O-1", "text": "gift wrap"}],
    }


def cancelled(state: dict[str, Any], order: str = "O-1", reason: str = "ordered by mistake") -> dict[str, Any]:
    out = copy.deepcopy(state)
    out["orders"][order].update(status="cancelled", cancel_reason=reason)
    return out


def kinds(result: Any) -> list[tuple[str, str]]:
    return [(c.path, c.kind) for c in result.changes]


def test_the_reference_state_itself_passes() -> None:
    initial = shop()
    result = compare_states(initial, cancelled(initial), cancelled(initial), FREE)
    assert result.passed and result.changes == [] and result.ignored == []


def test_a_change_the_reference_did_not_make_is_collateral() -> None:
    initial = shop()
    reference = cancelled(initial)
    agent = cancelled(reference, "O-2", "also this one")
    result = compare_states(initial, reference, agent, FREE)
    assert not result.passed
    assert kinds(result) == [("orders['O-2'].status", "collateral"), ("orders['O-2'].cancel_reason", "collateral")]
    status = result.changes[0]
    assert (status.expected, status.actual) == ("pending", "cancelled")
    assert status.describe() == "orders['O-2'].status: changed to \"cancelled\", the reference left it as \"pending\""


def test_removing_a_record_the_reference_kept_is_collateral() -> None:
    initial = shop()
    agent = cancelled(initial)
    del agent["orders"]["O-2"]
    [change] = compare_states(initial, cancelled(initial), agent, FREE).changes
    assert (change.path, change.kind, change.detail, change.actual) == ("orders['O-2']", "collateral", "removed", None)


def test_a_record_only_the_agent_added_is_extra() -> None:
    initial = shop()
    agent = cancelled(initial)
    agent["orders"]["O-3"] = {"order_id": "O-3", "status": "pending"}
    [change] = compare_states(initial, cancelled(initial), agent, FREE).changes
    assert (change.path, change.kind, change.expected) == ("orders['O-3']", "extra", None)
    assert change.actual == {"order_id": "O-3", "status": "pending"}


def test_a_reference_change_left_undone_or_done_otherwise_is_a_mismatch() -> None:
    initial = shop()
    reference = cancelled(initial)
    undone = compare_states(initial, reference, initial, FREE)
    assert kinds(undone) == [("orders['O-1'].status", "mismatch")]  # the free cancel_reason is not reported
    assert undone.changes[0].describe() == "orders['O-1'].status: expected \"cancelled\", got \"pending\""
    other = copy.deepcopy(reference)
    other["orders"]["O-1"]["status"] = "on_hold"
    assert [(c.expected, c.actual) for c in compare_states(initial, reference, other, FREE).changes] == [
        ("cancelled", "on_hold")]


def test_a_record_the_reference_added_and_the_agent_did_not_is_missing() -> None:
    initial = shop()
    reference = copy.deepcopy(initial)
    reference["orders"]["O-3"] = {"order_id": "O-3", "customer": "C1", "status": "pending"}
    [change] = compare_states(initial, reference, initial, FREE).changes
    assert (change.path, change.kind, change.expected["customer"]) == ("orders['O-3']", "missing", "C1")


def test_a_record_the_reference_removed_and_the_agent_kept_is_a_mismatch() -> None:
    initial = shop()
    reference = copy.deepcopy(initial)
    del reference["orders"]["O-2"]
    [change] = compare_states(initial, reference, initial, FREE).changes
    assert (change.path, change.kind, change.detail) == ("orders['O-2']", "mismatch", "the reference removed it")


def test_different_text_in_a_free_field_passes_and_is_listed_as_ignored() -> None:
    initial = shop()
    result = compare_states(initial, cancelled(initial), cancelled(initial, reason="customer changed her mind"), FREE)
    assert result.passed and result.ignored == ["orders['O-1'].cancel_reason"]


def test_a_free_field_on_a_record_the_reference_never_touched_is_collateral() -> None:
    initial = shop()
    agent = cancelled(initial)
    agent["orders"]["O-2"]["cancel_reason"] = "just a note"
    assert kinds(compare_states(initial, cancelled(initial), agent, FREE)) == [
        ("orders['O-2'].cancel_reason", "collateral")]


def test_not_free_patterns_override_free_ones() -> None:
    initial = shop()
    strict = FREE + FreeFields(not_free=["orders.*.cancel_reason"])
    result = compare_states(initial, cancelled(initial), cancelled(initial, reason="other words"), strict)
    assert kinds(result) == [("orders['O-1'].cancel_reason", "mismatch")]


def _place(state: dict[str, Any], key: str, customer: str, sku: str, qty: int) -> None:
    state["orders"][key] = {"order_id": key, "customer": customer, "status": "pending", "total": 10.0 * qty,
                            "cancel_reason": None, "items": [{"sku": sku, "qty": qty}]}
    state["customers"][customer]["orders"].append(key)


def test_records_with_generated_keys_are_matched_by_content() -> None:
    initial = shop()
    reference, agent = copy.deepcopy(initial), copy.deepcopy(initial)
    _place(reference, "O-3", "C1", "desk", 1)
    _place(reference, "O-4", "C2", "chair", 2)
    _place(agent, "O-3", "C2", "chair", 2)  # the same two orders, placed in the other order
    _place(agent, "O-4", "C1", "desk", 1)
    assert compare_states(initial, reference, agent, FREE).passed
    agent["orders"]["O-3"]["items"][0]["qty"] = 3  # agent's O-3 is the reference's O-4
    [change] = compare_states(initial, reference, agent, FREE).changes
    assert change.describe() == "orders['O-4'].items[0].qty: expected 2, got 3"


def test_keys_the_task_names_are_not_renamed() -> None:
    initial = {"users": {"alice": {"name": "alice", "role": "admin"}}}
    reference = copy.deepcopy(initial)
    reference["users"]["bob"] = {"name": "bob", "role": "viewer"}
    agent = copy.deepcopy(initial)
    agent["users"]["rob"] = {"name": "rob", "role": "viewer"}
    assert compare_states(initial, reference, agent).passed  # 'bob' looks generated: matched by content
    result = compare_states(initial, reference, agent, fixed_keys={"bob"})
    assert kinds(result) == [("users.bob", "missing"), ("users.rob", "extra")]


def test_lists_differing_only_in_order_are_equal() -> None:
    initial = shop()
    reference = copy.deepcopy(initial)
    reference["customers"]["C1"]["tags"] += ["gold"]
    agent = copy.deepcopy(initial)
    agent["customers"]["C1"]["tags"] = ["gold", "eu", "vip"]
    assert compare_states(initial, reference, agent, FREE).passed


def test_list_differences_name_the_element() -> None:
    initial = shop()
    reference = copy.deepcopy(initial)
    reference["customers"]["C1"]["tags"] += ["gold"]
    agent = copy.deepcopy(initial)
    agent["customers"]["C1"]["tags"] = ["eu", "silver"]  # dropped 'vip' (kept by the reference), no 'gold'
    assert sorted(kinds(compare_states(initial, reference, agent, FREE))) == [
        ("customers.C1.tags[0]", "collateral"), ("customers.C1.tags[1]", "extra"), ("customers.C1.tags[2]", "missing")]
    agent = copy.deepcopy(reference)
    agent["orders"]["O-1"]["items"][0]["qty"] = 5
    [change] = compare_states(initial, reference, agent, FREE).changes
    assert (change.path, change.kind, change.expected, change.actual) == (
        "orders['O-1'].items[0].qty", "collateral", 1, 5)


def test_free_fields_inside_list_elements() -> None:
    initial = shop()
    reference, agent = copy.deepcopy(initial), copy.deepcopy(initial)
    reference["notes"].append({"order_id": "O-2", "text": "call the customer"})
    agent["notes"].insert(0, {"order_id": "O-2", "text": "phone her back"})
    assert compare_states(initial, reference, agent, FREE).passed
    agent["notes"][0]["order_id"] = "O-1"  # a note on another order: nothing left to pair it by
    assert kinds(compare_states(initial, reference, agent, FREE)) == [("notes[1]", "missing"), ("notes[0]", "extra")]


def test_numbers_compare_as_json_numbers() -> None:
    initial = {"a": {"x": 1, "flag": False}}
    reference = {"a": {"x": 0.1 + 0.2, "flag": True}}
    assert compare_states(initial, reference, {"a": {"x": 0.3, "flag": True}}).passed
    assert compare_states({"n": 0}, {"n": 24}, {"n": 24.0}).passed
    assert kinds(compare_states(initial, reference, {"a": {"x": 0.3, "flag": 1}})) == [("a.flag", "mismatch")]


def test_nondeterministic_fields_from_two_replays() -> None:
    initial = {"orders": {}}
    first = {"orders": {"6f1c": {"id": "6f1c", "item": "desk", "created_at": "2026-03-16T10:00:01"}}}
    second = {"orders": {"a93e": {"id": "a93e", "item": "desk", "created_at": "2026-03-16T10:00:02"}}}
    patterns, problems = nondeterministic_fields(initial, first, second)
    assert patterns == [("orders.*.created_at", "differs between two replays of the reference")]
    assert problems == []
    free = FreeFields(patterns)
    agent = {"orders": {"77d0": {"id": "77d0", "item": "desk", "created_at": "2026-03-16T11:30:00"}}}
    assert compare_states(initial, first, agent, free).passed
    agent["orders"]["77d0"]["item"] = "chair"
    assert kinds(compare_states(initial, first, agent, free)) == [("orders['6f1c'].item", "mismatch")]
    _, problems = nondeterministic_fields(initial, first, {"orders": {}})
    assert problems == ["orders['6f1c'] is missing in a second replay of the reference"]


def test_true_is_not_one_anywhere_in_a_record() -> None:
    """Python's == takes True for 1 and False for 0 inside containers; the state check does not (an agent writing
    1 where the reference wrote true, in a field both added, is a mismatch), while 24 and 24.0 still agree."""
    initial = {"orders": {"A": {"x": 1}}}
    reference = {"orders": {"A": {"x": 1, "paid": True, "total": 24}}}
    assert not compare_states(initial, reference, {"orders": {"A": {"x": 1, "paid": 1, "total": 24}}}).passed
    assert not compare_states(initial, {"orders": {"A": {"x": 0}}}, {"orders": {"A": {"x": False}}}).passed
    assert compare_states(initial, reference, {"orders": {"A": {"x": 1, "paid": True, "total": 24.0}}}).passed


def test_a_paired_list_element_reports_what_the_agent_wrote() -> None:
    # the agent placed a different order (nothing to pair it with) and noted it: the note pairs with the
    # reference's by its kind, and its differences show the agent's own values, not their normalised form
    initial = {"orders": {"O-1": {"sku": "lamp", "qty": 1}}, "notes": []}
    reference = copy.deepcopy(initial)
    reference["orders"]["O-2"] = {"sku": "lamp", "qty": 2}
    reference["notes"].append({"order_id": "O-2", "kind": "gift", "qty": 2})
    agent = copy.deepcopy(initial)
    agent["orders"]["O-7"] = {"sku": "mug", "qty": 5}
    agent["notes"].append({"order_id": "O-7", "kind": "gift", "qty": 5})
    changes = {c.path: (c.kind, c.expected, c.actual) for c in compare_states(initial, reference, agent).changes}
    assert changes == {
        "orders['O-2']": ("missing", {"sku": "lamp", "qty": 2}, None),
        "orders['O-7']": ("extra", None, {"sku": "mug", "qty": 5}),
        "notes[0].order_id": ("mismatch", "O-2", "O-7"),
        "notes[0].qty": ("mismatch", 2, 5),
    }


def test_a_change_is_described_in_the_text_people_wrote() -> None:
    # names stay as written (not \u escapes); a value fits in 80 characters or is cut with "..."
    initial = {"customers": {"C1": {"name": "Zoë Brontë", "note": ""}}}
    reference = copy.deepcopy(initial)
    agent = copy.deepcopy(initial)
    agent["customers"]["C1"]["name"] = "Chloé Durand"
    [change] = compare_states(initial, reference, agent).changes
    assert change.describe() == 'customers.C1.name: changed to "Chloé Durand", the reference left it as "Zoë Brontë"'
    agent["customers"]["C1"]["name"], agent["customers"]["C1"]["note"] = "Zoë Brontë", "x" * 78  # 80 with quotes
    assert compare_states(initial, reference, agent).changes[0].describe().endswith(f'changed to "{"x" * 78}", '
                                                                                     'the reference left it as ""')
    agent["customers"]["C1"]["note"] = "x" * 79
    assert f'changed to "{"x" * 76}..., ' in compare_states(initial, reference, agent).changes[0].describe()


def test_a_record_is_described_the_same_whatever_order_its_keys_were_written_in() -> None:
    initial: dict[str, Any] = {"orders": {}}
    for record in ({"sku": "lamp", "qty": 2}, {"qty": 2, "sku": "lamp"}):
        [change] = compare_states(initial, {"orders": {"O-2": record}}, initial).changes
        assert change.describe() == "orders['O-2']: missing (the reference has {\"qty\": 2, \"sku\": \"lamp\"})"


def test_a_list_with_repeated_elements_names_only_the_one_that_differs() -> None:
    initial = {"customers": {"C1": {"stamps": ["visit", "visit"]}}}
    reference = copy.deepcopy(initial)
    reference["customers"]["C1"]["stamps"].append("review")
    agent = copy.deepcopy(initial)
    agent["customers"]["C1"]["stamps"].append("referral")
    changes = compare_states(initial, reference, agent).changes
    assert sorted((c.path, c.kind) for c in changes) == [("customers.C1.stamps[2]", "extra"),
                                                         ("customers.C1.stamps[2]", "missing")]

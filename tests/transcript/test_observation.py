"""The observation check (transcript/observation.py): what carries information, how results are matched, and the
per-turn structure. Each test names the rule it pins."""

from __future__ import annotations

from typing import Any

import pytest

from envscaler_mcp.transcript.observation import (
    ObservationTurn,
    check_observation,
    information,
    normalise,
    units,
)

ORDER = {"order_id": "O-1", "customer": "bob", "total": 24.0, "notes": ["Gift wrap"]}
OTHER = {"order_id": "O-2", "customer": "ann", "total": 9.5, "notes": []}


def call(name: str, result: Any, *, is_error: bool = False, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "result": result, "is_error": is_error}


def one_turn(reference: list[dict[str, Any]], agent: list[dict[str, Any]], **kw: Any) -> Any:
    return check_observation([ObservationTurn(reference=reference, agent=agent)], **kw)


def test_normalise_ignores_key_order_and_number_form_but_not_types_or_list_order() -> None:
    assert normalise({"a": 1, "b": [2.0, "x"]}) == normalise({"b": [2, "x"], "a": 1.0})
    assert normalise(True) != normalise(1) and normalise(False) != normalise(0)
    assert normalise({"v": True}) != normalise({"v": 1})
    assert normalise([1, 2]) != normalise([2, 1])
    assert normalise(2.5) != normalise(2) and normalise("2") != normalise(2)
    assert normalise(None) != normalise("") and normalise([]) != normalise({})
    assert normalise(None) != normalise("None")


@pytest.mark.parametrize(("result", "expected"), [
    ({"success": True, "data": ORDER}, ORDER),
    ({"success": True, "message": "order 'O-1' cancelled"}, None),  # a sentence for the model, no data
    ({"success": True, "message": "done", "data": {"id": "T-9"}}, {"id": "T-9"}),
    ({"success": True, "data": ORDER, "count": 1}, {"data": ORDER, "count": 1}),
    ({"success": True, "data": []}, None),
    ({"success": True, "data": None}, None),
    ({"success": True, "data": 0}, 0),  # a zero balance is information
    ({"success": True, "data": False}, False),
    ("  plain text  ", "plain text"),
    ("   ", None),
    (7, 7),
])
def test_information(result: Any, expected: Any) -> None:
    assert information(result) == expected
    assert (information(result) is None) is (expected is None)


def test_units_split_a_list_of_records_only() -> None:
    assert units([ORDER, OTHER]) == [ORDER, OTHER]
    assert units(["a", "b"]) == [["a", "b"]]
    assert units(ORDER) == [ORDER]
    assert units([ORDER, "x"]) == [[ORDER, "x"]]


def test_a_record_is_observed_alone_or_inside_a_list_the_agent_got() -> None:
    ref = [call("get_order", {"success": True, "data": ORDER}, order_id="O-1")]
    same = one_turn(ref, [call("get_order", {"data": dict(reversed(ORDER.items())), "success": True})])
    listed = one_turn(ref, [call("list_orders", {"success": True, "data": [OTHER, ORDER]}, customer="bob")])
    assert (same.status, same.required, same.observed) == ("passed", 1, 1)
    assert (listed.status, listed.observed) == ("passed", 1)


def test_a_record_is_observed_at_any_depth_of_an_agent_result_in_any_key_order() -> None:
    ref = [call("get_order", {"success": True, "data": ORDER}, order_id="O-1")]
    nested = {"success": True, "data": {"customer": {"name": "bob", "orders": [OTHER, dict(reversed(ORDER.items()))]}}}
    deep = one_turn(ref, [call("get_customer", nested, customer="bob")])
    assert (deep.status, deep.observed) == ("passed", 1)
    # The whole of a nested result is no whole result: a scalar reference result is not found inside it.
    scalar = one_turn([call("count_orders", {"success": True, "data": 2})], [call("get_customer", nested)])
    assert (scalar.status, scalar.observed) == ("failed", 0)


def test_a_record_differing_in_one_value_is_not_observed() -> None:
    ref = [call("get_order", {"success": True, "data": ORDER}, order_id="O-1")]
    verdict = one_turn(ref, [call("get_order", {"success": True, "data": {**ORDER, "total": 24.01}})])
    assert (verdict.status, verdict.required, verdict.observed) == ("failed", 1, 0)
    assert verdict.evidence == [
        'turn 1, reference call 1 get_order({"order_id": "O-1"}): {"customer": "bob", "notes": ["Gift wrap"], '
        '"order_id": "O-1", "total": 24.0} is not among the results of the agent\'s 1 call(s) in that turn']


def test_a_lazy_agent_that_skipped_the_lookup_fails() -> None:
    ref = [call("get_order", {"success": True, "data": ORDER}, order_id="O-1"),
           call("cancel_order", {"success": True, "message": "order 'O-1' cancelled"}, order_id="O-1")]
    lazy = [call("cancel_order", {"success": True, "message": "order 'O-1' cancelled"}, order_id="O-1")]
    verdict = one_turn(ref, lazy)
    assert (verdict.status, verdict.required, verdict.observed) == ("failed", 1, 0)
    assert verdict.evidence[0].startswith("turn 1, reference call 1 get_order(")


def test_each_record_of_a_search_must_be_observed() -> None:
    ref = [call("list_orders", {"success": True, "data": [ORDER, OTHER]})]
    half = one_turn(ref, [call("get_order", {"success": True, "data": OTHER})])
    both = one_turn(ref, [call("get_order", {"success": True, "data": OTHER}),
                          call("get_order", {"success": True, "data": ORDER})])
    assert (half.status, half.required, half.observed) == ("failed", 2, 1)
    assert "record 1 of 2" in half.evidence[0] and len(half.evidence) == 1
    assert (both.status, both.observed) == ("passed", 2)


def test_a_scalar_must_be_a_whole_result_not_a_value_inside_one() -> None:
    ref = [call("get_balance", {"success": True, "data": 24.0})]
    inside = one_turn(ref, [call("get_order", {"success": True, "data": ORDER})])  # total 24.0 inside a record
    whole = one_turn(ref, [call("get_balance", {"success": True, "data": 24})])
    assert inside.status == "failed" and whole.status == "passed"


def test_error_results_observe_nothing() -> None:
    ref = [call("get_order", {"success": True, "data": ORDER})]
    verdict = one_turn(ref, [call("get_order", {"success": True, "data": ORDER}, is_error=True)])
    assert verdict.status == "failed"


def test_only_read_only_calls_count_when_they_are_known() -> None:
    ref = [call("get_order", {"success": True, "data": ORDER}),
           call("create_ticket", {"success": True, "data": {"ticket_id": "T-9"}})]
    agent = [call("get_order", {"success": True, "data": ORDER})]
    assert one_turn(ref, agent, read_only={"get_order"}).status == "passed"
    assert one_turn(ref, agent).status == "failed"  # every call's result when nothing is known
    nothing = one_turn(ref, agent, read_only={"list_orders"})
    assert (nothing.status, nothing.reason) == (
        "not_applicable", "no read-only call of the reference solution returns information to observe")


def test_message_only_and_failed_reference_calls_are_not_required() -> None:
    ref = [call("cancel_order", {"success": True, "message": "cancelled"}),
           call("get_order", {"success": False, "error": "not found"}, is_error=True)]
    verdict = one_turn(ref, [])
    assert (verdict.status, verdict.required, verdict.observed, verdict.evidence) == ("not_applicable", 0, 0, [])


def test_results_that_vary_between_replays_are_skipped() -> None:
    ref = [call("now", {"success": True, "data": "2026-11-28T07:00:00"}),
           call("get_order", {"success": True, "data": ORDER})]
    agent = [call("get_order", {"success": True, "data": ORDER})]
    turn = ObservationTurn(reference=ref, agent=agent, skip={0})
    assert check_observation([turn]).status == "passed"
    assert check_observation([ObservationTurn(reference=ref, agent=agent)]).status == "failed"


def test_each_turn_is_matched_against_its_own_calls() -> None:
    get = call("get_order", {"success": True, "data": ORDER})
    late = [ObservationTurn(reference=[get], agent=[]), ObservationTurn(reference=[], agent=[get])]
    in_time = [ObservationTurn(reference=[get], agent=[get]), ObservationTurn(reference=[], agent=[])]
    verdict = check_observation(late)
    assert verdict.status == "failed" and verdict.evidence[0].startswith("turn 1,")
    assert check_observation(in_time).status == "passed"
    second = check_observation([ObservationTurn(reference=[], agent=[]), ObservationTurn(reference=[get], agent=[])])
    assert second.evidence[0].startswith("turn 2,")

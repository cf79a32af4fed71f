"""When the observation check applies (harness/observe.py): --observation auto|on|off, read-only marks from the
server's tool list, and a reference that is missing or failed."""

from __future__ import annotations

import json
from typing import Any

from mcp.types import Tool, ToolAnnotations

from envscaler_mcp.harness.observe import observation_verdict, read_only_tools
from envscaler_mcp.references.reference import Reference
from envscaler_mcp.references.replay import ReplayCall
from envscaler_mcp.scenario.models import ToolCall, Turn
from tests.harness.shop import BOB

ORDER = {"order_id": "O-1002", "customer": "bob", "status": "pending", "total": 12.0, "notes": ["Gift wrap"]}


def _tool(name: str, read_only: bool | None) -> Tool:
    annotations = None if read_only is None else ToolAnnotations(read_only_hint=read_only)
    return Tool(name=name, input_schema={"type": "object"}, annotations=annotations)


def _reference(**kw: Any) -> Reference:
    calls = [ReplayCall(tool="get_order", arguments={"order_id": "O-1002"}, ok=True,
                        result_text=json.dumps({"success": True, "data": ORDER})),
             ReplayCall(tool="cancel_order", arguments={"order_id": "O-1002"}, ok=True,
                        result_text=json.dumps({"success": True, "data": {"refund": 12.0}}))]
    return Reference(scenario=BOB, final_state=BOB.initial_state, calls=calls, **kw)


def _transcript(*results: Any) -> dict[str, Any]:
    return {"calls": [{"name": "t", "arguments": {}, "result": r, "is_error": False} for r in results]}


def test_read_only_tools_come_from_the_annotations() -> None:
    assert read_only_tools([_tool("get_order", True), _tool("cancel_order", False)]) == {"get_order"}
    assert read_only_tools([_tool("get_order", True), _tool("other", None)]) == {"get_order"}
    assert read_only_tools([_tool("get_order", None), _tool("cancel_order", None)]) is None
    assert read_only_tools([_tool("a", False)]) == set()


def test_auto_checks_the_read_only_calls_only() -> None:
    seen = _transcript({"success": True, "data": ORDER})
    assert observation_verdict("auto", _reference(), seen, {"get_order"}).status == "passed"
    assert observation_verdict("auto", _reference(), _transcript(), {"get_order"}).status == "failed"
    none = observation_verdict("auto", _reference(), _transcript(), {"list_orders"})
    assert (none.status, none.reason) == ("not_applicable", "the reference solution makes no read-only call")
    unmarked = observation_verdict("auto", _reference(), seen, None)
    assert unmarked.status == "not_applicable" and "marks no tool read-only" in unmarked.reason


def test_trials_sharing_one_reference_are_judged_each_on_its_own_transcript() -> None:
    """The reference's call records are parsed once and shared by its trials: a passing trial, a failing one and
    a passing one again, on one Reference, each get their own verdict."""
    ref = _reference()
    seen = _transcript({"success": True, "data": ORDER}, {"success": True, "data": {"refund": 12.0}})
    assert observation_verdict("on", ref, seen, None).status == "passed"
    assert observation_verdict("on", ref, _transcript({"success": True, "data": ORDER}), None).observed == 1
    assert observation_verdict("on", ref, seen, None).status == "passed"
    assert ref.call_records() == ref.call_records() and ref.call_records() is not ref.call_records()
    assert ref.call_records()[0]["result"] == {"success": True, "data": ORDER}  # parsed, not the text


def test_on_checks_every_result_when_nothing_is_marked() -> None:
    seen = _transcript({"success": True, "data": ORDER})
    verdict = observation_verdict("on", _reference(), seen, None)
    assert (verdict.status, verdict.required, verdict.observed) == ("failed", 2, 1)  # the refund was not seen
    assert "cancel_order" in verdict.evidence[0]
    assert observation_verdict("on", _reference(), seen, {"get_order"}).status == "passed"


def test_off_a_missing_or_failed_reference_and_unstable_results() -> None:
    seen = _transcript({"success": True, "data": ORDER})
    off = observation_verdict("off", _reference(), _transcript(), {"get_order"})
    assert (off.status, off.reason) == ("not_applicable", "the observation check is turned off (--observation off)")
    assert observation_verdict("auto", None, seen, {"get_order"}).status == "not_applicable"
    failed = _reference(unavailable="the reference solution failed when replayed: boom")
    failed.final_state = None
    verdict = observation_verdict("auto", failed, _transcript(), {"get_order"})
    assert (verdict.status, verdict.reason) == ("not_applicable", "the reference solution failed when replayed: boom")
    skipped = observation_verdict("auto", _reference(unstable_results=[0]), _transcript(), {"get_order"})
    assert skipped.status == "not_applicable"


def test_each_turn_must_observe_its_own_reference_results() -> None:
    # turn 1 looks the order up, turn 2 cancels it: an agent that looks the order up only in turn 2 (after the
    # user asked for the cancellation) fails, though it saw every result by the end
    lookup, cancel = (ToolCall(tool=c.tool, arguments=c.arguments) for c in _reference().calls)
    scenario = BOB.model_copy(update={"turns": [Turn(user="Where is O-1002?", reference=[lookup]),
                                                Turn(user="Cancel it.", reference=[cancel])]})
    reference = _reference()
    reference.scenario = scenario
    both = _transcript({"success": True, "data": ORDER}, {"success": True, "data": {"refund": 12.0}})
    late = observation_verdict("on", reference, both, None, turn_calls=[0])
    assert late.status == "failed" and "get_order" in late.evidence[0]
    assert observation_verdict("on", reference, both, None, turn_calls=[1]).status == "passed"


def test_a_turn_the_episode_never_reached_observed_nothing() -> None:
    lookup, cancel = (ToolCall(tool=c.tool, arguments=c.arguments) for c in _reference().calls)
    scenario = BOB.model_copy(update={"turns": [Turn(user="Where is O-1002?", reference=[lookup]),
                                                Turn(user="Cancel it.", reference=[cancel]), Turn(user="Thanks.")]})
    reference = _reference()
    reference.scenario = scenario
    # the episode stopped in turn 1 (no turn end recorded) after a call whose result is turn 2's refund
    early = _transcript({"success": True, "data": {"refund": 12.0}})
    verdict = observation_verdict("on", reference, early, None, turn_calls=[])
    assert (verdict.status, verdict.required, verdict.observed) == ("failed", 2, 0)

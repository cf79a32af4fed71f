"""Replaying a reference solution: the state kept at each turn's end, and which call failed."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.types import CallToolResult, TextContent

from envscaler_mcp.references.replay import call_outcome, replay_calls
from envscaler_mcp.scenario.models import ToolCall
from tests.qa.fake_episode import fake_shop_episode

pytestmark = pytest.mark.anyio

SHOP = {"orders": {"O1": {"status": "pending"}, "O2": {"status": "pending"}}, "notes": []}
CANCEL_BOTH = [ToolCall(tool="cancel_order", arguments={"order_id": "O1"}),
               ToolCall(tool="cancel_order", arguments={"order_id": "O2"})]


def statuses(state: Any) -> tuple[str, str]:
    return state["orders"]["O1"]["status"], state["orders"]["O2"]["status"]


async def test_each_turn_end_keeps_the_state_after_that_many_calls() -> None:
    # turns ending after 0 calls (a turn the reference answers without a call), 1 call, again 1, then 2
    snapshots: list[Any] = []
    calls, final, reasons = await replay_calls(CANCEL_BOTH, SHOP, fake_shop_episode, checkpoints=[0, 1, 1, 2],
                                               snapshots=snapshots)
    assert reasons == [] and [c.ok for c in calls] == [True, True]
    assert [statuses(s) for s in snapshots] == [("pending", "pending"), ("cancelled", "pending"),
                                                ("cancelled", "pending"), ("cancelled", "cancelled")]
    assert final is not None and statuses(final) == ("cancelled", "cancelled")


async def test_a_failed_call_is_named_by_its_place_in_the_solution() -> None:
    calls = [CANCEL_BOTH[0], ToolCall(tool="cancel_order", arguments={"order_id": "O9"}), CANCEL_BOTH[1]]
    made, final, reasons = await replay_calls(calls, SHOP, fake_shop_episode)
    assert final is None and len(made) == 2
    assert reasons == ['call 2 cancel_order({"order_id": "O9"}) failed: success is False: order O9 not found']
    # without snapshots asked for, none are kept, and the replay runs as usual
    made, final, reasons = await replay_calls(CANCEL_BOTH, SHOP, fake_shop_episode, checkpoints=[1])
    assert reasons == [] and final is not None and statuses(final) == ("cancelled", "cancelled")


def test_a_result_given_as_text_only_is_read_as_json() -> None:
    # servers that return no structured content: the text block is the result
    failed = CallToolResult(content=[TextContent(type="text", text='{"success": false, "error": "no such order"}')])
    ok, detail = call_outcome(failed)
    assert ok is False and detail is not None and "no such order" in detail
    done = CallToolResult(content=[TextContent(type="text", text='{"success": true, "data": {"id": "O1"}}')])
    assert call_outcome(done) == (True, None)

"""Replaying a reference solution: the state kept at each turn's end, and which call failed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from mcp.types import CallToolResult, TextContent

from envscaler_mcp._outcome import read_result
from envscaler_mcp.providers.base import ToolCallRequest
from envscaler_mcp.providers.tools import tool_result_message
from envscaler_mcp.references.replay import replay_calls
from envscaler_mcp.scenario.models import ToolCall
from tests.qa.fake_episode import FakeShopEpisode, fake_shop_episode

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
    detail = read_result(failed).failure()
    assert detail is not None and "no such order" in detail
    done = CallToolResult(content=[TextContent(type="text", text='{"success": true, "data": {"id": "O1"}}')])
    assert read_result(done).failure() is None


class _WrappingServer:
    """A server whose structured content wraps the value its text gives (as SDK servers do for non-objects)."""

    def __init__(self, text: str) -> None:
        self.result = CallToolResult(content=[TextContent(type="text", text=text)], structured_content={"result": 1})

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        return self.result

    async def get_state(self) -> dict[str, Any]:
        return {}


async def test_a_replayed_call_is_read_as_the_agent_reads_it() -> None:
    # the replay used to judge the structured content (here without a success field: failed) while the agent's
    # transcript held the text; now both read the text, so the reference and the agent's call agree
    for text, ok in (('{"success": true, "data": [1]}', True), ('{"success": false, "error": "sold out"}', False)):
        server = _WrappingServer(text)

        @asynccontextmanager
        async def episode(state: Any, server: _WrappingServer = server) -> AsyncIterator[_WrappingServer]:
            yield server

        made, _, reasons = await replay_calls([ToolCall(tool="buy")], {}, episode)  # type: ignore[arg-type]
        agent = tool_result_message(ToolCallRequest(id="c1", name="buy"), server.result)
        assert made[0].ok is ok and made[0].result_text == agent.content == text
        assert reasons == ([] if ok else ['call 1 buy({}) failed: success is False: sold out'])


class _CountingShop(FakeShopEpisode):
    """The shop, counting the admin requests a replay makes; `final_state` reads and closes, as a launched
    episode's does."""

    def __init__(self, state: dict[str, Any], closing: bool) -> None:
        super().__init__(state)
        self.reads: list[str] = []
        if closing:
            self.final_state = self._final_state

    async def get_state(self) -> dict[str, Any]:
        self.reads.append("get_state")
        return await super().get_state()

    async def _final_state(self, like: Any = None) -> dict[str, Any]:
        self.reads.append("final_state")
        return await super().get_state()


@pytest.mark.parametrize("closing", [False, True])
async def test_a_replay_reads_the_state_once_when_no_turn_ends_before_its_first_call(closing: bool) -> None:
    opened: list[_CountingShop] = []

    @asynccontextmanager
    async def factory(state: Any) -> AsyncIterator[_CountingShop]:
        opened.append(_CountingShop(state, closing))
        yield opened[-1]

    snapshots: list[Any] = []
    _, final, reasons = await replay_calls(CANCEL_BOTH, SHOP, factory, checkpoints=[1],  # type: ignore[arg-type]
                                           snapshots=snapshots)
    assert reasons == [] and final is not None and statuses(final) == ("cancelled", "cancelled")
    assert [statuses(s) for s in snapshots] == [("cancelled", "pending")]
    # the turn's end, then the last state: through the request that also closes the episode when it has one
    assert opened[0].reads == ["get_state", "final_state" if closing else "get_state"]

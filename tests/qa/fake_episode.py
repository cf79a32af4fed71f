"""Fixture: a tiny in-process stand-in for a server episode (a shop with orders), for gate tests.

It follows the generated servers' conventions: tools return {"success": ...} dicts as structured content,
a failed call leaves the state unchanged, an unknown tool is an is_error result.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.types import CallToolResult, TextContent


class FakeShopEpisode:
    """Tools: get_order(order_id), cancel_order(order_id), add_note(order_id, text)."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = copy.deepcopy(state)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        method = getattr(self, f"_tool_{name}", None)
        if method is None:
            return CallToolResult(content=[TextContent(type="text", text=f"Unknown tool: {name}")], is_error=True)
        value = method(**arguments)
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(value))], structured_content=value)

    async def get_state(self) -> dict[str, Any]:
        return copy.deepcopy(self.state)

    def _tool_get_order(self, order_id: str) -> dict[str, Any]:
        order = self.state["orders"].get(order_id)
        return {"success": True, "data": order} if order else {"success": False, "error": "no such order"}

    def _tool_cancel_order(self, order_id: str) -> dict[str, Any]:
        order = self.state["orders"].get(order_id)
        if order is None:
            return {"success": False, "error": f"order {order_id} not found"}
        order["status"] = "cancelled"
        return {"success": True, "message": f"order {order_id} cancelled"}

    def _tool_add_note(self, order_id: str, text: str) -> dict[str, Any]:
        self.state["notes"].append({"order_id": order_id, "text": text, "author": "agent"})
        return {"success": True, "message": "note added"}


@asynccontextmanager
async def fake_shop_episode(initial_state: dict[str, Any]) -> AsyncIterator[FakeShopEpisode]:
    """Episode factory with the signature the gate expects."""
    yield FakeShopEpisode(initial_state)


@asynccontextmanager
async def broken_episode(initial_state: dict[str, Any]) -> AsyncIterator[FakeShopEpisode]:
    """An episode factory whose server cannot start."""
    raise ConnectionError("server exited with code 1")
    yield FakeShopEpisode(initial_state)  # pragma: no cover

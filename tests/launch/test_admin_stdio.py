"""The stdio admin requests of a generated server: read the state and reset it, only with the token."""

from __future__ import annotations

import sys

import pytest
from mcp import Client, MCPError, StdioServerParameters

from envscaler_mcp.launch import resolve_target
from envscaler_mcp.launch.episodes import AdminGetState, AdminParams, AdminReset, AdminResult, stdio_get_state
from tests.render.fixture_env import DEFAULT_STATE, scenarios, skeleton

pytestmark = pytest.mark.anyio


async def test_get_state_and_reset_over_stdio() -> None:
    target = resolve_target(skeleton(), scenarios())
    params = StdioServerParameters(command=sys.executable, args=["-m", target.package], cwd=str(target.path),
                                   env={"PYTHONPATH": str(target.path), "ENVSCALER_ADMIN_TOKEN": "tok"})
    async with Client(params) as client:
        assert await stdio_get_state(client, "tok") == DEFAULT_STATE
        await client.call_tool("remove_item", {"item_id": "i1"})
        assert "i1" not in (await stdio_get_state(client, "tok"))["items"]
        reset = AdminReset(params=AdminParams(token="tok", scenario_id=scenarios()[1].id))
        await client.session.send_request(reset, AdminResult)
        assert await stdio_get_state(client, "tok") == scenarios()[1].initial_state
        await client.session.send_request(AdminReset(params=AdminParams(token="tok", state={"counter": 7})),
                                          AdminResult)
        assert (await stdio_get_state(client, "tok"))["counter"] == 7
        for token in ("wrong", None):
            with pytest.raises(MCPError, match="refused"):
                await client.session.send_request(AdminGetState(params=AdminParams(token=token)), AdminResult)
        with pytest.raises(MCPError, match="unknown scenario"):
            await client.session.send_request(AdminReset(params=AdminParams(token="tok", scenario_id="sc-x")),
                                              AdminResult)
        names = [t.name for t in (await client.list_tools()).tools]
        assert not any("admin" in n for n in names)

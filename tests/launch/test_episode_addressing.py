"""Who can address an episode on an HTTP server: attempts to reach another episode, proven by its state.

The harness drives every episode through one shared client on /admin/mcp, each request naming its episode
in `_meta`. Only the admin plane (token) may name episodes, only episodes it created; an episode's own
endpoint ignores `_meta`; tool arguments never route.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from envscaler_mcp._json import ParsedState
from envscaler_mcp.launch import launch_server
from envscaler_mcp.launch.episodes import CREATE_META_KEY, EPISODE_META_KEY, RoutedClient
from envscaler_mcp.launch.servers import HttpServer
from tests.render.fixture_env import scenarios, skeleton

pytestmark = pytest.mark.anyio

ORDER = {"item_id": "i1", "quantity": 1}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def http() -> AsyncIterator[HttpServer]:
    async with launch_server(skeleton(), "http", scenarios=scenarios(), isolation=False) as server:
        assert isinstance(server, HttpServer)
        yield server


def _state() -> dict[str, Any]:
    return copy.deepcopy(scenarios()[0].initial_state)


async def _ids(http: HttpServer) -> list[str]:
    response = await http.admin.get("/admin/episodes")
    return sorted(e["episode_id"] for e in response.json()["episodes"])


async def _raw_call(url: str, meta: dict[str, Any] | None, headers: dict[str, str] | None = None) -> Any:
    """place_order on `url` with a client of its own (no admin token unless given)."""
    async with httpx2.AsyncClient(headers=headers or {}) as raw, \
            Client(streamable_http_client(url, http_client=raw, terminate_on_close=False)) as client:
        return await client.call_tool("place_order", ORDER, meta=meta)  # type: ignore[arg-type]


async def test_episode_ids_are_long_and_minted_by_the_admin_plane(http: HttpServer) -> None:
    created = [await http.create_episode(_state(), None) for _ in range(3)]
    ids = [c["episode_id"] for c in created]
    assert len(set(ids)) == 3 and all(len(i) == 32 and int(i, 16) >= 0 for i in ids)  # 128 random bits
    for i in ids:
        await http.admin.delete(f"/admin/episodes/{i}")


async def test_an_episode_endpoint_ignores_meta_naming_another_episode(http: HttpServer) -> None:
    a = await http.create_episode(_state(), None)
    b = await http.create_episode(_state(), None)
    result = await _raw_call(http.url + a["path"], {EPISODE_META_KEY: b["episode_id"]})
    assert not result.is_error
    assert await http.read_state(b["episode_id"]) == _state()  # B untouched
    assert await http.read_state(a["episode_id"]) != _state()  # the call landed in A, the endpoint's episode


@pytest.mark.parametrize("headers", [None, {"Authorization": "Bearer wrong"}], ids=["no-token", "wrong-token"])
async def test_the_shared_endpoint_needs_the_admin_token(http: HttpServer, headers: dict[str, str] | None) -> None:
    b = await http.create_episode(_state(), None)
    with pytest.raises(Exception):  # noqa: B017 - refused at the HTTP layer (401) before any MCP exchange
        await _raw_call(http.url + "/admin/mcp", {EPISODE_META_KEY: b["episode_id"]}, headers)
    assert await http.read_state(b["episode_id"]) == _state()
    async with httpx2.AsyncClient(headers=headers or {}) as raw:
        assert (await raw.post(http.url + "/admin/mcp", json={})).status_code == 401


@pytest.mark.parametrize("named", [None, "default", "0" * 32, 7], ids=["unnamed", "default", "unknown", "not-a-str"])
async def test_the_shared_endpoint_reaches_only_created_episodes(http: HttpServer, named: Any) -> None:
    assert http.shared is not None
    before_ids = await _ids(http)
    before_default = await http.read_state("default")
    meta = None if named is None else {EPISODE_META_KEY: named}
    with pytest.raises(MCPError, match="name an existing episode"):
        await http.shared.call_tool("place_order", ORDER, meta=meta)  # type: ignore[arg-type]
    assert await _ids(http) == before_ids  # nothing created
    assert await http.read_state("default") == before_default


async def test_an_episode_is_created_by_its_first_request(http: HttpServer) -> None:
    """No POST of its own: the first call on /admin/mcp creates the episode (`envscaler/create` in `_meta`); a
    state read before any call creates it with a POST naming the same id."""
    async with http.episode(_state()) as called, http.episode(_state()) as read:
        assert isinstance(called.client, RoutedClient) and not called.client.created
        assert called.episode_id not in await _ids(http) and read.episode_id not in await _ids(http)
        await called.call_tool("place_order", ORDER)
        assert called.episode_id in await _ids(http) and await called.get_state() != _state()
        assert await read.get_state() == _state() and read.episode_id in await _ids(http)
    assert called.episode_id not in await _ids(http) and read.episode_id not in await _ids(http)


@pytest.mark.parametrize("create", [{"state_file": None}, {"token": "guess"}, "token"],
                         ids=["no-token", "wrong-token", "not-an-object"])
async def test_creating_on_the_shared_endpoint_needs_the_token_in_meta(http: HttpServer, create: Any) -> None:
    assert http.shared is not None and http.state_files is not None
    if isinstance(create, dict):
        create = {**create, "state_file": http.state_files.name_for(_state())}
    before = await _ids(http)
    with pytest.raises(MCPError, match="creation refused"):
        await http.shared.call_tool("place_order", ORDER,  # type: ignore[arg-type]
                                    meta={EPISODE_META_KEY: "cd" * 16, CREATE_META_KEY: create})
    assert await _ids(http) == before


@pytest.mark.parametrize("chosen", ["default", "CD" * 16, "cd" * 15, 7])
async def test_an_id_of_the_callers_is_32_hex_digits(http: HttpServer, chosen: Any) -> None:
    before = await _ids(http)
    response = await http.admin.post("/admin/episodes", json={"episode_id": chosen})
    assert response.status_code == 400 and "32 hex digits" in response.json()["error"]
    assert await _ids(http) == before


async def test_a_closed_episode_cannot_be_named_again(http: HttpServer) -> None:
    async with http.episode(_state()) as ep:
        episode_id = ep.episode_id
    assert http.shared is not None
    with pytest.raises(MCPError, match="name an existing episode"):
        await RoutedClient(http.shared, episode_id).call_tool("place_order", ORDER)
    assert episode_id not in await _ids(http)


async def test_tool_arguments_do_not_route(http: HttpServer) -> None:
    b = await http.create_episode(_state(), None)
    async with http.episode(_state()) as ep:
        result = await ep.call_tool("place_order", {**ORDER, "_meta": {EPISODE_META_KEY: b["episode_id"]}})
        assert result.is_error  # an argument the schema does not know
        await ep.call_tool("place_order", ORDER)
        assert await ep.get_state() != _state()
    assert await http.read_state(b["episode_id"]) == _state()


async def test_episodes_on_the_shared_client_are_isolated(http: HttpServer) -> None:
    async with http.episode(_state()) as one, http.episode(_state()) as two:
        assert isinstance(one.client, RoutedClient) and one.client.shared is two.client.shared
        await one.call_tool("place_order", ORDER)
        assert await two.get_state() == _state()
        assert (await one.get_state())["items"]["i1"]["stock"] == _state()["items"]["i1"]["stock"] - 1


async def test_the_final_state_keeps_the_bytes_the_server_sent(http: HttpServer) -> None:
    async with http.episode(_state()) as ep:
        await ep.call_tool("place_order", ORDER)
        state = await ep.get_state()
        raw = (await http.admin.get(f"/admin/episodes/{ep.episode_id}/state")).content
    assert isinstance(state, ParsedState) and raw == b'{"state": ' + state.encoded + b"}"
    assert state.encoded == json.dumps(state, ensure_ascii=False).encode("utf-8")


async def test_the_sdks_own_client_and_the_harness_transport_get_the_same_answers(http: HttpServer) -> None:
    """Any Streamable HTTP client still works: the SDK's `streamable_http_client` on an episode's endpoint sees the
    tools, the call's result and the final state that the harness's transport (launch/loopback_mcp.py) sees on
    another episode of the same state."""
    other = await http.create_episode(_state(), None)
    async with httpx2.AsyncClient() as raw, \
            Client(streamable_http_client(http.url + other["path"], http_client=raw, terminate_on_close=False)) as sdk:
        sdk_tools = (await sdk.list_tools()).tools
        sdk_result = await sdk.call_tool("place_order", ORDER)
    sdk_state = await http.close_with_state(other["episode_id"])
    async with http.episode(_state()) as ep:
        tools = await ep.list_tools()
        result = await ep.call_tool("place_order", ORDER, text_only=False)
        state = await ep.get_state()
    assert [t.model_dump() for t in tools] == [t.model_dump() for t in sdk_tools]
    assert result.model_dump() == sdk_result.model_dump() and not result.is_error
    assert dict(state) == dict(sdk_state) != _state()  # the call changed each episode's state the same way

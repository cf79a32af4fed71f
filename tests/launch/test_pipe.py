"""The pipe transport: one server process per environment over its stdin/stdout, every episode named per
request. Shown by effect: each episode's state, what another episode can reach, what a closed episode
answers, and that printing environment code does not break the protocol. Also: a stdio server without the
admin token (a desktop client's) never reads `_meta`."""

from __future__ import annotations

import copy
import json
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client

from envscaler_mcp._outcome import read_result
from envscaler_mcp.errors import ServerStartError
from envscaler_mcp.launch import launch_server, resolve_target
from envscaler_mcp.launch.episodes import CREATE_META_KEY, EPISODE_META_KEY, AdminResult, RoutedClient
from envscaler_mcp.launch.pipe import PipeParams, PipeServer, _Create, _GetState
from tests.render.fixture_env import scenarios, skeleton

pytestmark = pytest.mark.anyio

ORDER = {"item_id": "i1", "quantity": 1}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _printing() -> Any:
    """The fixture environment with a tool that prints to stdout and stderr before answering."""
    sk = skeleton()
    body = 'return {"success": True, "data": list(self.items.values())}'
    assert body in sk.class_source
    noisy = 'print("noise on stdout"); print("{\\"jsonrpc\\": \\"2.0\\", \\"id\\": 1}")\n        ' + body
    return sk.model_copy(update={"class_source": sk.class_source.replace(body, noisy, 1)})


@pytest.fixture(scope="module")
async def pipe() -> AsyncIterator[PipeServer]:
    async with launch_server(_printing(), "pipe", scenarios=scenarios(), isolation=False) as server:
        assert isinstance(server, PipeServer) and server.pid
        yield server


def _state() -> dict[str, Any]:
    return copy.deepcopy(scenarios()[0].initial_state)


async def test_episodes_are_isolated_and_the_final_read_closes(pipe: PipeServer) -> None:
    async with pipe.episode(_state()) as a, pipe.episode(_state()) as b:
        assert a.episode_id != b.episode_id and len(a.episode_id) == 32
        result = await a.call_tool("place_order", ORDER)
        assert not result.is_error
        state_a, state_b = await a.get_state(), await b.get_state()
        assert len(state_a["orders"]) == len(_state()["orders"]) + 1
        assert state_b == _state()  # untouched by a's call
        final = await a.final_state()
        assert final == state_a
        with pytest.raises(ServerStartError, match="unknown episode"):
            await a.get_state()  # closed by the final read
        assert isinstance(a.client, RoutedClient)
        with pytest.raises(MCPError):
            await a.client.call_tool("place_order", ORDER)  # a closed episode cannot be called
        assert await b.get_state() == _state()


async def test_printing_tools_do_not_corrupt_the_pipe(pipe: PipeServer) -> None:
    async with pipe.episode(_state()) as ep:
        for _ in range(3):
            result = await ep.call_tool("list_items", {})
            assert not result.is_error and read_result(result).value["success"] is True
        assert not (await ep.call_tool("place_order", ORDER)).is_error


async def test_only_created_episodes_can_be_named(pipe: PipeServer) -> None:
    async with pipe.episode(_state()) as ep:
        assert pipe.client is not None
        for named in ("default", "0" * 32, 7, ep.episode_id[:-1]):
            with pytest.raises(MCPError, match="name an existing episode"):
                await pipe.client.call_tool("place_order", ORDER, meta={EPISODE_META_KEY: named})  # type: ignore[dict-item]
        # unnamed: the process's default episode (a stdio server's one episode), never a created one
        assert not (await pipe.client.call_tool("place_order", ORDER)).is_error
        await pipe.client.call_tool("place_order", {**ORDER, "episode_id": ep.episode_id})  # arguments never route
        assert await ep.get_state() == _state()  # nothing reached it


async def _exists(pipe: PipeServer, episode_id: str) -> bool:
    try:
        await pipe._admin(_GetState(params=pipe._params(episode_id=episode_id)))
    except ServerStartError as exc:
        assert "unknown episode" in str(exc)
        return False
    return True


async def test_an_episode_is_created_by_its_first_request(pipe: PipeServer) -> None:
    """No admin round trip of its own: the first call creates the episode (from the state file its `_meta`
    names) and runs in it; a state read before any call creates it first."""
    async with pipe.episode(_state()) as called, pipe.episode(_state()) as read:
        assert isinstance(called.client, RoutedClient) and isinstance(read.client, RoutedClient)
        assert not called.client.created and not await _exists(pipe, called.episode_id)
        assert not (await called.call_tool("place_order", ORDER)).is_error
        assert called.client.created and await _exists(pipe, called.episode_id)
        assert len((await called.get_state())["orders"]) == len(_state()["orders"]) + 1
        assert not await _exists(pipe, read.episode_id)
        assert await read.get_state() == _state()  # created by the read, at its initial state
        assert read.client.created and await _exists(pipe, read.episode_id)
        assert await read.final_state() == _state()
        assert not await _exists(pipe, read.episode_id)  # the final read closed it
    assert not await _exists(pipe, called.episode_id)  # closed on leaving


async def test_creating_on_a_first_request_needs_the_token_and_a_new_id(pipe: PipeServer) -> None:
    assert pipe.client is not None
    create = {"token": pipe.token, "state_file": pipe.state_files.name_for(_state())}
    fresh = "ab" * 16
    for named, meta, error in [(fresh, {**create, "token": "guess"}, "creation refused"),
                               (fresh, {"state_file": create["state_file"]}, "creation refused"),
                               (fresh, "not an object", "creation refused"),
                               ("default", create, "could not create the episode|name an existing episode"),
                               ("AB" * 16, create, "could not create the episode"),
                               ("ab" * 15, create, "could not create the episode"),
                               (fresh, {**create, "state_file": "../elsewhere.json"}, "could not create the episode")]:
        with pytest.raises(MCPError, match=error):
            await pipe.client.call_tool("place_order", ORDER,
                                        meta={EPISODE_META_KEY: named, CREATE_META_KEY: meta})  # type: ignore[dict-item]
        assert named == "default" or not await _exists(pipe, named)  # the default episode is the server's own
    async with pipe.episode(_state()) as ep:
        await ep.get_state()
        # an existing episode is named, never built again
        await pipe.client.call_tool("place_order", ORDER, meta={EPISODE_META_KEY: ep.episode_id, CREATE_META_KEY: create})  # type: ignore[dict-item]
        assert len((await ep.get_state())["orders"]) == len(_state()["orders"]) + 1


async def test_a_first_request_the_server_cannot_create_is_a_server_error(pipe: PipeServer) -> None:
    async with pipe.episode(_state()) as ep:
        assert isinstance(ep.client, RoutedClient)
        ep.client._create = {"token": pipe.token, "state_file": "missing.json"}
        with pytest.raises(ServerStartError, match="did not create the episode"):
            await ep.call_tool("place_order", ORDER)


async def test_a_stdio_server_without_the_token_never_reads_meta() -> None:
    """A desktop client's server (no ENVSCALER_ADMIN_TOKEN): `_meta` naming an episode changes nothing about
    which episode is served, and the admin requests are refused."""
    target = resolve_target(skeleton(), scenarios())
    env = {k: v for k, v in os.environ.items() if k != "ENVSCALER_ADMIN_TOKEN"}
    env["PYTHONPATH"] = str(target.path)
    params = StdioServerParameters(command=sys.executable, args=["-m", target.package], cwd=str(target.path),
                                   env=env)
    async with Client(stdio_client(params)) as client:

        async def orders() -> int:
            text = (await client.read_resource("state://current")).contents[0].text  # type: ignore[union-attr]
            return len(json.loads(text)["orders"])

        before = await orders()
        named = await client.call_tool("place_order", ORDER, meta={EPISODE_META_KEY: "0" * 32})  # type: ignore[arg-type]
        assert not named.is_error  # served by its one episode, as if `_meta` were absent
        assert await orders() == before + 1
        with pytest.raises(MCPError, match="admin plane disabled"):
            await client.session.send_request(_Create(params=PipeParams(token="guess")), AdminResult)

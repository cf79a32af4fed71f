"""Episodes start from state files the server reads itself: each distinct state is written once, the admin
API takes a file name (a content hash) and nothing else, and the stdio server reads its state file directly."""

from __future__ import annotations

import json

import pytest

from envscaler_mcp.launch import launch_server
from envscaler_mcp.launch.servers import HttpServer
from envscaler_mcp.launch.stdio import StdioServer
from tests.render.fixture_env import scenarios, skeleton

pytestmark = pytest.mark.anyio


async def test_http_episodes_share_one_state_file_and_stay_isolated() -> None:
    state = scenarios()[0].initial_state
    async with launch_server(skeleton(), "http", scenarios=()) as server:
        assert isinstance(server, HttpServer) and server.state_files is not None
        folder = server.state_files.folder
        async with server.episode(state) as first, server.episode(dict(state)) as second:
            assert await first.get_state() == state
            assert await second.get_state() == state
            files = sorted(folder.iterdir())
            assert len(files) == 1 and json.loads(files[0].read_bytes()) == state  # one file for equal states
            added = await first.call_tool("add_item", {"item_id": "zz", "name": "new", "price": 1.0})
            assert not added.is_error
            assert "zz" in (await first.get_state())["items"]
            assert "zz" not in (await second.get_state())["items"]  # the server's parse is not shared state
        async with server.episode(state) as third:
            assert await third.get_state() == state


async def test_admin_api_opens_only_named_state_files() -> None:
    async with launch_server(skeleton(), "http", scenarios=()) as server:
        assert isinstance(server, HttpServer)
        before = (await server.admin.get("/admin/episodes")).json()["episodes"]
        for name in ("../manifest.json", "/etc/passwd", "0123456789abcdef.txt", "0" * 32 + ".json"):
            response = await server.admin.post("/admin/episodes", json={"state_file": name})
            assert response.status_code == 400, name
        assert (await server.admin.get("/admin/episodes")).json()["episodes"] == before  # none was created


async def test_stdio_server_reads_its_state_file() -> None:
    """A process started for its episode (none started ahead) reads its state from a file, one per state;
    processes started ahead get theirs through the admin reset instead (tests/harness/test_warm_sessions.py)."""
    state = scenarios()[1].initial_state
    async with launch_server(skeleton(), "stdio", scenarios=(), stdio_prestart=0) as server:
        assert isinstance(server, StdioServer)
        async with server.episode(state) as ep:
            assert await ep.get_state() == state
        async with server.episode(state) as ep:
            assert await ep.get_state() == state
        assert len(list(server.state_files.folder.glob("*.json"))) == 1


async def test_a_forked_episode_parses_its_state_file_and_refuses_one_that_is_no_state() -> None:
    """With a process per episode the state file's bytes are parsed in the episode's own process, not in the
    zygote: a file that is not a JSON object (or not JSON) refuses that episode with why, and the zygote goes on
    forking episodes from good files, each at its state and isolated from the others."""
    state = scenarios()[0].initial_state
    async with launch_server(skeleton(), "http", scenarios=(), episode_process="fork") as server:
        assert isinstance(server, HttpServer) and server.state_files is not None
        folder = server.state_files.folder
        folder.mkdir(parents=True, exist_ok=True)
        for name, text, why in (("a" * 32 + ".json", b"[1, 2]", "not a JSON object"),
                                ("b" * 32 + ".json", b"{not json", "Expecting property name")):
            (folder / name).write_bytes(text)
            response = await server.admin.post("/admin/episodes", json={"state_file": name})
            assert response.status_code == 400 and why in response.text, response.text
            assert "could not create the episode" in response.text
        async with server.episode(state) as first, server.episode(state) as second:
            assert not (await first.call_tool("add_item", {"item_id": "zz", "name": "new", "price": 1.0})).is_error
            assert "zz" in (await first.get_state())["items"]
            assert await second.get_state() == state

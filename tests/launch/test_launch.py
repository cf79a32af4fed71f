"""launch_server / launch_external: targets, episodes, lifecycle and failures."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters

from envscaler_mcp._outcome import read_result
from envscaler_mcp.errors import ServerStartError, UsageError
from envscaler_mcp.launch import NoAdminPlane, launch_external, launch_server, resolve_target
from envscaler_mcp.launch.servers import HttpServer
from tests.render.fixture_env import scenarios, skeleton

pytestmark = pytest.mark.anyio


async def test_skeleton_target_in_memory_with_timeout() -> None:
    async with launch_server(skeleton(), "memory", scenarios=scenarios(), call_timeout=0.3) as server:
        async with server.episode(scenario_id=scenarios()[1].id) as ep:
            assert list((await ep.get_state())["items"]) == ["i9"]
            slow = await ep.call_tool("break_things", {"mode": "loop"})
            assert slow.is_error and "longer than 0.3 s" in slow.content[0].text  # type: ignore[union-attr]


async def test_http_server_lifecycle_and_episode_cleanup() -> None:
    async with launch_server(skeleton(), "http", scenarios=scenarios(), max_memory_mb=4096) as server:
        assert isinstance(server, HttpServer) and server.pid
        limits = Path(f"/proc/{server.pid}/limits")
        if limits.exists():
            line = next(x for x in limits.read_text().splitlines() if x.startswith("Max address space"))
            assert str(4096 * 1024 * 1024) in line
        async with server.episode({"items": {}}) as ep:
            await ep.call_tool("list_items", {})  # an episode is created by its first use
            listed = (await server.admin.get("/admin/episodes")).json()["episodes"]
            assert ep.episode_id in [e["episode_id"] for e in listed]
        listed = (await server.admin.get("/admin/episodes")).json()["episodes"]
        assert [e["episode_id"] for e in listed] == ["default"]
        for first_use in ("call_tool", "get_state"):
            with pytest.raises(ServerStartError, match="unknown scenario"):
                async with server.episode(scenario_id="sc-nope") as ep:
                    await (ep.call_tool("list_items", {}) if first_use == "call_tool" else ep.get_state())
        pid = server.pid
    # the server process is gone: ended (a zombie is dead, only not yet reaped) by a moment after the launcher
    # returns; waited for rather than slept on, as on a loaded machine that moment can be long
    with anyio.fail_after(30):
        while _state(pid) not in ("gone", "Z"):
            await anyio.sleep(0.05)


async def test_http_admin_api_shapes() -> None:
    async with launch_server(skeleton(), "http", scenarios=scenarios()) as server:
        assert isinstance(server, HttpServer)
        admin = server.admin
        created = await admin.post("/admin/episodes", json={"scenario_id": scenarios()[0].id})
        assert created.status_code == 201
        body = created.json()
        assert body["path"] == f"/episodes/{body['episode_id']}/mcp"
        state = (await admin.get(f"/admin/episodes/{body['episode_id']}/state")).json()["state"]
        assert state == scenarios()[0].initial_state
        assert (await admin.post("/admin/episodes", content=b"{not json")).status_code == 400
        assert (await admin.post("/admin/episodes", json={"state": [1]})).status_code == 400
        assert (await admin.delete("/admin/episodes/default")).status_code == 400
        assert (await admin.delete(f"/admin/episodes/{body['episode_id']}")).status_code == 200
        assert (await admin.get(f"/admin/episodes/{body['episode_id']}/state")).status_code == 404
        async with httpx2.AsyncClient(base_url=server.url) as raw:
            gone = await raw.post(body["path"], json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert gone.status_code == 404
            assert (await raw.get("/healthz")).json()["env"] == "fixture_shop"


async def test_stdio_start_failure_is_reported() -> None:
    async with launch_server(skeleton(), "stdio", scenarios=scenarios()) as server:
        with pytest.raises(ServerStartError, match="unknown scenario"):
            async with server.episode(scenario_id="sc-nope"):
                pass


async def test_external_servers_have_no_admin_plane() -> None:
    target = resolve_target(skeleton(), scenarios())
    command = [sys.executable, "-m", target.package]
    async with launch_external(command=command, env={"PYTHONPATH": str(target.path)}) as server:
        with pytest.raises(NoAdminPlane):
            async with server.episode({"items": {}}):
                pass
        async with server.episode() as ep:
            assert len(await ep.list_tools()) == len(skeleton().tools)
            with pytest.raises(NoAdminPlane, match="no admin plane"):
                await ep.get_state()
    async with launch_server(target.path, "http") as http:
        assert isinstance(http, HttpServer)
        async with launch_external(url=http.url + "/mcp") as server, server.episode() as ep:
            result = await ep.call_tool("get_item", {"item_id": "i1"})
            assert read_result(result).value["data"]["name"] == "Kettle"  # type: ignore[index]
            # an external server is sent nothing of ours in `_meta`: a generated one answers it in full
            assert result.structured_content == read_result(result).value
    with pytest.raises(UsageError):
        async with launch_external():
            pass


def test_unknown_targets_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown environment"):
        resolve_target("no_such_env_anywhere")
    with pytest.raises(UsageError):
        resolve_target(tmp_path)


async def test_serve_command_runs_the_server_over_stdio() -> None:
    target = resolve_target(skeleton(), scenarios())
    repo = Path(__file__).resolve().parents[2]
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "envscaler_mcp", "serve", str(target.path),
                                         "--scenario", scenarios()[1].id],
                                   env={"PYTHONPATH": str(repo)}, cwd=str(repo))
    async with Client(params) as client:
        result = await client.call_tool("list_items", {})
    assert [i["item_id"] for i in read_result(result).value["data"]] == ["i9"]  # type: ignore[index]


def test_bundled_env_uses_generated_servers_when_current(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from envscaler_mcp.catalog.paths import generated_servers_dir
    from envscaler_mcp.catalog.store import list_env_ids

    if "ecommerce_orders" not in list_env_ids():
        pytest.skip("the bundled catalog has no ecommerce_orders")
    monkeypatch.setenv("ENVSCALER_MCP_CACHE", str(tmp_path))
    assert resolve_target("ecommerce_orders").path == (generated_servers_dir() / "ecommerce_orders").resolve()
    # with other scenarios the committed server is not current: it is rendered into the cache instead
    other = resolve_target("ecommerce_orders", scenarios=[])
    assert other.path.parent == tmp_path / "servers" and other.package == "ecommerce_orders_mcp"


async def test_a_crashed_http_server_is_reported() -> None:
    async with launch_server(skeleton(), "http", scenarios=scenarios()) as server:
        assert isinstance(server, HttpServer) and server.pid
        os.kill(server.pid, 9)
        await anyio.sleep(0.2)
        with pytest.raises(ServerStartError, match="did not answer"):
            async with server.episode() as ep:
                await ep.get_state()  # its first use creates it


async def test_the_server_in_its_pid_namespace_ends_with_the_process_the_launcher_started() -> None:
    """With a PID namespace the launched process only waits for the server (its child, PID 1 of the new
    namespace): killing it outright takes the server with it, so no server is left behind."""
    async with launch_server(skeleton(), "http", scenarios=scenarios()) as server:
        assert isinstance(server, HttpServer) and server.pid
        status = {line.split(":")[0]: line.split()[1:] for line in
                  Path(f"/proc/{server.pid}/status").read_text().splitlines()}
        waiter = int(status["PPid"][0])
        assert waiter != os.getpid(), "no waiting parent: the server did not get a PID namespace"
        assert status["NSpid"] == [str(server.pid), "1"]  # PID 1 of its own namespace
        os.kill(waiter, 9)
        with anyio.fail_after(30):
            while Path(f"/proc/{server.pid}").exists() and "Z" not in _state(server.pid):
                await anyio.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


async def test_serve_command_over_http_serves_a_socket_it_bound_for_the_confined_server() -> None:
    target = resolve_target(skeleton(), scenarios())
    repo = Path(__file__).resolve().parents[2]
    process = await anyio.open_process(
        [sys.executable, "-m", "envscaler_mcp", "serve", str(target.path), "--http", "--port", "0"],
        env={"PYTHONPATH": str(repo), "PATH": os.defpath, "OPENAI_API_KEY": "sk-not-for-servers"},
        cwd=str(repo), stdout=None)
    try:
        assert process.stderr is not None
        seen = b""
        with anyio.fail_after(60):
            while b"/mcp" not in seen:
                seen += await process.stderr.receive()
        url = seen.decode().split(" on ", 1)[1].split("/mcp", 1)[0]
        async with httpx2.AsyncClient() as http:
            health = (await http.get(f"{url}/healthz")).json()
        assert health["ok"] is True
    finally:
        process.kill()
        await process.wait()
        await process.aclose()


def _descendants(pid: int) -> set[int]:
    """Every process below `pid` (children of each of its threads, recursively)."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = list(Path(f"/proc/{parent}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                children = {int(c) for c in (task / "children").read_text().split()}
            except OSError:
                continue
            todo.extend(children - found)
            found |= children
    return found


async def test_the_default_episode_is_built_only_when_something_uses_it() -> None:
    """With a process per episode, a server used only through episodes the admin plane created forks no process
    for the default episode; the first plain client on /mcp gets it (a process forked then), as before."""
    async with launch_server(skeleton(), "http", scenarios=scenarios(), episode_process="fork",
                             isolation=False) as server:
        assert isinstance(server, HttpServer) and server.pid
        async with server.episode({"items": {}}) as a:
            assert not (await a.call_tool("add_item", {"item_id": "x1", "name": "Mug", "price": 2.0})).is_error
            alone = _descendants(server.pid)  # the zygote and episode a
            async with server.episode({"items": {}}) as b:
                assert not (await b.call_tool("list_items", {})).is_error
                per_episode = len(_descendants(server.pid) - alone)
            assert per_episode >= 1
            with anyio.fail_after(60):  # b's processes end on their own once it is closed
                while _descendants(server.pid) != alone:
                    await anyio.sleep(0.05)
            listed = (await server.admin.get("/admin/episodes")).json()["episodes"]
            assert {e["episode_id"] for e in listed} == {"default", a.episode_id}  # listed, not built
            assert (await server.admin.get("/healthz")).json()["episodes"] == 2
            async with launch_external(url=server.url + "/mcp") as plain, plain.episode() as ep:
                kettle = await ep.call_tool("get_item", {"item_id": "i1"})
                assert read_result(kettle).value["data"]["name"] == "Kettle"  # type: ignore[index]
                assert not (await ep.call_tool("remove_item", {"item_id": "i1"})).is_error
            assert len(_descendants(server.pid) - alone) == per_episode  # built now: its process forked
            default = (await server.admin.get("/admin/episodes/default/state")).json()["state"]
            assert "i1" not in default["items"] and default["items"]  # the default state, changed by the client
            assert list((await a.get_state())["items"]) == ["x1"]

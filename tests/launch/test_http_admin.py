"""The HTTP admin API's refusals, tested on the ASGI app in process: no token, wrong token, remote client."""

from __future__ import annotations

import importlib
from typing import Any

import httpx2
import pytest

from envscaler_mcp.launch import resolve_target
from envscaler_mcp.launch.memory import import_server_package
from tests.render.fixture_env import scenarios, skeleton

pytestmark = pytest.mark.anyio


def _app(**options: Any) -> Any:
    server = resolve_target(skeleton(), scenarios())
    module = import_server_package(server)
    package = importlib.import_module(f"{module.__name__}.runtime.package")
    env_server = importlib.import_module(f"{module.__name__}.runtime.server").EnvServer(
        package.load_package(server.path / server.package, module.__name__))
    http = importlib.import_module(f"{module.__name__}.runtime.http")
    return http.HttpApp(env_server, **options)


async def _get(app: Any, client_host: str, headers: dict[str, str] | None = None) -> httpx2.Response:
    transport = httpx2.ASGITransport(app=app, client=(client_host, 5555))
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:9") as client:
        return await client.get("/admin/episodes", headers=headers or {})


async def test_admin_is_disabled_without_a_token() -> None:
    response = await _get(_app(admin_token=None), "127.0.0.1", {"Authorization": "Bearer anything"})
    assert response.status_code == 403 and "disabled" in response.json()["error"]


async def test_token_is_required_and_checked() -> None:
    app = _app(admin_token="secret")
    assert (await _get(app, "127.0.0.1")).status_code == 401
    assert (await _get(app, "127.0.0.1", {"Authorization": "Bearer nope"})).status_code == 401
    ok = await _get(app, "127.0.0.1", {"Authorization": "Bearer secret"})
    assert ok.status_code == 200 and ok.json()["episodes"][0]["episode_id"] == "default"


async def test_remote_clients_are_refused_unless_allowed() -> None:
    auth = {"Authorization": "Bearer secret"}
    refused = await _get(_app(admin_token="secret"), "10.1.2.3", auth)
    assert refused.status_code == 403 and "loopback" in refused.json()["error"]
    allowed = await _get(_app(admin_token="secret", allow_remote_admin=True), "10.1.2.3", auth)
    assert allowed.status_code == 200


async def test_routes_answer_as_the_server_contract_says() -> None:
    app = _app(admin_token="secret")
    auth = {"Authorization": "Bearer secret"}
    transport = httpx2.ASGITransport(app=app, client=("127.0.0.1", 5555))
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:9") as client:
        created = await client.post("/admin/episodes", content=b"{}", headers=auth)
        assert created.status_code == 201
        episode_id, path = created.json()["episode_id"], created.json()["path"]
        assert path == f"/episodes/{episode_id}/mcp"
        state = await client.get(f"/admin/episodes/{episode_id}/state/", headers=auth)  # a trailing slash is fine
        assert state.status_code == 200 and state.headers["content-type"] == "application/json"
        assert set(state.json()) == {"state"} and state.json()["state"]
        listed = await client.get("/admin/episodes", headers=auth)
        assert {e["episode_id"] for e in listed.json()["episodes"]} == {"default", episode_id}
        closed = await client.delete(f"/admin/episodes/{episode_id}?state=1", headers=auth)
        assert closed.status_code == 200 and closed.json() == state.json()
        gone = await client.get(f"/admin/episodes/{episode_id}/state", headers=auth)
        assert gone.status_code == 404 and gone.json() == {"error": f"unknown episode '{episode_id}'"}
        assert (await client.post(f"/episodes/{episode_id}/mcp", content=b"{}")).status_code == 404
        default = await client.delete("/admin/episodes/default", headers=auth)
        assert default.status_code == 400 and "cannot be deleted" in default.json()["error"]
        bad = await client.post("/admin/episodes", content=b"{nope", headers=auth)
        assert bad.status_code == 400 and bad.json() == {"error": "request body is not valid JSON"}
        # no route, or not this method: a JSON 404; under /admin only once the admin checks pass
        assert (await client.get("/admin/nope")).status_code == 401
        assert (await client.put("/admin/episodes")).status_code == 401
        nope = await client.get("/admin/nope", headers=auth)
        assert nope.status_code == 404 and nope.json() == {"error": "no admin route GET /admin/nope"}
        put = await client.put("/admin/episodes", headers=auth)
        assert put.status_code == 404 and put.json() == {"error": "no admin route PUT /admin/episodes"}
        unknown = await client.get("/elsewhere")
        assert unknown.status_code == 404 and unknown.json()["error"].startswith("not found: /elsewhere.")
        health = await client.get("/healthz/")
        assert health.status_code == 200 and health.json()["ok"] is True and health.json()["episodes"] == 1


async def test_episodes_of_the_admin_plane_leave_the_default_one_unbuilt() -> None:
    """Creating, reading and closing episodes, listing them, /healthz and a refused delete of the default episode
    never build it, though it is listed and counted; its first read builds it at the default state."""
    app = _app(admin_token="secret")
    auth = {"Authorization": "Bearer secret"}
    transport = httpx2.ASGITransport(app=app, client=("127.0.0.1", 5555))
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:9") as client:
        episode_id = (await client.post("/admin/episodes", content=b"{}", headers=auth)).json()["episode_id"]
        assert (await client.get(f"/admin/episodes/{episode_id}/state", headers=auth)).status_code == 200
        listed = (await client.get("/admin/episodes", headers=auth)).json()["episodes"]
        assert [(e["episode_id"], e["path"], e["calls"]) for e in listed] == [
            ("default", "/mcp", 0), (episode_id, f"/episodes/{episode_id}/mcp", 0)]
        assert (await client.get("/healthz")).json()["episodes"] == 2
        assert (await client.delete("/admin/episodes/default", headers=auth)).status_code == 400
        assert (await client.delete(f"/admin/episodes/{episode_id}", headers=auth)).status_code == 200
        assert list(app.env.episodes) == []  # nothing built the default episode
        assert (await client.get("/healthz")).json()["episodes"] == 1
        default = await client.get("/admin/episodes/default/state", headers=auth)
        assert default.status_code == 200 and default.json()["state"] == app.env.package.default_state
        assert list(app.env.episodes) == ["default"]
        listed = (await client.get("/admin/episodes", headers=auth)).json()["episodes"]
        assert [e["episode_id"] for e in listed] == ["default"]

"""Streamable HTTP: many isolated episodes in one process, each at /episodes/{id}/mcp, plus the REST admin API.

One MCP `Server` serves every episode; this router writes the episode id into the ASGI scope, and
the server's handlers read it back from `ctx.request.scope` (set by the SDK for both protocol eras).
/admin/mcp serves every episode at one endpoint, each request naming its episode in `_meta`: one client
can drive many episodes. It is part of the admin plane (loopback, bearer token), so whoever holds only an
episode's own endpoint cannot name another episode; episode ids are minted by POST /admin/episodes.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
from typing import Any

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .episode import Episode
from .forked import ForkedEpisode
from .server import EPISODE_SCOPE_KEY, ROUTED_SCOPE_KEY, EnvServer, EpisodeRefused

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    """True for loopback addresses and `localhost`."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class HttpApp:
    """ASGI application: MCP endpoints per episode + /admin REST + /healthz."""

    def __init__(self, env_server: EnvServer, *, host: str = "127.0.0.1", admin_token: str | None = None,
                 allow_remote_admin: bool = False) -> None:
        self.env = env_server
        self.admin_token = admin_token
        self.allow_remote_admin = allow_remote_admin
        security = None
        if is_loopback(host):
            security = TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"])
        # JSON responses, not SSE streams: tools never send progress or log notifications mid-call.
        self.manager = StreamableHTTPSessionManager(app=env_server.server, security_settings=security,
                                                    json_response=True)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"].rstrip("/") or "/"
        parts = path.strip("/").split("/")
        if path == "/mcp":
            await self.manager.handle_request({**scope, EPISODE_SCOPE_KEY: "default"}, receive, send)
        elif len(parts) == 3 and parts[0] == "episodes" and parts[2] == "mcp":
            if parts[1] not in self.env.episodes:
                await _json({"error": f"unknown episode '{parts[1]}'"}, 404)(scope, receive, send)
                return
            await self.manager.handle_request({**scope, EPISODE_SCOPE_KEY: parts[1]}, receive, send)
        elif path == "/admin/mcp":
            refusal = self._refusal(Request(scope, receive))
            if refusal is not None:
                await refusal(scope, receive, send)
                return
            await self.manager.handle_request({**scope, ROUTED_SCOPE_KEY: True}, receive, send)
        elif parts[0] == "admin":
            response = await self._admin(Request(scope, receive), parts[1:])
            await response(scope, receive, send)
        elif path == "/healthz":
            await _json({"ok": True, "env": self.env.package.env_id,
                         "episodes": len(self.env.episodes)})(scope, receive, send)
        else:
            await _json({"error": f"not found: {path}. MCP endpoints: /mcp and /episodes/{{id}}/mcp"},
                        404)(scope, receive, send)

    async def _lifespan(self, receive: Any, send: Any) -> None:
        await receive()  # lifespan.startup
        async with self.manager.run():
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
        await send({"type": "lifespan.shutdown.complete"})

    # ---- admin REST ----
    def _refusal(self, request: Request) -> JSONResponse | None:
        client = request.client.host if request.client else ""
        if not self.allow_remote_admin and not is_loopback(client):
            return _json({"error": "admin API refused: only loopback clients may use it "
                                   "(start the server with --allow-remote-admin to change this)"}, 403)
        if not self.admin_token:
            return _json({"error": "admin API disabled: start the server with --admin-token or "
                                   "ENVSCALER_ADMIN_TOKEN"}, 403)
        header = request.headers.get("authorization", "")
        token = header[7:] if header.lower().startswith("bearer ") else ""
        if not token or not hmac.compare_digest(token, self.admin_token):
            return _json({"error": "admin API refused: missing or wrong bearer token"}, 401)
        return None

    async def _admin(self, request: Request, parts: list[str]) -> Response:
        refusal = self._refusal(request)
        if refusal is not None:
            return refusal
        method = request.method
        if parts == ["episodes"] and method == "POST":
            return await self._create(request)
        if parts == ["episodes"] and method == "GET":
            return _json({"episodes": [{"episode_id": e.episode_id, "path": _path(e.episode_id),
                                        "created_at": e.created_at, "calls": e.calls}
                                       for e in self.env.episodes.values()]})
        if len(parts) >= 2 and parts[0] == "episodes":
            episode = self.env.episodes.get(parts[1])
            if episode is None:
                return _json({"error": f"unknown episode '{parts[1]}'"}, 404)
            if parts[2:] == ["state"] and method == "GET":
                return await _state(episode)
            if parts[2:] == [] and method == "DELETE":
                if parts[1] == "default":
                    return _json({"error": "the default episode cannot be deleted"}, 400)
                try:
                    if request.query_params.get("state") == "1":  # the final state and the close in one round trip
                        return await _state(episode)
                finally:
                    self.env.drop(parts[1])
                return _json({"deleted": parts[1]})
        return _json({"error": f"no admin route {method} /admin/{'/'.join(parts)}"}, 404)

    async def _create(self, request: Request) -> JSONResponse:
        body = await request.body()
        try:
            payload = json.loads(body) if body else {}
        except ValueError:
            return _json({"error": "request body is not valid JSON"}, 400)
        if not isinstance(payload, dict):
            return _json({"error": 'body must be {"state": {...}}, {"state_file": "NAME"}, {"scenario_id": "..."} '
                                   'or {}'}, 400)
        state_file, scenario_id = payload.get("state_file"), payload.get("scenario_id")
        try:
            episode_id = await self.env.create_episode(
                payload.get("state"), state_file=None if state_file is None else str(state_file),
                scenario_id=None if scenario_id is None else str(scenario_id))
        except EpisodeRefused as exc:
            return _json({"error": exc.message}, exc.status)
        return _json({"episode_id": episode_id, "path": _path(episode_id)}, 201)


def _path(episode_id: str) -> str:
    return "/mcp" if episode_id == "default" else f"/episodes/{episode_id}/mcp"


async def _state(episode: Episode | ForkedEpisode) -> Response:
    try:
        return _raw('{"state": ' + await episode.read_state_json() + "}")
    except RuntimeError as exc:  # the episode's process is gone
        return _json({"error": str(exc)}, 410)


def _json(value: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(value, status_code=status)


def _raw(text: str, status: int = 200) -> Response:
    return Response(text, status_code=status, media_type="application/json")

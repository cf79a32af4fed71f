"""Streamable HTTP: many isolated episodes in one process, each at /episodes/{id}/mcp, plus the REST admin API.

A Starlette application, its MCP routes mounted as the SDK mounts its own (`Route(path, endpoint=ASGI app)`,
the session manager run by the lifespan). One MCP `Server` serves every episode; the episode's route writes
the episode id into the ASGI scope, and the server's handlers read it back from `ctx.request.scope` (set by
the SDK for both protocol eras). /admin/mcp serves every episode at one endpoint, each request naming its
episode in `_meta`: one client can drive many episodes. It is part of the admin plane (loopback, bearer
token), so whoever holds only an episode's own endpoint cannot name another episode; episode ids are minted
by POST /admin/episodes.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .episode import Episode
from .forked import ForkedEpisode
from .server import DEFAULT, EPISODE_SCOPE_KEY, ROUTED_SCOPE_KEY, EnvServer, EpisodeRefused

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
    """ASGI application: MCP endpoints per episode + /admin REST + /healthz (routed by Starlette).

    Paths are matched without their trailing slash (`/mcp/` is `/mcp`), as clients write both.
    """

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
        self.app = Starlette(
            routes=[
                Route("/mcp", endpoint=_Asgi(self._default_mcp)),
                Route("/episodes/{episode_id}/mcp", endpoint=_Asgi(self._episode_mcp)),
                Route("/admin/mcp", endpoint=_Asgi(self._admin_mcp)),
                Route("/admin/episodes", self._create, methods=["POST"]),
                Route("/admin/episodes", self._list, methods=["GET"]),
                Route("/admin/episodes/{episode_id}/state", self._read_state, methods=["GET"]),
                Route("/admin/episodes/{episode_id}", self._delete, methods=["DELETE"]),
                Route("/healthz", self._health),
            ],
            exception_handlers={404: self._not_found, 405: self._not_found},
            lifespan=self._lifespan)
        self.app.router.redirect_slashes = False  # trailing slashes are stripped before routing instead

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path")
        if path is not None and len(path) > 1 and path.endswith("/"):
            scope = {**scope, "path": path.rstrip("/") or "/"}
        await self.app(scope, receive, send)

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        async with self.manager.run():
            yield

    # ---- MCP endpoints (ASGI callables: the SDK answers the request itself) ----
    async def _default_mcp(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await self.manager.handle_request({**scope, EPISODE_SCOPE_KEY: DEFAULT}, receive, send)

    async def _episode_mcp(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        episode_id = scope["path_params"]["episode_id"]
        if episode_id != DEFAULT and episode_id not in self.env.episodes:
            await _json({"error": f"unknown episode '{episode_id}'"}, 404)(scope, receive, send)
            return
        await self.manager.handle_request({**scope, EPISODE_SCOPE_KEY: episode_id}, receive, send)

    async def _admin_mcp(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        refusal = self._refusal(Request(scope, receive))
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.manager.handle_request({**scope, ROUTED_SCOPE_KEY: True}, receive, send)

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

    async def _not_found(self, request: Request, exc: Exception) -> Response:
        """No route (or not this method): 404 with a JSON error; under /admin only after the admin checks."""
        path = request.url.path
        parts = path.strip("/").split("/")
        if parts[0] == "admin":
            refusal = self._refusal(request)
            if refusal is not None:
                return refusal
            return _json({"error": f"no admin route {request.method} /admin/{'/'.join(parts[1:])}"}, 404)
        return _json({"error": f"not found: {path}. MCP endpoints: /mcp and /episodes/{{id}}/mcp"}, 404)

    async def _health(self, request: Request) -> Response:
        return _json({"ok": True, "env": self.env.package.env_id, "episodes": self.env.episode_count()})

    async def _list(self, request: Request) -> Response:
        refusal = self._refusal(request)
        if refusal is not None:
            return refusal
        listed = [{"episode_id": e.episode_id, "path": _path(e.episode_id), "created_at": e.created_at,
                   "calls": e.calls} for e in self.env.episodes.values()]
        if DEFAULT not in self.env.episodes:  # listed as ever; built on its first use, not by a listing
            listed.insert(0, {"episode_id": DEFAULT, "path": _path(DEFAULT), "created_at": self.env.started_at,
                              "calls": 0})
        return _json({"episodes": listed})

    async def _episode(self, request: Request) -> Episode | ForkedEpisode | Response:
        """The episode the path names (the default one built if this is its first use), or the response
        refusing the request."""
        refusal = self._refusal(request)
        if refusal is not None:
            return refusal
        episode_id = request.path_params["episode_id"]
        try:
            episode = await self.env.episode(episode_id)
        except EpisodeRefused as exc:
            return _json({"error": exc.message}, exc.status)
        if episode is None:
            return _json({"error": f"unknown episode '{episode_id}'"}, 404)
        return episode

    async def _read_state(self, request: Request) -> Response:
        episode = await self._episode(request)
        return episode if isinstance(episode, Response) else await _state(episode)

    async def _delete(self, request: Request) -> Response:
        episode_id = request.path_params["episode_id"]
        if episode_id == DEFAULT and self._refusal(request) is None:  # refused before anything would build it
            return _json({"error": "the default episode cannot be deleted"}, 400)
        episode = await self._episode(request)
        if isinstance(episode, Response):
            return episode
        try:
            if request.query_params.get("state") == "1":  # the final state and the close in one round trip
                return await _state(episode)
        finally:
            self.env.drop(episode_id)
        return _json({"deleted": episode_id})

    async def _create(self, request: Request) -> Response:
        refusal = self._refusal(request)
        if refusal is not None:
            return refusal
        body = await request.body()
        try:
            payload = json.loads(body) if body else {}
        except ValueError:
            return _json({"error": "request body is not valid JSON"}, 400)
        if not isinstance(payload, dict):
            return _json({"error": 'body must be {"state": {...}}, {"state_file": "NAME"}, {"scenario_id": "..."} '
                                   'or {}'}, 400)
        state_file, scenario_id, chosen = payload.get("state_file"), payload.get("scenario_id"), payload.get("episode_id")
        try:
            episode_id = await self.env.create_episode(
                payload.get("state"), state_file=None if state_file is None else str(state_file),
                scenario_id=None if scenario_id is None else str(scenario_id),
                episode_id=None if chosen is None else str(chosen))
        except EpisodeRefused as exc:
            return _json({"error": exc.message}, exc.status)
        return _json({"episode_id": episode_id, "path": _path(episode_id)}, 201)


class _Asgi:
    """An ASGI callable Starlette mounts as it is (a bound method would be taken for a request handler)."""

    __slots__ = ("handler",)

    def __init__(self, handler: Callable[[dict[str, Any], Any, Any], Awaitable[None]]) -> None:
        self.handler = handler

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await self.handler(scope, receive, send)


def _path(episode_id: str) -> str:
    return "/mcp" if episode_id == DEFAULT else f"/episodes/{episode_id}/mcp"


async def _state(episode: Episode | ForkedEpisode) -> Response:
    try:
        return _raw('{"state": ' + await episode.read_state_json() + "}")
    except RuntimeError as exc:  # the episode's process is gone
        return _json({"error": str(exc)}, 410)


def _json(value: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(value, status_code=status)


def _raw(text: str, status: int = 200) -> Response:
    return Response(text, status_code=status, media_type="application/json")

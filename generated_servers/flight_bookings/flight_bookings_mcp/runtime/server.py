"""The MCP server: tools, prompts, the state resource, and the stdio admin requests."""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import re
import secrets
import time
from pathlib import Path
from typing import Any

import jsonschema
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    CallToolRequestParams,
    CallToolResult,
    GetPromptRequestParams,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListToolsResult,
    PaginatedRequestParams,
    Prompt,
    PromptMessage,
    ReadResourceRequestParams,
    ReadResourceResult,
    RequestParams,
    Resource,
    TextContent,
    TextResourceContents,
    Tool,
    ToolAnnotations,
)
from pydantic import ConfigDict

from .episode import Episode
from .forked import ForkedEpisode, ForkRefused, Zygote
from .package import EnvPackage
from .states import StateFiles

log = logging.getLogger(__name__)

EPISODE_SCOPE_KEY = "envscaler.episode"
# Set in the ASGI scope by the HTTP router for the admin-token-guarded shared endpoint (/admin/mcp) only:
# there, and nowhere else, a request names its episode in `_meta` under EPISODE_META_KEY.
ROUTED_SCOPE_KEY = "envscaler.routed"
EPISODE_META_KEY = "envscaler/episode"
# Beside EPISODE_META_KEY on those same two paths, the first request of an episode may create it (one round trip
# fewer per episode): {"token": the admin token, "state_file" or "scenario_id"}; the id, chosen by the caller, is
# EPISODE_ID_DIGITS hex digits no episode has.
CREATE_META_KEY = "envscaler/create"
# On any endpoint, `_meta[TEXT_ONLY_META_KEY] = true` on a tool call asks for the result's text without
# `structuredContent` (the same JSON as the text): the harness reads only the text, and a 2.x client validates
# and copies structured content three times per result.
TEXT_ONLY_META_KEY = "envscaler/text-only"
EPISODE_ID_DIGITS = 32
_EPISODE_ID = re.compile(f"[0-9a-f]{{{EPISODE_ID_DIGITS}}}")
STATE_URI = "state://current"
ADMIN_GET_STATE = "envscaler/admin/get_state"
ADMIN_RESET = "envscaler/admin/reset"
# stdio with an admin token (the launcher's pipe): many episodes in one process, named in `_meta`
ADMIN_CREATE = "envscaler/admin/create_episode"
ADMIN_CLOSE = "envscaler/admin/close_episode"
DEFAULT = "default"
# The tool list never changes while the server runs: clients may keep it this long (2026-07-28 `ttlMs`).
TOOLS_TTL_MS = 10 * 60 * 1000


class AdminParams(RequestParams):
    """Params of the stdio admin requests: the token; `state`, `state_file` or `scenario_id` for a reset or a
    new episode (and optionally its `episode_id`, chosen by the caller); `episode_id` (and `with_state`) for
    reading or closing one."""

    model_config = ConfigDict(extra="allow")
    token: str | None = None
    state: dict[str, Any] | None = None
    state_file: str | None = None
    scenario_id: str | None = None
    episode_id: str | None = None
    with_state: bool = False


class EpisodeRefused(Exception):
    """An episode could not be created; `status` is the HTTP status the REST admin API answers with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _tool(spec: dict[str, Any]) -> Tool:
    query = spec["kind"] == "query"
    annotations = ToolAnnotations(read_only_hint=True) if query else \
        ToolAnnotations(read_only_hint=False, destructive_hint=True)
    return Tool(name=spec["name"], description=spec["description"], input_schema=spec["input_schema"],
                annotations=annotations)


def _error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


class EnvServer:
    """Holds the episodes of one process and the MCP `Server` that serves them. With a `zygote` every episode
    runs in a process of its own (forked.py); without, in this one.

    The default episode (`/mcp`, stdio without a named episode) is built on its first use: a server whose
    clients only use the episodes they create never builds it (nor forks its process). It is listed and
    counted from the start all the same. Given an `initial_state` (--state, --scenario) it is built at once,
    so that a state that cannot be built is refused before the server serves."""

    def __init__(self, package: EnvPackage, *, call_timeout: float | None = 10.0,
                 admin_token: str | None = None, initial_state: dict[str, Any] | None = None,
                 otel_spans: bool = False, state_dir: Path | None = None, max_episodes: int = 1000,
                 zygote: Zygote | None = None) -> None:
        self.package = package
        self.zygote = zygote
        self.state_files = StateFiles(state_dir)
        self.max_episodes = max_episodes
        self.otel_spans = otel_spans
        self.call_timeout = call_timeout
        self.admin_token = admin_token
        self.tools = [_tool(t) for t in package.tools]
        self.tool_names = {t.name for t in self.tools}
        self.validators = {t["name"]: jsonschema.Draft202012Validator(t["input_schema"]) for t in package.tools}
        self.input_schemas: dict[str, dict[str, Any]] = {t["name"]: t["input_schema"] for t in package.tools}
        self.initial_state = initial_state
        self.started_at = time.time()
        self.episodes: dict[str, Episode | ForkedEpisode] = {}
        self._creating: set[str] = set()  # ids chosen by callers, their episodes being built
        self._default_lock: asyncio.Lock | None = None
        if initial_state is not None:
            self.episodes[DEFAULT] = self.new_episode(initial_state, DEFAULT)
        self.server = self._build()

    # ---- episodes ----
    def new_episode(self, state: dict[str, Any] | None, episode_id: str) -> Episode | ForkedEpisode:
        """Create an episode at `state` (default: the package's default state). Does not register it. Blocking:
        for the default episode, before the event loop runs or from a trusted admin request."""
        if self.zygote is not None:
            try:
                return self.zygote.fork_episode_now({"state": state}, episode_id)
            except ForkRefused as exc:
                raise ValueError(exc.message) from None
        if state is None:
            state = self.package.default_state
        assert self.package.env_class is not None
        return Episode(self.package.env_class, self.package.state_names, state, episode_id)

    def episode_count(self) -> int:
        """Live episodes, the default one counted whether or not it has been built yet."""
        return len(self.episodes) + (DEFAULT not in self.episodes)

    async def default_episode(self) -> Episode | ForkedEpisode:
        """The default episode, built now if this is its first use. Raises EpisodeRefused."""
        episode = self.episodes.get(DEFAULT)
        if episode is not None:
            return episode
        async with self._default_guard():  # two first uses at once build it once
            episode = self.episodes.get(DEFAULT)
            if episode is None:
                episode = await self._make(self.initial_state, DEFAULT)
                self.episodes[DEFAULT] = episode
        return episode

    def _default_guard(self) -> asyncio.Lock:
        if self._default_lock is None:  # made in the event loop, not before it runs
            self._default_lock = asyncio.Lock()
        return self._default_lock

    async def episode(self, episode_id: str) -> Episode | ForkedEpisode | None:
        """A live episode by id (the default one built on its first use), or None. Raises EpisodeRefused."""
        if episode_id == DEFAULT:
            return await self.default_episode()
        return self.episodes.get(episode_id)

    async def _make(self, state: dict[str, Any] | None, episode_id: str) -> Episode | ForkedEpisode:
        """`new_episode` from the event loop: a forked episode is awaited. Raises EpisodeRefused."""
        if self.zygote is not None:
            try:
                return await self.zygote.fork_episode({"state": state}, episode_id)
            except ForkRefused as exc:
                raise EpisodeRefused(exc.status, exc.message) from None
        try:
            return self.new_episode(state, episode_id)
        except Exception as exc:
            raise EpisodeRefused(400, f"could not create the episode: {type(exc).__name__}: {exc}") from None

    def drop(self, episode_id: str) -> Episode | ForkedEpisode:
        """Unregister an episode and release it (its process ends); returns it."""
        episode = self.episodes.pop(episode_id)
        episode.close()
        return episode

    async def create_episode(self, state: dict[str, Any] | None = None, *, state_file: str | None = None,
                             scenario_id: str | None = None, episode_id: str | None = None) -> str:
        """Create and register an episode (the package's default state, a state, a state file of --state-dir, or
        a bundled scenario's state); returns its id, 128 random bits (or `episode_id`, the admin's choice: 32 hex
        digits no episode has). Raises EpisodeRefused."""
        if self.episode_count() > self.max_episodes:
            raise EpisodeRefused(429, f"too many episodes (limit {self.max_episodes}); delete some first")
        if episode_id is None:
            episode_id = secrets.token_hex(EPISODE_ID_DIGITS // 2)  # an episode id is also the key to its endpoint
        elif not _EPISODE_ID.fullmatch(episode_id) or episode_id in self.episodes or episode_id in self._creating:
            raise EpisodeRefused(400, f"an episode's id must be {EPISODE_ID_DIGITS} hex digits no episode has")
        self._creating.add(episode_id)
        try:
            self.episodes[episode_id] = await self._built(state, state_file, scenario_id, episode_id)
        finally:
            self._creating.discard(episode_id)
        return episode_id

    async def _built(self, state: dict[str, Any] | None, state_file: str | None, scenario_id: str | None,
                     episode_id: str) -> Episode | ForkedEpisode:
        if self.zygote is not None:
            request = {"state": state, "state_file": state_file, "scenario_id": scenario_id}
            try:
                return await self.zygote.fork_episode(request, episode_id)
            except ForkRefused as exc:
                raise EpisodeRefused(exc.status, exc.message) from None
        if state_file is not None:
            try:
                state = self.state_files.read(state_file)
            except ValueError as exc:
                raise EpisodeRefused(400, str(exc)) from None
        if scenario_id is not None:
            try:
                state = self.package.scenario_state(scenario_id)
            except KeyError as exc:
                raise EpisodeRefused(404, str(exc.args[0])) from None
        if state is not None and not isinstance(state, dict):
            raise EpisodeRefused(400, "state must be a JSON object keyed by state attribute names")
        return await self._make(state, episode_id)

    async def _named(self, ctx: ServerRequestContext[Any, Any]) -> Episode | ForkedEpisode:
        meta = ctx.meta or {}
        named = meta.get(EPISODE_META_KEY)
        if CREATE_META_KEY in meta and isinstance(named, str) and named not in self.episodes:
            await self._create_named(named, meta.get(CREATE_META_KEY))
        if not isinstance(named, str) or named == DEFAULT or named not in self.episodes:
            raise MCPError(INVALID_REQUEST, f"name an existing episode in _meta['{EPISODE_META_KEY}']")
        return self.episodes[named]

    async def _create_named(self, episode_id: str, create: Any) -> None:
        """Create the episode a request names, from its `_meta[CREATE_META_KEY]` (CREATE_META_KEY)."""
        token = create.get("token") if isinstance(create, dict) else None
        if not self.admin_token or not isinstance(token, str) or \
                not hmac.compare_digest(token.encode(), self.admin_token.encode()):
            raise MCPError(INVALID_REQUEST, "episode creation refused: wrong or missing token")
        state_file, scenario_id = create.get("state_file"), create.get("scenario_id")
        if not all(v is None or isinstance(v, str) for v in (state_file, scenario_id)):
            raise MCPError(INVALID_REQUEST, "could not create the episode: state_file and scenario_id are strings")
        try:
            await self.create_episode(state_file=state_file, scenario_id=scenario_id, episode_id=episode_id)
        except EpisodeRefused as exc:  # the caller's doing, never the request's own params: not INVALID_PARAMS
            raise MCPError(INVALID_REQUEST, f"could not create the episode: {exc.message}") from None

    async def episode_for(self, ctx: ServerRequestContext[Any, Any]) -> Episode | ForkedEpisode:
        """The episode a request is for: set by the HTTP router in the ASGI scope, else the default one.

        On the shared endpoint (ROUTED_SCOPE_KEY, reached only with the admin token) the request names an
        episode the admin plane created, in `_meta`, or one it creates itself with the admin token in `_meta`
        too (CREATE_META_KEY); it can never reach the default episode. Over stdio with the admin plane on (an
        admin token: the process that started this one, the only peer of its pipes) a request may name or so
        create such an episode too; without a token `_meta` is not read. Everywhere else the endpoint alone
        decides."""
        episode_id = DEFAULT
        request = ctx.request
        if request is None:
            if self.admin_token and EPISODE_META_KEY in (ctx.meta or {}):
                return await self._named(ctx)
        else:
            if request.scope.get(ROUTED_SCOPE_KEY):
                return await self._named(ctx)
            episode_id = request.scope.get(EPISODE_SCOPE_KEY, DEFAULT)
        try:
            episode = await self.episode(episode_id)
        except EpisodeRefused as exc:
            raise MCPError(INVALID_REQUEST, exc.message) from None
        if episode is None:
            raise MCPError(INVALID_REQUEST, f"episode '{episode_id}' does not exist (it was closed)")
        return episode

    # ---- MCP handlers ----
    async def _list_tools(self, ctx: ServerRequestContext[Any, Any],
                          params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=self.tools, ttl_ms=TOOLS_TTL_MS, cache_scope="public")

    async def _call_tool(self, ctx: ServerRequestContext[Any, Any],
                         params: CallToolRequestParams) -> CallToolResult:
        episode = await self.episode_for(ctx)
        name = params.name
        if name not in self.tool_names:
            return _error(f"Unknown tool '{name}'. Available tools: {', '.join(sorted(self.tool_names))}.")
        arguments = params.arguments or {}
        problems = sorted(self.validators[name].iter_errors(arguments), key=lambda e: list(e.path))
        if problems:
            text = "; ".join(f"{e.json_path}: {e.message}" if e.path else e.message for e in problems)
            return _error(f"Invalid arguments for tool '{name}': {text}. Nothing was changed.")
        outcome = await episode.run(name, arguments, self.call_timeout)
        if outcome.is_error:
            log.info("tool %s failed: %s", name, outcome.text)
            return _error(outcome.text)
        text_only = (ctx.meta or {}).get(TEXT_ONLY_META_KEY) is True
        return CallToolResult(content=[TextContent(type="text", text=outcome.text)],
                              structured_content=None if text_only else json.loads(outcome.text), is_error=False)

    async def _list_prompts(self, ctx: ServerRequestContext[Any, Any],
                            params: PaginatedRequestParams | None) -> ListPromptsResult:
        return ListPromptsResult(prompts=[
            Prompt(name=sid, title=s.get("title") or None, description=s.get("title") or s["task"][:100])
            for sid, s in self.package.scenarios.items()])

    async def _get_prompt(self, ctx: ServerRequestContext[Any, Any],
                          params: GetPromptRequestParams) -> GetPromptResult:
        scenario = self.package.scenarios.get(params.name)
        if scenario is None:
            raise MCPError(INVALID_PARAMS, f"unknown prompt '{params.name}'")
        return GetPromptResult(description=scenario.get("title") or None, messages=[
            PromptMessage(role="user", content=TextContent(type="text", text=scenario["task"]))])

    async def _list_resources(self, ctx: ServerRequestContext[Any, Any],
                              params: PaginatedRequestParams | None) -> ListResourcesResult:
        return ListResourcesResult(resources=[Resource(
            uri=STATE_URI, name="state", mime_type="application/json",
            description="The current state of this episode (JSON).")])

    async def _read_resource(self, ctx: ServerRequestContext[Any, Any],
                             params: ReadResourceRequestParams) -> ReadResourceResult:
        if str(params.uri) != STATE_URI:
            raise MCPError(INVALID_PARAMS, f"unknown resource '{params.uri}'", {"uri": str(params.uri)})
        text = await self._state_json(await self.episode_for(ctx))
        return ReadResourceResult(contents=[TextResourceContents(uri=STATE_URI, mime_type="application/json",
                                                                 text=text)])

    # ---- stdio admin plane ----
    def _check_admin(self, ctx: ServerRequestContext[Any, Any], params: AdminParams) -> None:
        if ctx.request is not None:
            raise MCPError(INVALID_REQUEST, "admin requests are not served over HTTP; use the /admin REST API")
        if not self.admin_token:
            raise MCPError(INVALID_REQUEST, "admin plane disabled: start the server with ENVSCALER_ADMIN_TOKEN set")
        if not params.token or not hmac.compare_digest(params.token, self.admin_token):
            raise MCPError(INVALID_REQUEST, "admin request refused: wrong or missing token")

    async def _admin_episode(self, params: AdminParams) -> Episode | ForkedEpisode:
        try:
            episode = await self.episode(params.episode_id or DEFAULT)
        except EpisodeRefused as exc:
            raise MCPError(INVALID_PARAMS, exc.message) from None
        if episode is None:
            raise MCPError(INVALID_PARAMS, f"unknown episode '{params.episode_id}'")
        return episode

    async def _admin_get_state(self, ctx: ServerRequestContext[Any, Any], params: AdminParams) -> dict[str, Any]:
        self._check_admin(ctx, params)
        episode = await self._admin_episode(params)
        text = await self._state_json(episode)
        if params.episode_id is not None:  # the launcher's pipe: the state's JSON text, parsed once on its side
            return {"state_json": text}
        return {"state": json.loads(text)}

    async def _admin_create(self, ctx: ServerRequestContext[Any, Any], params: AdminParams) -> dict[str, Any]:
        self._check_admin(ctx, params)
        try:
            episode_id = await self.create_episode(params.state, state_file=params.state_file,
                                                   scenario_id=params.scenario_id, episode_id=params.episode_id)
        except EpisodeRefused as exc:
            raise MCPError(INVALID_PARAMS, exc.message) from None
        return {"episode_id": episode_id}

    async def _admin_close(self, ctx: ServerRequestContext[Any, Any], params: AdminParams) -> dict[str, Any]:
        """Close an episode; with `with_state` its final state comes back in the same answer."""
        self._check_admin(ctx, params)
        if params.episode_id in (None, DEFAULT):
            raise MCPError(INVALID_PARAMS, "the default episode cannot be closed")
        episode = await self._admin_episode(params)
        answer: dict[str, Any] = {"closed": params.episode_id}
        try:
            if params.with_state:
                answer["state_json"] = await self._state_json(episode)
        finally:
            self.drop(episode.episode_id)
        return answer

    async def _admin_reset(self, ctx: ServerRequestContext[Any, Any], params: AdminParams) -> dict[str, Any]:
        self._check_admin(ctx, params)
        state = params.state
        if params.scenario_id is not None:
            try:
                state = self.package.scenario_state(params.scenario_id)
            except KeyError as exc:
                raise MCPError(INVALID_PARAMS, str(exc.args[0])) from None
        async with self._default_guard():  # never beside a first use building the default episode
            try:
                fresh = self.new_episode(state, DEFAULT)
            except ValueError as exc:
                raise MCPError(INVALID_PARAMS, str(exc)) from None
            if DEFAULT in self.episodes:
                self.drop(DEFAULT)
            self.episodes[DEFAULT] = fresh
        return {"reset": True}

    @staticmethod
    async def _state_json(episode: Episode | ForkedEpisode) -> str:
        try:
            return await episode.read_state_json()
        except RuntimeError as exc:  # its process is gone
            raise MCPError(INVALID_REQUEST, str(exc)) from None

    def _build(self) -> Server[Any]:
        spec = self.package.spec
        server: Server[Any] = Server(
            spec["server_name"], version=spec["version"], title=spec["name"],
            description=spec["summary"][:200], instructions=spec["instructions"],
            # The HTTP transport checks `Mcp-Param-*` headers against the called tool's schema before every
            # call; without this lookup it runs the whole tools/list handler to find the schema.
            get_tool_input_schema=self.input_schemas.get,
            on_list_tools=self._list_tools, on_call_tool=self._call_tool,
            on_list_prompts=self._list_prompts, on_get_prompt=self._get_prompt,
            on_list_resources=self._list_resources, on_read_resource=self._read_resource)
        if not self.otel_spans:
            # The SDK wraps every request in an OpenTelemetry span (a no-op without an exporter that still
            # costs tens of microseconds per request); the SDK documents removing it from this list to opt out.
            server.middleware.clear()
        server.add_request_handler(ADMIN_GET_STATE, AdminParams, self._admin_get_state)
        server.add_request_handler(ADMIN_RESET, AdminParams, self._admin_reset)
        server.add_request_handler(ADMIN_CREATE, AdminParams, self._admin_create)
        server.add_request_handler(ADMIN_CLOSE, AdminParams, self._admin_close)
        return server

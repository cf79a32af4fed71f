"""Episodes: the `Episode` protocol (what every transport, external servers and the QA gate's replay work with)
and `ClientEpisode`, one isolated environment instance reached through an `mcp.Client`."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

import anyio
from mcp import Client, MCPError
from mcp.client.caching import CacheConfig, InMemoryResponseCacheStore
from mcp.types import (
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    CallToolResult,
    DiscoverResult,
    GetPromptResult,
    ListPromptsResult,
    ListToolsResult,
    ReadResourceResult,
    Request,
    RequestParams,
    Result,
    Tool,
)
from pydantic import ConfigDict

from envscaler_mcp._json import JSONObject, State
from envscaler_mcp.errors import ServerStartError

ADMIN_GET_STATE = "envscaler/admin/get_state"
ADMIN_RESET = "envscaler/admin/reset"
EPISODE_META_KEY = "envscaler/episode"  # where a request on a server's shared endpoint names its episode
# Beside it, on the first request of an episode not created yet: what to create it from (the generated server's
# runtime/server.py CREATE_META_KEY): {"token", "state_file" or "scenario_id"}
CREATE_META_KEY = "envscaler/create"
# On a tool call: answer with the result's text only, no `structuredContent` (the generated server's
# runtime/server.py TEXT_ONLY_META_KEY). The text decides what a result says (_outcome.read_result), and the SDK's
# client would validate and copy the structured copy three times; other servers ignore the key.
TEXT_ONLY_META_KEY = "envscaler/text-only"
_T = TypeVar("_T")


class NoAdminPlane(ServerStartError):
    """The server has no admin plane (an external server), so its state cannot be read or set."""


class AdminParams(RequestParams):
    """Params of the stdio admin requests of a generated server."""

    model_config = ConfigDict(extra="allow")
    token: str | None = None
    state: State | None = None
    scenario_id: str | None = None


class AdminGetState(Request[AdminParams, Literal["envscaler/admin/get_state"]]):
    """`envscaler/admin/get_state` request."""

    method: Literal["envscaler/admin/get_state"] = "envscaler/admin/get_state"


class AdminReset(Request[AdminParams, Literal["envscaler/admin/reset"]]):
    """`envscaler/admin/reset` request."""

    method: Literal["envscaler/admin/reset"] = "envscaler/admin/reset"


class AdminResult(Result):
    """Any admin result (`{"state": ...}` or `{"reset": true}`)."""

    model_config = ConfigDict(extra="allow")


async def stdio_get_state(client: Client, token: str) -> State:
    """Read the state of a stdio server through the `envscaler/admin/get_state` request."""
    result = await client.session.send_request(AdminGetState(params=AdminParams(token=token)), AdminResult)
    state = (result.model_extra or {}).get("state")
    if not isinstance(state, dict):
        raise ServerStartError("the server answered envscaler/admin/get_state without a state object")
    return state


class WarmCache:
    """What every episode of one launched server shares, learnt from its first episode: the protocol
    handshake's answer (`server/discover`) and the tool list (the SDK's response cache, one store for all the
    server's clients; generated servers mark `tools/list` cacheable with `ttlMs`). A launched server runs one
    environment version, so both are the same for all its episodes; reusing them saves two round trips per
    episode. `enabled=False` asks again every episode."""

    def __init__(self, enabled: bool = True, target_id: str = "") -> None:
        self.enabled = enabled
        self.discover: DiscoverResult | None = None
        self.version = ""
        self._cache = CacheConfig(store=InMemoryResponseCacheStore(max_entries=16), partition="launched-server",
                                  target_id=target_id or secrets.token_hex(8))

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments for `mcp.Client`: the shared response cache, and the known protocol version
        adopted without probing (once learnt)."""
        if not self.enabled:
            return {}
        if self.discover is None:
            return {"cache": self._cache}
        return {"cache": self._cache, "mode": self.version, "prior_discover": self.discover}

    def learn(self, client: Client) -> None:
        """Remember the handshake of a connected client (modern servers only)."""
        if self.enabled and self.discover is None and client.session.discover_result is not None:
            self.discover, self.version = client.session.discover_result, client.protocol_version


async def all_tools(client: Client | RoutedClient) -> list[Tool]:
    """Every page of a client's tool list."""
    tools: list[Tool] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


class RoutedClient:
    """A server's one shared client as one episode sees it: every request about the episode's state names the
    episode in `_meta` (generated HTTP servers' /admin/mcp endpoint, behind the admin token). The tool and
    prompt lists are the same for every episode and go unnamed, through the client's response cache.

    With `create` (the `_meta` entry CREATE_META_KEY: the admin token and the episode's initial state file) the
    episode does not exist yet: its first request creates it on the server, one round trip fewer than an admin
    request of its own. Requests wait for that first one; `create_now` creates it without a request (a state
    read before any call), and `created` says whether either happened."""

    def __init__(self, client: Client, episode_id: str, tools: list[Tool] | None = None,
                 create: dict[str, Any] | None = None) -> None:
        self.shared = client
        self.episode_id = episode_id
        self.tools = tools  # the server's whole tool list, listed once by the launcher (None: ask)
        self._create = create
        self._first = anyio.Lock()

    @property
    def created(self) -> bool:
        """Whether the episode exists on the server (or may: a first request that failed)."""
        return self._create is None

    async def create_now(self, create: Callable[[], Awaitable[None]]) -> None:
        """Run `create` (an admin request creating the episode under this id) unless a request already did."""
        async with self._first:
            if self._create is not None:
                await create()
                self._create = None

    async def _named(self, send: Callable[[dict[str, Any]], Awaitable[_T]]) -> _T:
        """`send` with this episode's `_meta`; the first request also creates the episode (see the class)."""
        if self._create is None:
            return await send(self._meta())
        async with self._first:
            if self._create is None:
                return await send(self._meta())
            create, self._create = self._create, None  # from now on it may exist: closed at the end whatever happens
            try:
                return await send({**self._meta(), CREATE_META_KEY: create})
            except MCPError as exc:
                if exc.code in (INVALID_PARAMS, METHOD_NOT_FOUND):  # refused before it named the episode: not created
                    self._create = create
                    raise
                # the server could not create it: an admin request's failure, as when it had a request of its own
                raise ServerStartError(f"the server did not create the episode: {exc}") from exc

    @property
    def session(self) -> Any:
        """The shared client's session."""
        return self.shared.session

    def _meta(self) -> dict[str, Any]:
        return {EPISODE_META_KEY: self.episode_id}  # a fresh dict: the SDK adds trace fields to it

    async def list_tools(self, cursor: str | None = None) -> ListToolsResult:
        """One page of the tool list (the whole list, when the launcher listed it once for every episode)."""
        if self.tools is not None and cursor is None:
            return ListToolsResult(tools=list(self.tools))
        return await self.shared.list_tools(cursor=cursor)

    async def call_tool(self, name: str, arguments: JSONObject | None = None, *,
                        text_only: bool = True) -> CallToolResult:
        """Call a tool in this episode (`text_only`: see TEXT_ONLY_META_KEY)."""
        extra = {TEXT_ONLY_META_KEY: True} if text_only else {}
        return await self._named(lambda meta: self.shared.call_tool(name, arguments, meta={**meta, **extra}))  # type: ignore[arg-type]

    async def read_resource(self, uri: str) -> ReadResourceResult:
        """Read a resource of this episode (`state://current`)."""
        return await self._named(lambda meta: self.shared.read_resource(uri, meta=meta))  # type: ignore[arg-type]

    async def list_prompts(self, cursor: str | None = None) -> ListPromptsResult:
        """One page of the prompt list (the bundled scenarios)."""
        return await self.shared.list_prompts(cursor=cursor)

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> GetPromptResult:
        """One prompt."""
        return await self.shared.get_prompt(name, arguments)


class Episode(Protocol):
    """One isolated episode of a server: its tools, tool calls and (with an admin plane) its state.

    Every launched transport, external servers (through the harness's wrapper), the harness and the QA gate's
    replay work with this; a launched episode (`ClientEpisode`) also offers `final_state`."""

    async def list_tools(self) -> list[Tool]:
        """The tools offered to the agent (admin plane excluded)."""
        ...

    async def call_tool(self, name: str, arguments: JSONObject) -> CallToolResult:
        """Call a tool through MCP; a tool's failure is an `is_error` result, not an exception."""
        ...

    async def get_state(self) -> State:
        """The episode's current state through the admin plane (NoAdminPlane without one)."""
        ...


@runtime_checkable
class ClosingEpisode(Protocol):
    """An episode whose last state read can also close it (`ClientEpisode`; a test's fake may offer it too)."""

    async def final_state(self, like: State | None = None) -> State:
        """The episode's state, read for the last time (no call may follow); `like` as for
        `ClientEpisode.final_state`."""
        ...


class ClientEpisode:
    """An isolated episode of one server, reached through an `mcp.Client`: an `Episode`."""

    def __init__(self, client: Client | RoutedClient, *, episode_id: str, transport: str,
                 state_reader: Callable[[], Awaitable[State]] | None, warm: WarmCache | None = None,
                 final_reader: Callable[[State | None], Awaitable[State]] | None = None,
                 text_only: bool = True) -> None:
        self.client = client
        self.text_only = text_only  # ask for results without their structured copy (a generated server's)
        self.episode_id = episode_id
        self.transport = transport
        self._state_reader = state_reader
        self._final_reader = final_reader
        self._warm = warm
        self._listed = False
        if warm is not None and isinstance(client, Client):
            warm.learn(client)

    async def list_tools(self) -> list[Tool]:
        """The tools the agent sees (all pages; the first page from the server's WarmCache once learnt)."""
        tools = await all_tools(self.client)
        self._listed = True
        return tools

    async def call_tool(self, name: str, arguments: JSONObject | None = None, *,
                        text_only: bool | None = None) -> CallToolResult:
        """Call one tool. Tool failures come back as `is_error=True` results, not exceptions. With `text_only`
        (by default the episode's: on for a generated server, off for an external one, which is sent no key of
        ours) a generated server leaves out the structured copy of the result (TEXT_ONLY_META_KEY)."""
        if text_only is None:
            text_only = self.text_only
        if not self._listed and self._warm is not None and self._warm.enabled:
            # The SDK checks results against the tools' output schemas and lists the tools itself, past the
            # cache, when it has not seen them: list them through the cache first.
            await self.list_tools()
        if isinstance(self.client, RoutedClient):
            return await self.client.call_tool(name, arguments or {}, text_only=text_only)
        meta = {TEXT_ONLY_META_KEY: True} if text_only else None
        return await self.client.call_tool(name, arguments or {}, meta=meta)  # type: ignore[arg-type]

    async def get_state(self) -> State:
        """The episode's current state (a plain dict). Raises NoAdminPlane for external servers."""
        return await self._read(self._state_reader)

    async def final_state(self, like: State | None = None) -> State:
        """The episode's state, read for the last time: where the server can, the episode is closed by the same
        request (no call may follow). `like`: a state it may well equal (the reference's), given back as it is
        when the server's JSON is the same text. Raises NoAdminPlane for external servers."""
        final = self._final_reader
        return await self._read(self._state_reader if final is None else lambda: final(like))

    async def _read(self, reader: Callable[[], Awaitable[State]] | None) -> State:
        if reader is None:
            raise NoAdminPlane("this server has no admin plane (it is an external server), so its state "
                               "cannot be read; score it with a generated server or give it a state resource")
        try:
            return await reader()
        except MCPError as exc:
            raise ServerStartError(f"reading the episode state failed: {exc}") from exc


@asynccontextmanager
async def created_by_first_request(
        client: Client, tools: list[Tool] | None, token: str | None, source: dict[str, Any], transport: str, *,
        create: Callable[[str], Awaitable[Any]], read: Callable[[str], Awaitable[State]],
        close_with_state: Callable[[str, State | None], Awaitable[State]],
        close: Callable[[str], Awaitable[None]]) -> AsyncIterator[ClientEpisode]:
    """An episode on a server's shared client (`RoutedClient`) whose first request creates it from `source`
    (a state file or a scenario id) with the admin token: no admin request of its own. Each callable gets the
    episode's id: `create` (an admin request, when its state is read before any call), `read`,
    `close_with_state` (the final state, closing it) and `close` (at the end, when it exists and was not
    closed with its state; shielded from cancellation here, its own errors its own to swallow)."""
    episode_id = secrets.token_hex(16)  # 32 hex digits, as the server asks of an id it did not choose
    routed = RoutedClient(client, episode_id, tools, create={"token": token, **source})
    closed = False

    async def create_it() -> None:
        await create(episode_id)

    async def read_state() -> State:
        await routed.create_now(create_it)
        return await read(episode_id)

    async def read_and_close(like: State | None) -> State:
        nonlocal closed
        await routed.create_now(create_it)
        state = await close_with_state(episode_id, like)
        closed = True
        return state

    try:
        yield ClientEpisode(routed, episode_id=episode_id, transport=transport, state_reader=read_state,
                            final_reader=read_and_close)
    finally:
        if not closed and routed.created:
            with anyio.CancelScope(shield=True):
                await close(episode_id)

"""The pipe transport: one server process per environment, many episodes, reached over the process's stdin
and stdout.

The server is the generated stdio server with its admin plane on (a token only this launcher knows, handed
over in the process's environment) and a folder of state files. Episodes are read and closed with the stdio
admin requests (`envscaler/admin/get_state`, `close_episode`); every tool call names its episode in `_meta`, as
the harness's requests do on an HTTP server's admin-guarded /admin/mcp, and an episode is created by its first
request (its `_meta` also holds the token and the initial state's file: one round trip fewer per episode), or
by `envscaler/admin/create_episode` when its state is read before any call. The pipes
are private to this process and the server it started (no port, no listener), and the agent never talks to the
server: the harness forwards only tool names and arguments. Each episode still has its own state objects in
the server, rolled back per call as on every transport.

Compared with HTTP, a request costs no HTTP framing on either side (no httpx, no ASGI, no h11): what is left is
JSON-RPC over a pipe, a few times cheaper for the harness's single process (benchmarks/README.md).
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

from anyio.abc import Process
from mcp import Client, MCPError, StdioServerParameters
from mcp.types import Request, Tool
from pydantic import ConfigDict, model_validator

from envscaler_mcp._json import State, parse_state
from envscaler_mcp.errors import ServerStartError
from envscaler_mcp.launch.episodes import (
    AdminParams,
    AdminResult,
    Episode,
    WarmCache,
    all_tools,
    created_by_first_request,
)
from envscaler_mcp.launch.launched import LaunchedServer, log_tail
from envscaler_mcp.launch.lines import line_client
from envscaler_mcp.launch.server_process import (
    ADMIN_TOKEN_ENV,
    DEFAULT_LIMITS,
    ServerLimits,
    read_report,
    server_command,
    server_env,
    serving_pid,
)
from envscaler_mcp.launch.server_zygote import start_server_process
from envscaler_mcp.launch.statefiles import StateFileWriter
from envscaler_mcp.launch.target import ServerDir
from envscaler_mcp.render.cache import mark_used


class PipeParams(AdminParams):
    """Params of the pipe's admin requests (the stdio ones plus an episode, a state file and `with_state`)."""

    model_config = ConfigDict(extra="allow")
    state_file: str | None = None
    episode_id: str | None = None
    with_state: bool = False


class _Create(Request[PipeParams, Literal["envscaler/admin/create_episode"]]):
    method: Literal["envscaler/admin/create_episode"] = "envscaler/admin/create_episode"


class _GetState(Request[PipeParams, Literal["envscaler/admin/get_state"]]):
    method: Literal["envscaler/admin/get_state"] = "envscaler/admin/get_state"


class _Close(Request[PipeParams, Literal["envscaler/admin/close_episode"]]):
    method: Literal["envscaler/admin/close_episode"] = "envscaler/admin/close_episode"


class _Answer(AdminResult):
    """An admin answer. The state's JSON text of one moves out of the raw answer as it is read: the SDK's read
    loop keeps the last message it dispatched until the server's next one (after the episode's checks), and a
    final state's text is megabytes."""

    @model_validator(mode="before")
    @classmethod
    def _take_text(cls, data: Any) -> Any:
        if isinstance(data, dict) and "state_json" in data:
            taken = dict(data)
            del data["state_json"]
            return taken
        return data


def _state_of(result: AdminResult, like: State | None = None) -> State:
    text = (result.model_extra or {}).pop("state_json", None)  # held only here while parsed
    state = parse_state(text.encode("utf-8"), like, text) if isinstance(text, str) else None
    if state is None:
        raise ServerStartError("the server answered without the episode's state")
    return state


class PipeServer(LaunchedServer):
    """One server process over stdin/stdout serving every episode (use inside `running()`)."""

    transport = "pipe"

    def __init__(self, server: ServerDir, workdir: Path, extra_args: list[str], client_timeout: float,
                 isolation: bool = True, limits: ServerLimits = DEFAULT_LIMITS) -> None:
        self.server_dir = server
        self.workdir = workdir
        self.extra_args = extra_args
        self.client_timeout = client_timeout
        self.os_isolation = isolation
        self.limits = limits
        self.token = secrets.token_hex(16)
        self.state_files = StateFileWriter(workdir / "states")
        self.warm = WarmCache(True, target_id=f"pipe:{server.path}")
        self.client: Client | None = None
        self.tools: list[Tool] | None = None
        self.pid: int | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Start the process, connect, list the tools once (into the shared response cache); stop it on exit."""
        assert self.server_dir is not None
        mark_used(self.server_dir.path)
        states = self.state_files.folder
        states.mkdir(parents=True, exist_ok=True)
        report = self.workdir / "isolation.json"
        command = server_command(self.server_dir, report, self.os_isolation,
                                 [*self.extra_args, "--state-dir", str(states)], read=[states],
                                 limits=self.limits)
        env = server_env(self.server_dir, self.token)
        argv = command.argv
        params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(self.server_dir.path), env=env)
        log_path = self.workdir / "pipe-server.log"
        started: list[Process] = []

        async def start() -> Process:
            assert self.server_dir is not None
            started.append(await start_server_process(self.server_dir, command, env, cwd=str(self.server_dir.path),
                                                      pipes=True, log_file=errlog, token_env=ADMIN_TOKEN_ENV))
            return started[0]

        with open(log_path, "w", encoding="utf-8") as errlog:
            try:
                # The one client of every episode lists the tools once and keeps the list (RoutedClient): the
                # SDK's response cache would only deep-copy it into a store nothing reads.
                client = Client(line_client(params, errlog, start, write_timeout_s=self.client_timeout),
                                read_timeout_seconds=self.client_timeout, cache=None)
                await client.__aenter__()
            except Exception as exc:
                raise ServerStartError(f"the server did not start: {exc}\n{log_tail(log_path)}") from exc
            try:
                self.warm.learn(client)
                self.isolation = read_report(report, self.limits)
                self.pid = serving_pid(started[0].pid) if started else None
                self.client, self.tools = client, await all_tools(client)
                yield
            finally:
                self.client = None
                await client.__aexit__(None, None, None)

    def _params(self, **fields: Any) -> PipeParams:
        return PipeParams(token=self.token, **fields)

    async def _admin(self, request: _Create | _GetState | _Close) -> AdminResult:
        if self.client is None:
            raise ServerStartError("the pipe server is not running")
        try:
            return await self.client.session.send_request(request, _Answer)
        except MCPError as exc:
            raise ServerStartError(f"the server refused {request.method}: {exc}") from exc

    @asynccontextmanager
    async def episode(self, initial_state: State | None = None, *,
                      scenario_id: str | None = None) -> AsyncIterator[Episode]:
        if initial_state is not None:
            source: dict[str, Any] = {"state_file": self.state_files.name_for(initial_state)}
        else:
            source = {"scenario_id": scenario_id}
        if self.client is None:
            raise ServerStartError("the pipe server is not running")

        async def create(episode_id: str) -> None:
            await self._admin(_Create(params=self._params(episode_id=episode_id, **source)))

        async def read(episode_id: str) -> State:
            return _state_of(await self._admin(_GetState(params=self._params(episode_id=episode_id))))

        async def close_with_state(episode_id: str, like: State | None) -> State:
            return _state_of(await self._admin(_Close(params=self._params(episode_id=episode_id, with_state=True))),
                             like)

        async def close(episode_id: str) -> None:
            try:
                await self._admin(_Close(params=self._params(episode_id=episode_id)))
            except ServerStartError:
                pass  # the process is gone: nothing is left to close

        async with created_by_first_request(self.client, self.tools, self.token, source, "pipe", create=create,
                                            read=read, close_with_state=close_with_state, close=close) as episode:
            yield episode

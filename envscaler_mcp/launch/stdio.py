"""stdio servers: a process per episode (what desktop clients do), started ahead of need.

Each episode gets a fresh server process of its own, as before; what changes is when it starts. With
`prestart` > 0 that many processes are kept started and connected in the background (process start, imports
and the protocol handshake: about a second each), and an episode takes a ready one and sets its state through
the stdio admin request (`envscaler/admin/reset`, with the process's own token) instead of a state file.
A process serves one episode and is then stopped; another is started in its place.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import Client, MCPError, StdioServerParameters

from envscaler_mcp._json import State
from envscaler_mcp.errors import ServerStartError
from envscaler_mcp.launch.episodes import (
    AdminParams,
    AdminReset,
    AdminResult,
    ClientEpisode,
    Episode,
    WarmCache,
    stdio_get_state,
)
from envscaler_mcp.launch.launched import LaunchedServer, log_tail
from envscaler_mcp.launch.lines import line_client
from envscaler_mcp.launch.server_process import (
    ADMIN_TOKEN_ENV,
    DEFAULT_LIMITS,
    ServerCommand,
    ServerLimits,
    read_report,
    server_command,
    server_env,
)
from envscaler_mcp.launch.server_zygote import start_server_process
from envscaler_mcp.launch.statefiles import StateFileWriter
from envscaler_mcp.launch.target import ServerDir
from envscaler_mcp.render.cache import mark_used


@dataclass
class _Started:
    """A started, connected server process waiting for its episode."""

    client: Client
    token: str
    number: int
    done: anyio.Event


class StdioServer(LaunchedServer):
    """A process per episode over stdio; `prestart` processes kept started ahead (inside `running()`)."""

    transport = "stdio"

    def __init__(self, server: ServerDir, workdir: Path, extra_args: list[str], client_timeout: float,
                 isolation: bool = True, warm: bool = True, prestart: int = 0,
                 limits: ServerLimits = DEFAULT_LIMITS) -> None:
        self.server_dir = server
        self.warm = WarmCache(warm, target_id=f"stdio:{server.path}")
        self.workdir = workdir
        self.extra_args = extra_args
        self.client_timeout = client_timeout
        self.os_isolation = isolation
        self.prestart = prestart
        self.limits = limits
        self._count = itertools.count()
        self._ready: MemoryObjectReceiveStream[_Started | ServerStartError] | None = None
        self.state_files = StateFileWriter(workdir / "states")

    def _params(self, n: int, token: str, args: list[str],
                readable: list[Path]) -> tuple[ServerCommand, StdioServerParameters, Path]:
        assert self.server_dir is not None
        report = self.workdir / f"isolation-{n}.json"
        command = server_command(self.server_dir, report, self.os_isolation, [*self.extra_args, *args], read=readable,
                                 limits=self.limits)
        argv = command.argv
        return command, StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(self.server_dir.path),
                                              env=server_env(self.server_dir, token)), report

    @asynccontextmanager
    async def _process(self, n: int, token: str, args: list[str], readable: list[Path]) -> AsyncIterator[Client]:
        assert self.server_dir is not None
        mark_used(self.server_dir.path)  # each process starts from the folder: a long run keeps it out of pruning
        command, params, report = self._params(n, token, args, readable)
        log_path = self.workdir / f"stderr-{n}.log"
        server = self.server_dir

        async def start() -> Process:
            return await start_server_process(server, command, dict(params.env or {}),
                                              cwd=str(server.path), pipes=True, log_file=errlog,
                                              token_env=ADMIN_TOKEN_ENV)

        with open(log_path, "w", encoding="utf-8") as errlog:
            async with AsyncExitStack() as stack:
                try:
                    client = await stack.enter_async_context(
                        Client(line_client(params, errlog, start, write_timeout_s=self.client_timeout),
                               read_timeout_seconds=self.client_timeout, **self.warm.client_options()))
                except Exception as exc:
                    raise ServerStartError(f"the stdio server did not start: {exc}\n{log_tail(log_path)}") from exc
                self.isolation = read_report(report, self.limits) or self.isolation
                yield client

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Keep `prestart` processes started while the server is in use (nothing to do when it is 0)."""
        if self.prestart <= 0:
            yield
            return
        send, receive = anyio.create_memory_object_stream[_Started | ServerStartError](0)
        async with anyio.create_task_group() as tg, send, receive:
            self._ready = receive
            for _ in range(self.prestart):
                tg.start_soon(self._keep_started, send.clone())
            try:
                yield
            finally:
                self._ready = None
                tg.cancel_scope.cancel()

    async def _keep_started(self, send: MemoryObjectSendStream[_Started | ServerStartError]) -> None:
        """Start a process, wait until an episode takes it and is done with it, stop it; again. A process that
        fails to start is handed on as its error (the episode that takes it fails), then the next is started."""
        async with send:
            while True:
                n, token = next(self._count), secrets.token_hex(16)
                try:
                    async with self._process(n, token, [], []) as client:
                        started = _Started(client, token, n, anyio.Event())
                        await send.send(started)
                        await started.done.wait()
                except ServerStartError as exc:
                    await send.send(exc)

    @asynccontextmanager
    async def episode(self, initial_state: State | None = None, *,
                      scenario_id: str | None = None) -> AsyncIterator[Episode]:
        if self._ready is None:
            async with self._fresh(initial_state, scenario_id) as ep:
                yield ep
            return
        taken = await self._ready.receive()
        if isinstance(taken, ServerStartError):
            raise taken
        try:
            if initial_state is not None or scenario_id:
                params = AdminParams(token=taken.token, state=initial_state,
                                     scenario_id=None if initial_state is not None else scenario_id)
                try:
                    await taken.client.session.send_request(AdminReset(params=params), AdminResult)
                except MCPError as exc:
                    raise ServerStartError(f"setting the episode's state failed: {exc}") from exc
            client, token = taken.client, taken.token
            yield ClientEpisode(client, episode_id=f"stdio-{taken.number}", transport="stdio",
                          state_reader=lambda: stdio_get_state(client, token), warm=self.warm)
        finally:
            taken.done.set()

    @asynccontextmanager
    async def _fresh(self, initial_state: State | None, scenario_id: str | None) -> AsyncIterator[Episode]:
        """A process started for this episode, its state handed over in a file (--state: one file per distinct
        state, read by the server itself) or by scenario id."""
        n, token = next(self._count), secrets.token_hex(16)
        args: list[str] = []
        readable: list[Path] = []
        if initial_state is not None:
            state_file = self.state_files.path_for(initial_state)
            args, readable = ["--state", str(state_file)], [state_file]
        elif scenario_id:
            args = ["--scenario", scenario_id]
        async with self._process(n, token, args, readable) as client:
            yield ClientEpisode(client, episode_id=f"stdio-{n}", transport="stdio",
                          state_reader=lambda: stdio_get_state(client, token), warm=self.warm)

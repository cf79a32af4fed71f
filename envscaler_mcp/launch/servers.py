"""Start generated MCP servers and open isolated episodes on them (external servers: launch/external.py).

`launch_server(target, transport)`:
* "http": one server process; each episode is created through the admin REST API and reached at
  its own URL. Cheap episodes, the default.
* "stdio": one process per episode (state handed over with --state, read back with the stdio admin
  request). What desktop clients do; about 1 s per episode.
* "memory" (launch/memory.py): the generated package is imported into this process, reached with `Client(server)`.
  For tests and trusted code only: the environment code runs inside the caller's process.
"""

from __future__ import annotations

import itertools
import json
import secrets
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Literal, TypedDict

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from envscaler_mcp._json import EncodedCache, State
from envscaler_mcp.errors import ServerStartError, UsageError
from envscaler_mcp.isolation.report import IsolationReport
from envscaler_mcp.launch.confine import loopback_listener, read_report, server_command, server_env
from envscaler_mcp.launch.episodes import Episode, WarmCache, stdio_get_state
from envscaler_mcp.launch.statefiles import StateFileWriter
from envscaler_mcp.launch.target import ServerDir, Target, resolve_target
from envscaler_mcp.scenario.models import Scenario

Transport = Literal["http", "stdio", "memory"]
MCP_CONNECTIONS = 32  # HTTP connections from the harness to one server


class LaunchedServer:
    """A running server (or the recipe for one): opens episodes with `episode(initial_state)`.

    `isolation` is the IsolationReport of its server processes (None until one has started)."""

    transport: str
    server_dir: ServerDir | None = None
    isolation: IsolationReport | None = None
    warm: WarmCache = WarmCache(enabled=False)

    def episode(self, initial_state: State | None = None, *,
                scenario_id: str | None = None) -> AbstractAsyncContextManager[Episode]:
        """An isolated episode at `initial_state` (None: the default state; or a bundled scenario's)."""
        raise NotImplementedError


def _server_args(call_timeout: float | None, max_memory_mb: int | None) -> list[str]:
    args = ["--call-timeout", str(call_timeout or 0)]
    if max_memory_mb:
        args += ["--max-memory-mb", str(max_memory_mb)]
    return args


def _log_tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class CreatedEpisode(TypedDict):
    """What the admin plane answers when it creates an episode."""

    episode_id: str
    path: str


class HttpServer(LaunchedServer):
    """One HTTP server process; episodes through the admin API."""

    transport = "http"
    pid: int | None = None
    log_path: Path | None = None

    def __init__(self, server: ServerDir, url: str, token: str, client_timeout: float, warm: bool = True,
                 state_files: StateFileWriter | None = None) -> None:
        self.server_dir = server
        self.warm = WarmCache(warm, target_id=url)
        self._encoded = EncodedCache(size=256 if warm else 0)
        self.state_files = state_files
        self.url = url
        self.token = token
        self.client_timeout = client_timeout
        self.admin = httpx2.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"},
                                        timeout=client_timeout)
        # One pooled client for every episode's MCP traffic: building an httpx client per episode
        # (TLS context included) costs tens of milliseconds. A few dozen connections keep one server busy;
        # more only cost time, as the pool checks every idle connection on each request. Requests wait for
        # a free connection without a limit of their own (the harness's per-call deadline applies).
        self.mcp_http = httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=max(300.0, client_timeout), pool=None),
                                           limits=httpx2.Limits(max_connections=MCP_CONNECTIONS,
                                                                max_keepalive_connections=MCP_CONNECTIONS))

    async def create_episode(self, state: State | None, scenario_id: str | None) -> CreatedEpisode:
        """POST /admin/episodes; returns {"episode_id", "path"}. A state goes as a state file the server reads
        (written once per state) when the server was started with a state folder, else in the request."""
        body = json.dumps({"scenario_id": scenario_id} if scenario_id else {}).encode()
        if state is not None and self.state_files is not None:
            body = json.dumps({"state_file": self.state_files.name_for(state)}).encode()
        elif state is not None:  # the state's JSON is remembered: a scenario's state is sent for every episode
            body = body[:-1] + (b", " if len(body) > 2 else b"") + b'"state": ' + self._encoded.encode(state) + b"}"
        try:
            response = await self.admin.post("/admin/episodes", content=body,
                                             headers={"Content-Type": "application/json"})
        except httpx2.HTTPError as exc:
            tail = _log_tail(self.log_path) if self.log_path else ""
            raise ServerStartError(f"the HTTP server at {self.url} did not answer ({type(exc).__name__}: {exc}); "
                                   f"it may have crashed:\n{tail}") from exc
        if response.status_code != 201:
            raise ServerStartError(f"creating an episode failed ({response.status_code}): {response.text}")
        data = response.json()
        return CreatedEpisode(episode_id=str(data["episode_id"]), path=str(data["path"]))

    async def read_state(self, episode_id: str) -> State:
        """GET /admin/episodes/{id}/state."""
        response = await self.admin.get(f"/admin/episodes/{episode_id}/state")
        if response.status_code != 200:
            raise ServerStartError(f"reading episode {episode_id} failed ({response.status_code}): {response.text}")
        return dict(response.json()["state"])

    @asynccontextmanager
    async def episode(self, initial_state: State | None = None, *,
                      scenario_id: str | None = None) -> AsyncIterator[Episode]:
        created = await self.create_episode(initial_state, scenario_id)
        episode_id = created["episode_id"]
        try:
            transport = streamable_http_client(self.url + created["path"], http_client=self.mcp_http,
                                               terminate_on_close=False)
            async with Client(transport, read_timeout_seconds=self.client_timeout,
                              **self.warm.client_options()) as client:
                yield Episode(client, episode_id=episode_id, transport="http",
                              state_reader=lambda: self.read_state(episode_id), warm=self.warm)
        finally:
            with anyio.CancelScope(shield=True):
                try:
                    await self.admin.delete(f"/admin/episodes/{episode_id}")
                except httpx2.HTTPError:
                    pass


class StdioServer(LaunchedServer):
    """A process per episode over stdio."""

    transport = "stdio"

    def __init__(self, server: ServerDir, workdir: Path, extra_args: list[str], client_timeout: float,
                 isolation: bool = True, warm: bool = True) -> None:
        self.server_dir = server
        self.warm = WarmCache(warm, target_id=f"stdio:{server.path}")
        self.workdir = workdir
        self.extra_args = extra_args
        self.client_timeout = client_timeout
        self.os_isolation = isolation
        self._count = itertools.count()
        self.state_files = StateFileWriter(workdir / "states")

    @asynccontextmanager
    async def episode(self, initial_state: State | None = None, *,
                      scenario_id: str | None = None) -> AsyncIterator[Episode]:
        assert self.server_dir is not None
        n = next(self._count)
        args = list(self.extra_args)
        report = self.workdir / f"isolation-{n}.json"
        readable: list[Path] = []
        if initial_state is not None:  # one file per distinct state, read by the server itself
            state_file = self.state_files.path_for(initial_state)
            args += ["--state", str(state_file)]
            readable = [state_file]
        elif scenario_id:
            args += ["--scenario", scenario_id]
        token = secrets.token_hex(16)
        command = server_command(self.server_dir, report, self.os_isolation, args, read=readable)
        params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(self.server_dir.path),
                                       env=server_env(self.server_dir, token))
        log_path = self.workdir / f"stderr-{n}.log"
        with open(log_path, "w", encoding="utf-8") as errlog:
            async with AsyncExitStack() as stack:
                try:
                    client = await stack.enter_async_context(
                        Client(stdio_client(params, errlog=errlog), read_timeout_seconds=self.client_timeout,
                               **self.warm.client_options()))
                except Exception as exc:
                    raise ServerStartError(f"the stdio server did not start: {exc}\n{_log_tail(log_path)}") from exc
                self.isolation = read_report(report) or self.isolation
                yield Episode(client, episode_id=f"stdio-{n}", transport="stdio",
                              state_reader=lambda: stdio_get_state(client, token), warm=self.warm)


async def _start_http(server: ServerDir, workdir: Path, extra_args: list[str], startup_timeout: float,
                      client_timeout: float, isolation: bool, warm: bool) -> tuple[HttpServer, anyio.abc.Process]:
    token = secrets.token_hex(16)
    log_path = workdir / "http-server.log"
    report = workdir / "isolation.json"
    states = workdir / "states"
    states.mkdir(exist_ok=True)
    listener = loopback_listener()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    args = server_command(server, report, isolation,
                          ["--http", "--listen-fd", str(listener.fileno()), "--state-dir", str(states), *extra_args],
                          read=[states])
    try:
        with open(log_path, "w", encoding="utf-8") as errlog:  # the child keeps its own copy of the descriptor
            process = await anyio.open_process(args, cwd=str(server.path), env=server_env(server, token),
                                               stdin=None, stdout=errlog, stderr=errlog,
                                               pass_fds=[listener.fileno()])
    finally:
        listener.close()  # the server holds it now
    http = HttpServer(server, url, token, client_timeout, warm, state_files=StateFileWriter(states))
    http.pid = process.pid
    http.log_path = log_path
    try:
        await _wait_ready(http, process, startup_timeout)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await http.admin.aclose()
            await http.mcp_http.aclose()
            await _stop(process)
        raise
    http.isolation = read_report(report)
    return http, process


async def _wait_ready(http: HttpServer, process: anyio.abc.Process, startup_timeout: float) -> None:
    """Until the admin API answers. Connections queue on the listening socket from the start, so each
    attempt waits for the server to serve it; a server that exits fails at once."""
    deadline = time.monotonic() + startup_timeout
    while True:
        if process.returncode is not None:
            raise ServerStartError(f"the HTTP server exited with code {process.returncode} before it was "
                                   f"ready:\n{_log_tail(http.log_path) if http.log_path else ''}")
        if time.monotonic() > deadline:
            raise ServerStartError(f"the HTTP server was not ready after {startup_timeout:g} s:\n"
                                   f"{_log_tail(http.log_path) if http.log_path else ''}")
        try:
            response = await http.admin.get("/admin/episodes", timeout=max(0.1, deadline - time.monotonic()))
        except httpx2.HTTPError:
            await anyio.sleep(0.05)  # the server closed the queued connection: it died or is dying
            continue
        if response.status_code == 200:
            return
        raise ServerStartError(f"the HTTP server answered {response.status_code} while starting: {response.text}")


async def _stop(process: anyio.abc.Process) -> None:
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            process.terminate()
            with anyio.move_on_after(5):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()


@asynccontextmanager
async def launch_server(target: Target, transport: Transport = "http", *,
                        scenarios: Sequence[Scenario] | None = None, call_timeout: float | None = 10.0,
                        max_memory_mb: int | None = None, startup_timeout: float = 60.0,
                        client_timeout: float = 120.0, isolation: bool = True,
                        warm: bool = True) -> AsyncIterator[LaunchedServer]:
    """Start a generated server for `target` (env id, server folder or EnvSkeleton) and yield it.

    Open episodes with `async with server.episode(state) as ep`. The HTTP process is killed on exit.
    Server processes get an allowlisted environment and run under the OS layers (launch/confine.py);
    `isolation=False` leaves the layers out (to measure their cost). With `warm` (the default) episodes
    after the first skip the protocol handshake and `tools/list` (launch/episodes.py WarmCache); every
    episode still has its own server-side state. The memory transport runs the
    environment code in this process: for the bundled catalog and tests only.
    """
    server = resolve_target(target, scenarios)
    extra = _server_args(call_timeout, max_memory_mb)
    if transport == "memory":
        from envscaler_mcp.launch.memory import MemoryServer

        yield MemoryServer(server, call_timeout, warm)
        return
    with tempfile.TemporaryDirectory(prefix="envscaler-launch-") as tmp:
        workdir = Path(tmp)
        if transport == "stdio":
            yield StdioServer(server, workdir, extra, client_timeout, isolation, warm)
        elif transport == "http":
            http, process = await _start_http(server, workdir, extra, startup_timeout, client_timeout, isolation,
                                              warm)
            try:
                yield http
            finally:
                await http.admin.aclose()
                await http.mcp_http.aclose()
                await _stop(process)
        else:
            raise UsageError(f"unknown transport '{transport}': use http, stdio or memory")

"""Start generated MCP servers and open isolated episodes on them (external servers: launch/external.py).

`launch_server(target, transport)`:
* "http": one server process; each episode is created through the admin REST API. Cheap episodes, the
  default. Every episode has its own URL; the harness itself drives them all through one shared client on
  the admin-guarded /admin/mcp, each request naming its episode in `_meta` (warm path).
* "pipe" (launch/pipe.py): one server process over its stdin/stdout serving every episode, each request naming
  its episode; the harness's cheapest path (no HTTP on either side).
* "stdio" (launch/stdio.py): one process per episode (state handed over with --state or the stdio admin
  reset, read back with the stdio admin request), a few started ahead. What desktop clients do.
* "memory" (launch/memory.py): the generated package is imported into this process, reached with `Client(server)`.
  For tests and trusted code only: the environment code runs inside the caller's process.
"""

from __future__ import annotations

import json
import secrets
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypedDict

import anyio
import httpx2
from anyio.abc import Process
from mcp import Client
from mcp.types import JSONRPCMessage, Tool

from envscaler_mcp._choices import EpisodeProcess, Transport
from envscaler_mcp._json import EncodedCache, State, parse_state
from envscaler_mcp.errors import ServerStartError, UsageError
from envscaler_mcp.launch.episodes import (
    ClientEpisode,
    Episode,
    RoutedClient,
    WarmCache,
    all_tools,
    created_by_first_request,
)
from envscaler_mcp.launch.launched import LaunchedServer, log_tail
from envscaler_mcp.launch.loopback_http import LoopbackTransport
from envscaler_mcp.launch.loopback_mcp import loopback_mcp_client
from envscaler_mcp.launch.memory import MemoryServer
from envscaler_mcp.launch.pipe import PipeServer
from envscaler_mcp.launch.requirements import check_requirements
from envscaler_mcp.launch.server_process import (
    ADMIN_TOKEN_ENV,
    DEFAULT_LIMITS,
    ServerLimits,
    loopback_listener,
    read_report,
    server_command,
    server_env,
    serving_pid,
)
from envscaler_mcp.launch.server_zygote import start_server_process
from envscaler_mcp.launch.statefiles import StateFileWriter
from envscaler_mcp.launch.stdio import StdioServer
from envscaler_mcp.launch.target import ServerDir, Target, resolve_launch
from envscaler_mcp.render.cache import in_render_cache
from envscaler_mcp.render.codecache import write_code_cache
from envscaler_mcp.scenario.models import Scenario

MCP_CONNECTIONS = 32  # HTTP connections from the harness to one server
_STATE_PREFIX = b'{"state": '  # how a generated server starts its state answer


def _server_args(call_timeout: float | None) -> list[str]:
    return ["--call-timeout", str(call_timeout or 0)]


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
        self.shared: Client | None = None  # the one client of every episode (connect_shared), on the warm path
        self.tools: list[Tool] | None = None  # the tool list, listed once by the shared client
        self._encoded = EncodedCache(size=256 if warm else 0)
        self.state_files = state_files
        self.url = url
        self.token = token
        self.client_timeout = client_timeout
        # Both clients reach the server through LoopbackTransport (launch/loopback_http.py): keep-alive connections
        # to one local server without the pool's per-request checks, each request one write.
        self._admin_connections = LoopbackTransport()
        self.admin = httpx2.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"},
                                        timeout=client_timeout, transport=self._admin_connections)
        self._admin_base = httpx2.Request("GET", url)  # the server's address, and the request errors name
        self._admin_heads = [(b"host", self._admin_base.url.netloc), (b"authorization", f"Bearer {token}".encode())]
        # One pool of connections for every episode's MCP traffic: a few dozen keep one server busy. Requests wait
        # for a free connection without a limit of their own (the harness's per-call deadline applies). They carry
        # the admin token: the shared endpoint (/admin/mcp) belongs to the admin plane.
        self.mcp_connections = LoopbackTransport(max_connections=MCP_CONNECTIONS)
        self._mcp_read_timeout = max(300.0, client_timeout)
        self.on_post: Callable[[JSONRPCMessage], None] | None = None  # sees each MCP message as it is POSTed

    def _mcp_transport(self, path: str) -> Any:
        """The MCP client transport to one of the server's endpoints (launch/loopback_mcp.py: Streamable HTTP
        POSTs over `mcp_connections`, without httpx's request objects)."""
        return loopback_mcp_client(self.mcp_connections, self.url + path, {"Authorization": f"Bearer {self.token}"},
                                   connect_timeout=30.0, read_timeout=self._mcp_read_timeout, on_post=self._posted)

    def _posted(self, message: JSONRPCMessage) -> None:
        if self.on_post is not None:
            self.on_post(message)

    @asynccontextmanager
    async def connect_shared(self) -> AsyncIterator[None]:
        """Open the client every episode shares (warm path): one protocol handshake and one tool list for the
        server's lifetime, each request naming its episode in `_meta` on the admin-guarded /admin/mcp."""
        if not self.warm.enabled:
            yield
            return
        transport = self._mcp_transport("/admin/mcp")
        # One client for the server's lifetime, listing the tools once and keeping the list (RoutedClient): the
        # SDK's response cache would only deep-copy it into a store nothing reads.
        async with Client(transport, read_timeout_seconds=self.client_timeout, cache=None) as client:
            self.shared, self.tools = client, await all_tools(client)
            try:
                yield
            finally:
                self.shared = None

    async def _admin_request(self, method: bytes, path: str, body: bytes = b"") -> tuple[int, bytes]:
        """(status, body) of one admin request, through the admin client's connections without httpx's request
        and response objects (the harness makes two per episode); failures raise httpx's errors."""
        heads = [*self._admin_heads, (b"content-length", str(len(body)).encode("ascii"))]
        if body:
            heads.append((b"content-type", b"application/json"))
        response, content = await self._admin_connections.exchange(
            self._admin_base, method, path.encode("ascii"), heads, body, self.client_timeout, self.client_timeout)
        return response.status_code, content

    def _source(self, state: State | None, scenario_id: str | None) -> dict[str, str] | None:
        """What an episode is created from, as a small JSON object ({} for the server's default state), or None
        when the state must go in the request itself (a server without a state folder)."""
        if state is not None:
            return None if self.state_files is None else {"state_file": self.state_files.name_for(state)}
        return {"scenario_id": scenario_id} if scenario_id else {}

    async def create_episode(self, state: State | None, scenario_id: str | None,
                             episode_id: str | None = None) -> CreatedEpisode:
        """POST /admin/episodes; returns {"episode_id", "path"}. A state goes as a state file the server reads
        (written once per state) when the server was started with a state folder, else in the request.
        `episode_id`: the id to give it (32 hex digits), else the server's choice."""
        source = self._source(state, scenario_id)
        chosen = {"episode_id": episode_id} if episode_id else {}
        base = source if source is not None else {"scenario_id": scenario_id} if scenario_id else {}
        body = json.dumps({**base, **chosen}).encode()
        if source is None:  # the state's JSON is remembered: a scenario's state is sent for every episode
            body = body[:-1] + (b", " if len(body) > 2 else b"") + b'"state": ' + self._encoded.encode(state) + b"}"
        try:
            status, answer = await self._admin_request(b"POST", "/admin/episodes", body)
        except httpx2.HTTPError as exc:
            tail = log_tail(self.log_path) if self.log_path else ""
            raise ServerStartError(f"the HTTP server at {self.url} did not answer ({type(exc).__name__}: {exc}); "
                                   f"it may have crashed:\n{tail}") from exc
        if status != 201:
            raise ServerStartError(f"creating an episode failed ({status}): {answer.decode('utf-8', 'replace')}")
        data = json.loads(answer)
        return CreatedEpisode(episode_id=str(data["episode_id"]), path=str(data["path"]))

    async def read_state(self, episode_id: str) -> State:
        """GET /admin/episodes/{id}/state. The server answers `{"state": <the state's JSON>}`; the state comes
        back as a ParsedState holding that JSON's bytes, which the validators then get as they are."""
        return self._state_answer(await self._admin_request(b"GET", f"/admin/episodes/{episode_id}/state"),
                                  episode_id)

    @staticmethod
    def _state_answer(answer: tuple[int, bytes], episode_id: str, like: State | None = None) -> State:
        status, body = answer
        if status != 200:
            raise ServerStartError(f"reading episode {episode_id} failed ({status}): "
                                   f"{body.decode('utf-8', 'replace')}")
        if body.startswith(_STATE_PREFIX) and body.endswith(b"}"):
            try:
                state = parse_state(body[len(_STATE_PREFIX):-1], like)
            except ValueError:
                state = None
            if state is not None:
                return state
        return dict(json.loads(body)["state"])

    async def close_with_state(self, episode_id: str, like: State | None = None) -> State:
        """DELETE /admin/episodes/{id}?state=1: the final state and the close in one round trip."""
        answer = await self._admin_request(b"DELETE", f"/admin/episodes/{episode_id}?state=1")
        return self._state_answer(answer, episode_id, like)

    @asynccontextmanager
    async def episode(self, initial_state: State | None = None, *,
                      scenario_id: str | None = None) -> AsyncIterator[Episode]:
        source = self._source(initial_state, scenario_id)
        if self.shared is not None and source is not None:
            async with self._routed_episode(initial_state, scenario_id, source) as routed:
                yield routed
            return
        created = await self.create_episode(initial_state, scenario_id)
        episode_id = created["episode_id"]
        closed = False

        async def read_and_close(like: State | None) -> State:
            nonlocal closed
            state = await self.close_with_state(episode_id, like)
            closed = True
            return state

        try:
            if self.shared is not None:
                yield ClientEpisode(RoutedClient(self.shared, episode_id, self.tools), episode_id=episode_id,
                              transport="http", state_reader=lambda: self.read_state(episode_id),
                              final_reader=read_and_close)
                return
            transport = self._mcp_transport(created["path"])
            async with Client(transport, read_timeout_seconds=self.client_timeout,
                              **self.warm.client_options()) as client:
                yield ClientEpisode(client, episode_id=episode_id, transport="http",
                              state_reader=lambda: self.read_state(episode_id), warm=self.warm)
        finally:
            if not closed:
                await self._delete(episode_id)

    @asynccontextmanager
    async def _routed_episode(self, initial_state: State | None, scenario_id: str | None,
                              source: dict[str, str]) -> AsyncIterator[Episode]:
        """An episode on the shared client, created by its first request on /admin/mcp (its `_meta` names the
        state file and holds the token: no POST of its own), or by POST /admin/episodes when its state is read
        before any call."""
        assert self.shared is not None

        async def create(episode_id: str) -> None:
            await self.create_episode(initial_state, scenario_id, episode_id)

        async with created_by_first_request(self.shared, self.tools, self.token, source, "http", create=create,
                                            read=self.read_state, close_with_state=self.close_with_state,
                                            close=self._delete) as episode:
            yield episode

    async def _delete(self, episode_id: str) -> None:
        if not self.admin.is_closed:  # closed: the server was stopped (a run's pool restarts it)
            with anyio.CancelScope(shield=True):
                try:
                    await self._admin_request(b"DELETE", f"/admin/episodes/{episode_id}")
                except httpx2.HTTPError:
                    pass


async def _start_http(server: ServerDir, workdir: Path, extra_args: list[str], startup_timeout: float,
                      client_timeout: float, isolation: bool, warm: bool,
                      limits: ServerLimits) -> tuple[HttpServer, Process]:
    token = secrets.token_hex(16)
    log_path = workdir / "http-server.log"
    report = workdir / "isolation.json"
    states = workdir / "states"
    states.mkdir(exist_ok=True)
    listener = loopback_listener()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    args = server_command(server, report, isolation,
                          ["--http", "--listen-fd", str(listener.fileno()), "--state-dir", str(states), *extra_args],
                          read=[states], limits=limits)
    try:
        with open(log_path, "w", encoding="utf-8") as errlog:  # the child keeps its own copy of the descriptor
            process = await start_server_process(server, args, server_env(server, token), cwd=str(server.path),
                                                 pipes=False, log_file=errlog, pass_fds=[listener.fileno()],
                                                 token_env=ADMIN_TOKEN_ENV)
    finally:
        listener.close()  # the server holds it now
    http = HttpServer(server, url, token, client_timeout, warm, state_files=StateFileWriter(states))
    http.pid = process.pid  # the serving process once it is up (below)
    http.log_path = log_path
    try:
        await _wait_ready(http, process, startup_timeout)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await http.admin.aclose()
            await http.mcp_connections.aclose()
            await _stop(process)
        raise
    http.isolation = read_report(report, limits)
    http.pid = serving_pid(process.pid)
    return http, process


async def _wait_ready(http: HttpServer, process: Process, startup_timeout: float) -> None:
    """Until the admin API answers. Connections queue on the listening socket from the start, so each
    attempt waits for the server to serve it; a server that exits fails at once."""
    deadline = time.monotonic() + startup_timeout
    while True:
        if process.returncode is not None:
            raise ServerStartError(f"the HTTP server exited with code {process.returncode} before it was "
                                   f"ready:\n{log_tail(http.log_path) if http.log_path else ''}")
        if time.monotonic() > deadline:
            raise ServerStartError(f"the HTTP server was not ready after {startup_timeout:g} s:\n"
                                   f"{log_tail(http.log_path) if http.log_path else ''}")
        try:
            response = await http.admin.get("/admin/episodes", timeout=max(0.1, deadline - time.monotonic()))
        except httpx2.HTTPError:
            await anyio.sleep(0.05)  # the server closed the queued connection: it died or is dying
            continue
        if response.status_code == 200:
            return
        raise ServerStartError(f"the HTTP server answered {response.status_code} while starting: {response.text}")


async def _stop(process: Process) -> None:
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
                        warm: bool = True, stdio_prestart: int = 2, max_cpu_s: int | None = None,
                        max_threads: int | None = None, episode_process: EpisodeProcess = "auto",
                        answer_grace_s: float | None = None) -> AsyncIterator[LaunchedServer]:
    """Start a generated server for `target` (env id, server folder or EnvSkeleton) and yield it.

    Open episodes with `async with server.episode(state) as ep`. The HTTP process is killed on exit.
    Server processes get an allowlisted environment and run under the OS layers (launch/server_process.py);
    `isolation=False` leaves the layers out (to measure their cost). Each server process has hard limits
    (launch/server_process.py ServerLimits; `max_memory_mb`, `max_cpu_s`, `max_threads` replace the defaults). With `warm` (the default) episodes
    skip the protocol handshake and `tools/list` (launch/episodes.py WarmCache): over HTTP every episode
    goes through the server's one shared client, over stdio `stdio_prestart` processes are started ahead;
    every episode still has its own server-side state (its own process on stdio). `warm=False` is the
    path without these (a client, a handshake and a tool list per episode). The memory transport runs the
    environment code in this process: for the bundled catalog and tests only.

    `episode_process`: "fork" runs every episode in a process of its own, forked from a per-server zygote
    (the generated runtime's forked.py), so that one episode's code cannot reach another's state or the admin
    token; "shared" keeps a server's episodes in its one process; "auto" (the default) forks for every
    environment that is not hand-authored (launch/target.py `trusted_origin`). The memory transport always
    shares the caller's process (and refuses "fork"). `answer_grace_s`: with "fork", how long beyond twice the
    call timeout the server waits for an episode's process before giving up on it (default 30 s; tests set it
    short to see a hung episode end).
    """
    if transport == "memory" and episode_process == "fork":
        raise UsageError("the memory transport runs every episode in this process; use pipe, http or stdio for "
                         "--episode-process fork")
    server, trusted = resolve_launch(target, scenarios)
    fork = episode_process == "fork" or (episode_process == "auto" and not trusted)
    check_requirements(server)
    extra = _server_args(call_timeout)
    limits = ServerLimits(memory_mb=max_memory_mb or DEFAULT_LIMITS.memory_mb,
                          cpu_s=max_cpu_s or DEFAULT_LIMITS.cpu_s, threads=max_threads or DEFAULT_LIMITS.threads,
                          fork_episodes=fork, answer_grace_s=answer_grace_s)
    if transport == "memory":
        yield MemoryServer(server, call_timeout, warm)
        return
    # its episode zygote compiles the environment module: once per source, not at every start (a folder of the
    # render cache had its code compiled before it was put in place, and is never changed after)
    if fork and not in_render_cache(server.path):
        write_code_cache(server.path, server.package)
    with tempfile.TemporaryDirectory(prefix="envscaler-launch-") as tmp:
        workdir = Path(tmp)
        if transport == "stdio":
            stdio = StdioServer(server, workdir, extra, client_timeout, isolation, warm,
                                prestart=stdio_prestart if warm else 0, limits=limits)
            async with stdio.running():
                yield stdio
        elif transport == "pipe":
            pipe = PipeServer(server, workdir, extra, client_timeout, isolation, limits=limits)
            async with pipe.running():
                yield pipe
        elif transport == "http":
            http, process = await _start_http(server, workdir, extra, startup_timeout, client_timeout, isolation,
                                              warm, limits)
            try:
                async with http.connect_shared():
                    yield http
            finally:
                await http.admin.aclose()
                await http.mcp_connections.aclose()
                await _stop(process)
        else:
            raise UsageError(f"unknown transport '{transport}': use pipe, http, stdio or memory")

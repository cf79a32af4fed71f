"""The servers of a run: one per environment, started when its first episode needs it, stopped when its last
episode is done, restarted when one stops answering.

A run of a 1,000-environment catalog therefore holds only the servers of the environments whose episodes are
under way (episodes run in the order of their environments, `--concurrency` at a time), not 1,000 at once.

A shared HTTP server that crashes would otherwise turn every later episode of its environment into an
infra error. When an episode fails at the connection level (refused, reset, closed) or the server stops
answering (a ServerFault from a watchdog, including a deadline on opening the episode), the pool restarts
that environment's server (once, however many episodes noticed it) and the episode's infra retry runs on
the new one. A server that cannot be restarted is marked down: that environment's remaining episodes fail
at once as infrastructure errors, and the run goes on with the others.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import httpx2
from mcp import MCPError
from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from envscaler_mcp._json import State
from envscaler_mcp.errors import OutputTooLarge, ServerFault
from envscaler_mcp.harness.faults import describe
from envscaler_mcp.harness.source import EpisodeSource, has_admin_plane
from envscaler_mcp.isolation.report import IsolationReport
from envscaler_mcp.launch.episodes import Episode

# A client-side timeout or a closed connection: the server stopped answering.
_GONE_CODES = {REQUEST_TIMEOUT, CONNECTION_CLOSED}


class _Slot:
    """One environment's current server and the events that restart or stop it."""

    def __init__(self) -> None:
        self.source: EpisodeSource | None = None
        self.ready = anyio.Event()
        self.restart = anyio.Event()
        self.stop = anyio.Event()
        self.restarts = 0
        self.down: str | None = None  # why the server is gone for good (a restart failed)
        self.isolation: IsolationReport | None = None  # of its last server, kept once it is stopped


class SourcePool:
    """Holds each environment's server in its own task (anyio exits a context where it was entered)."""

    def __init__(self, items: Mapping[str, Callable[[], AbstractAsyncContextManager[Any]]],
                 uses: Mapping[str, int] | None, tg: anyio.abc.TaskGroup) -> None:
        self._items, self._tg = items, tg
        self._left = dict(uses) if uses is not None else None
        self._slots: dict[str, _Slot] = {}
        self._release = anyio.Event()

    def _slot(self, key: str) -> _Slot:
        """`key`'s slot, its server starting now if this is the first time it is asked for."""
        slot = self._slots.get(key)
        if slot is None:
            if key not in self._items:
                raise KeyError(key)
            slot = self._slots[key] = _Slot()
            self._tg.start_soon(self._hold, key, self._items[key])
        return slot

    async def _hold(self, key: str, open_source: Callable[[], AbstractAsyncContextManager[Any]]) -> None:
        slot = self._slots[key]
        started = False
        while True:
            try:
                async with open_source() as source:
                    slot.source, started = source, True
                    slot.ready.set()
                    await _first(self._release, slot.restart, slot.stop)
                    report = getattr(source, "isolation", None)
                    slot.isolation = report if isinstance(report, IsolationReport) else slot.isolation
            except Exception as exc:
                if not started:
                    raise  # the first start failed: the run cannot go on, say why
                slot.down = f"the {key} server could not be restarted ({describe(exc)})"
                slot.source = None
                slot.ready.set()
                return
            if self._release.is_set() or slot.stop.is_set():
                slot.source = None
                return
            slot.restarts += 1

    def prepare(self, key: str) -> None:
        """Start `key`'s server now, without waiting for it (its episodes come next)."""
        self._slot(key)

    def finished(self, key: str) -> None:
        """One of `key`'s episodes is done: after its last one (of the `uses` given), its server stops."""
        if self._left is None or key not in self._left:
            return
        self._left[key] -= 1
        if self._left[key] <= 0 and key in self._slots:
            self._slots[key].stop.set()

    def running(self) -> int:
        """How many servers are up now."""
        return sum(1 for slot in self._slots.values() if slot.source is not None)

    async def restart(self, key: str, failed: EpisodeSource) -> None:
        """Restart `key`'s server if `failed` is still the current one, then wait until it is ready."""
        slot = self._slots[key]
        if slot.source is failed:  # the first to notice asks for the restart; later ones just wait
            slot.source = None
            slot.ready, stop = anyio.Event(), slot.restart
            slot.restart = anyio.Event()
            stop.set()
        await slot.ready.wait()

    def source(self, key: str) -> EpisodeSource:
        """An EpisodeSource that always uses the environment's current server (started on first use)."""
        if key not in self._items:
            raise KeyError(key)
        return PooledSource(self, key)

    def restarts(self, key: str) -> int:
        """How many times `key`'s server was restarted."""
        slot = self._slots.get(key)
        return slot.restarts if slot is not None else 0

    def isolation(self, key: str | None = None) -> dict[str, IsolationReport]:
        """Per environment (only `key`'s when given): the isolation of its server processes, where one has
        started and said so."""
        slots = self._slots.items() if key is None else [(key, self._slots[key])] if key in self._slots else []
        reports = {key: getattr(slot.source, "isolation", None) or slot.isolation for key, slot in slots}
        return {key: report for key, report in reports.items() if isinstance(report, IsolationReport)}


async def _first(*events: anyio.Event) -> None:
    """Return as soon as one of the events is set."""
    async with anyio.create_task_group() as tg:
        for event in events:
            tg.start_soon(_wait_then_cancel, event, tg.cancel_scope)


async def _wait_then_cancel(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


@asynccontextmanager
async def open_pool(
    items: Mapping[str, Callable[[], AbstractAsyncContextManager[Any]]], uses: Mapping[str, int] | None = None,
) -> AsyncIterator[SourcePool]:
    """A pool of the servers of `items` (environment -> how to start its server), none started yet: each starts
    when an episode first asks for it and, with `uses` (environment -> episodes to run), stops after its last
    episode is `finished`; all still up stop on exit."""
    async with anyio.create_task_group() as tg:
        pool = SourcePool(items, uses, tg)
        try:
            yield pool
        finally:
            pool._release.set()


_GONE = (
    ServerFault,
    OSError,
    httpx2.TransportError,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.EndOfStream,
)


def _server_gone(exc: BaseException) -> bool:
    """A connection-level failure (refused, reset, closed stream): the server process is gone or hung."""
    if isinstance(exc, BaseExceptionGroup):
        return any(_server_gone(e) for e in exc.exceptions)
    if isinstance(exc, OutputTooLarge):  # the server answered, too much: it is not gone
        return False
    if isinstance(exc, MCPError) and exc.code in _GONE_CODES:
        return True
    return isinstance(exc, _GONE) or (exc.__cause__ is not None and _server_gone(exc.__cause__))


class PooledSource:
    """EpisodeSource facade over a pool slot."""

    def __init__(self, pool: SourcePool, key: str) -> None:
        self._pool, self._key = pool, key

    @property
    def has_admin(self) -> bool:
        slot = self._pool._slots.get(self._key)
        current = slot.source if slot is not None else None
        return has_admin_plane(current) if current is not None else True

    async def launched(self) -> EpisodeSource | None:
        """The source behind this slot once it has started (None when it is down)."""
        slot = self._pool._slot(self._key)
        await slot.ready.wait()
        return slot.source

    @asynccontextmanager
    async def episode(self, initial_state: State | None = None) -> AsyncIterator[Episode]:
        slot = self._pool._slot(self._key)
        await slot.ready.wait()
        source = slot.source
        if source is None:
            raise ServerFault(slot.down or f"the {self._key} server is not running")
        manager = source.episode(initial_state)
        try:  # a server that does not answer runs into the launch client's own timeouts
            ep = await manager.__aenter__()
        except Exception as exc:
            if _server_gone(exc):
                await self._pool.restart(self._key, source)
            raise
        try:
            yield ep
        except BaseException as exc:
            if isinstance(exc, Exception) and _server_gone(exc):  # restart first: closing a hung episode would wait
                await self._pool.restart(self._key, source)
            if not await manager.__aexit__(type(exc), exc, exc.__traceback__):
                raise
        else:
            await manager.__aexit__(None, None, None)

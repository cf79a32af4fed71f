"""Work spread over local worker processes (`--workers N`): the driver's side.

Each worker is `python -m envscaler_mcp.adapters.worker_main`, started in a session of its own (Ctrl-C reaches
only the driver, which stops the workers itself) and spoken to in JSON lines over its stdin and stdout: the
standard library and anyio only, no pickling (what crosses is the same JSON a run folder holds), and a worker
whose driver is gone reads end-of-file and stops with its servers, however the driver ended. multiprocessing
was not used: its fork start method copies an event loop with threads; its spawn method re-imports `__main__`.

Items are handed out by environment (a `key`): a free worker takes more of an environment it already has, else
the next environment nobody has, else (fewer environments than workers with work) a share of the environment
with the most items left; so each environment's server starts in as few workers as possible. When a worker is
handed an environment's last item, it is told to `prepare` the next environment nobody has (its server starts
while the last items run, as a one-process run starts the next server ahead). A worker is told to `release` an
environment when it holds none of its items and none is queued: it stops that server. A worker
that dies (its stdout closes) costs only its items in flight: they are queued again for the others (and a
replacement worker starts, up to as many as were asked for).
"""

from __future__ import annotations

import inspect
import json
import os
import sys
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from envscaler_mcp import errors
from envscaler_mcp.errors import EnvScalerError, UsageError

WORKER_MODULE = "envscaler_mcp.adapters.worker_main"
_MAX_LINE = 1 << 31  # a message is one line; an episode's record may be tens of megabytes
_STOP_S = 30.0  # how long a worker may take to stop its servers after its stdin closes, before it is killed


@dataclass
class WorkItem:
    """One unit of work: `key` is its environment (its server), `payload` what the worker's job reads."""

    key: str
    payload: dict[str, Any]


@dataclass
class _Worker:
    proc: Process
    stdout: BufferedByteReceiveStream
    capacity: int
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    in_flight: dict[int, WorkItem] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)  # the environments it has now, in the order it took them
    known: set[str] = field(default_factory=set)  # the environments whose setup it was sent
    lost: bool = False


class WorkerLost(Exception):
    """A worker's pipe closed."""


def remote_error(message: dict[str, Any]) -> Exception:
    """The error a worker reported, as the driver raises it: a known error as its own class (one line), anything
    else as a RuntimeError carrying the worker's traceback (a bug: the harness writes it to error.log)."""
    cls = getattr(errors, str(message.get("type")), None)
    if isinstance(cls, type) and issubclass(cls, EnvScalerError):
        try:
            return cls(str(message.get("message")))
        except TypeError:
            pass
    return RuntimeError(f"in a worker process: {message.get('type')}: {message.get('message')}\n"
                        f"{message.get('traceback', '')}")


@dataclass
class WorkerPool:
    """Runs `items` on `workers` processes, `capacity[i]` items at a time on the i-th; `on_result(item, record)` is
    called in the driver for each, in the order they finish (awaited, shielded, when it returns an awaitable); `setup(key)` is sent to a worker before its first item
    of that environment; `init` is the first message every worker gets."""

    init: dict[str, Any]
    capacity: list[int]
    on_result: Callable[[WorkItem, Any], Awaitable[None] | None]
    setup: Callable[[str], dict[str, Any] | None] = lambda _key: None
    on_lost: Callable[[str], None] = lambda _message: None
    workers: list[_Worker] = field(default_factory=list)
    started: list[int] = field(default_factory=list)  # every worker pid, in the order they started
    lost_workers: int = 0

    def pids(self) -> list[int]:
        """The process ids of the live workers."""
        return [w.proc.pid for w in self.workers if not w.lost]

    async def run(self, items: list[WorkItem]) -> None:
        """Run every item once (or again after its worker was lost); return when each one's result is in."""
        self._queue: OrderedDict[str, deque[tuple[int, WorkItem]]] = OrderedDict()
        for number, item in enumerate(items):
            self._queue.setdefault(item.key, deque()).append((number, item))
        self._left = len(items)
        self._replacements = len(self.capacity)
        self._all_done = anyio.Event()
        if not items:
            return
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                for capacity in self.capacity:
                    await self._start(capacity)
                for worker in list(self.workers):
                    await self._fill(worker)
                await self._all_done.wait()
                tg.cancel_scope.cancel()
        except BaseExceptionGroup as group:  # what a worker reported (or a lost one): raised as itself, one line
            first: BaseException = group
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            if not isinstance(first, Exception):
                raise
            raise first from None
        finally:
            with anyio.CancelScope(shield=True):
                await self.close()

    async def _start(self, capacity: int) -> None:
        proc = await anyio.open_process([sys.executable, "-m", WORKER_MODULE], stdin=-1, stdout=-1, stderr=None,
                                        start_new_session=True)
        assert proc.stdout is not None
        worker = _Worker(proc, BufferedByteReceiveStream(proc.stdout), capacity)
        self.workers.append(worker)
        self.started.append(proc.pid)
        await self._send(worker, self.init)
        self._tg.start_soon(self._read, worker)

    async def _send(self, worker: _Worker, message: dict[str, Any]) -> None:
        assert worker.proc.stdin is not None
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        async with worker.lock:
            try:
                await worker.proc.stdin.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                raise WorkerLost from None

    def _take(self, worker: _Worker) -> tuple[int, WorkItem] | None:
        """The next item for `worker`: of an environment it has, else of one nobody has, else a share of the
        environment with the most items left (only when no environment is left unclaimed)."""
        for key in worker.keys:
            if self._queue.get(key):
                return self._queue[key].popleft()
        unclaimed = self._unclaimed()
        if unclaimed is not None:
            worker.keys.append(unclaimed)
            return self._queue[unclaimed].popleft()
        busiest = max((k for k, q in self._queue.items() if q), key=lambda k: len(self._queue[k]), default=None)
        if busiest is None:
            return None
        worker.keys.append(busiest)
        return self._queue[busiest].popleft()

    async def _fill(self, worker: _Worker) -> None:
        try:
            while not worker.lost and len(worker.in_flight) < worker.capacity:
                taken = self._take(worker)
                if taken is None:
                    break
                number, item = taken
                worker.in_flight[number] = item
                await self._setup(worker, item.key)
                await self._send(worker, {"op": "run", "id": number, "key": item.key, "item": item.payload})
                if not self._queue.get(item.key):  # its environment's last item: the next one's server starts now
                    following = self._unclaimed()
                    if following is not None:
                        worker.keys.append(following)
                        await self._setup(worker, following)
                        await self._send(worker, {"op": "prepare", "key": following})
        except WorkerLost:
            await self._lose(worker)

    def _unclaimed(self) -> str | None:
        claimed = {k for w in self.workers if not w.lost for k in w.keys}
        return next((key for key, queued in self._queue.items() if queued and key not in claimed), None)

    async def _setup(self, worker: _Worker, key: str) -> None:
        if key not in worker.known:
            worker.known.add(key)
            setup = self.setup(key)
            if setup is not None:
                await self._send(worker, {"op": "setup", "key": key, "setup": setup})

    async def _release_idle(self, worker: _Worker) -> None:
        """Tell `worker` to stop the servers of the environments it holds nothing of and nobody will get more of."""
        for key in list(worker.keys):
            if not self._queue.get(key) and all(i.key != key for i in worker.in_flight.values()):
                worker.keys.remove(key)
                worker.known.discard(key)
                await self._send(worker, {"op": "release", "key": key})

    async def _read(self, worker: _Worker) -> None:
        while True:
            try:
                line = await worker.stdout.receive_until(b"\n", _MAX_LINE)
            except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await self._lose(worker)
                return
            message = json.loads(line)
            if message.get("op") == "fatal":
                raise remote_error(message)
            number = int(message["id"])
            item = worker.in_flight.pop(number)
            try:
                await self._release_idle(worker)  # nothing of it here or queued: its server stops
            except WorkerLost:
                pass  # its stdout closes next: it is lost then
            await self._fill(worker)  # the worker's next item goes out before this one is written
            outcome = self.on_result(item, message["record"])
            if inspect.isawaitable(outcome):
                with anyio.CancelScope(shield=True):  # a result that came back is written, even when interrupted
                    await outcome
            self._left -= 1
            if self._left <= 0:
                self._all_done.set()
                return

    async def _lose(self, worker: _Worker) -> None:
        """`worker` is gone: its items in flight are queued again (first), a replacement starts if allowed."""
        if worker.lost or self._all_done.is_set():
            return
        worker.lost = True
        self.lost_workers += 1
        for number, item in sorted(worker.in_flight.items(), reverse=True):
            self._queue.setdefault(item.key, deque()).appendleft((number, item))
            self._queue.move_to_end(item.key, last=False)
        lost = len(worker.in_flight)
        worker.in_flight.clear()
        worker.keys.clear()
        self.on_lost(f"worker process {worker.proc.pid} was lost; {lost} item(s) in flight on it queued again")
        if self._replacements > 0:
            self._replacements -= 1
            await self._start(worker.capacity)
        live = [w for w in self.workers if not w.lost]
        if not live:
            raise UsageError("every worker process was lost; the finished work is kept (--resume continues it)")
        for other in live:
            await self._fill(other)

    async def close(self) -> None:
        """Close every worker's stdin (it stops its servers and exits), wait for it, kill one that lingers."""
        async def stop(worker: _Worker) -> None:
            try:
                if worker.proc.stdin is not None:
                    await worker.proc.stdin.aclose()
            except (OSError, anyio.BrokenResourceError):
                pass
            with anyio.move_on_after(_STOP_S):
                await worker.proc.wait()
            if worker.proc.returncode is None:
                worker.proc.kill()
                await worker.proc.wait()
            await worker.stdout.aclose()

        async with anyio.create_task_group() as tg:
            for worker in self.workers:
                tg.start_soon(stop, worker)


def split_concurrency(total: int, workers: int) -> list[int]:
    """`total` items at a time shared by `workers` processes (never more processes than items at a time)."""
    workers = max(1, min(workers, total))
    return [total // workers + (i < total % workers) for i in range(workers)]


def worker_home() -> str | None:
    """The driver's data home when it is not the package's (--home): workers resolve environment ids there."""
    from envscaler_mcp.catalog.paths import data_root, package_root

    return None if data_root() == package_root() else str(data_root())


def cpu_count() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1

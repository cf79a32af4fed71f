"""Work items on a Ray cluster: `synth envs` (model and check stages, per topic), `synth scenarios` (per item)
and `scenarios check` (per scenario).

Each item runs on a Ray actor through the stage's own code, writing into a scratch folder of its own; the
writes it made (atomic files and JSONL lines, in order: `_io.journal_writes`) come back to the driver, which
makes them in the real output folder. So the output, its resume rule (an item is finished when its result
or its drop record is on disk) and the summary are those of a local run: the driver sends each unfinished
item once, writes it when it comes back, and an item lost with its worker is sent again (a finished one is
already on disk). Imported only when a run asks for Ray; `ray` is the optional extra `.[ray]`.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import ray

from envscaler_mcp._io import journal_writes, replay_writes
from envscaler_mcp.adapters.ray_run import RayDispatch, cluster_cpus, connect

ItemCallback = Callable[[str, str, str], None]  # (stage, item id, outcome) of a finished item
Progress = list[tuple[str, str, str]]  # (stage, item id, outcome) of the item's on_item calls


class ItemJob(Protocol):
    """What a worker runs: `open` once (its providers, servers, sandbox), then `run` per item."""

    async def open(self, resources: Resources) -> None: ...

    async def run(self, out: Path, on_item: ItemCallback, item: Any) -> None: ...


class Resources:
    """Context managers a worker keeps open for all its items, entered and closed in one holder task (their
    task groups must close in the task that opened them), whichever item's task asks for them."""

    def __init__(self) -> None:
        self._requests: asyncio.Queue[tuple[str, Callable[[], Any], asyncio.Future[Any]] | None] = asyncio.Queue()
        self._values: dict[str, Any] = {}
        self._task = asyncio.create_task(self._hold())

    async def _hold(self) -> None:
        async with AsyncExitStack() as stack:
            while (request := await self._requests.get()) is not None:
                key, opener, reply = request
                if key not in self._values:
                    try:
                        value = opener()
                        if isinstance(value, AbstractAsyncContextManager):
                            value = await stack.enter_async_context(value)
                        self._values[key] = value
                    except Exception as exc:  # handed to the item that asked
                        reply.set_exception(exc)
                        continue
                reply.set_result(self._values[key])

    async def get(self, key: str, opener: Callable[[], Any]) -> Any:
        """The value under `key`, made by `opener()` the first time (an async context manager is entered)."""
        reply: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        await self._requests.put((key, opener, reply))
        return await reply

    async def close(self) -> None:
        await self._requests.put(None)
        await asyncio.gather(self._task, return_exceptions=True)


class ItemWorker:
    """A Ray actor running one stage's items; each item's writes are returned, never made here."""

    def __init__(self, job: ItemJob) -> None:
        self.job = job
        self._resources: Resources | None = None
        self._opened: asyncio.Future[None] | None = None

    def pid(self) -> int:
        """The actor's process id (the tests stop a worker by it)."""
        return os.getpid()

    async def _open(self) -> None:
        if self._opened is None:
            self._opened = asyncio.get_running_loop().create_future()
            self._resources = Resources()
            try:
                await self.job.open(self._resources)
                self._opened.set_result(None)
            except BaseException as exc:
                self._opened.set_exception(exc)
        await asyncio.shield(self._opened)

    async def run(self, item: Any) -> dict[str, Any]:
        """Run one item in a scratch folder: {"writes": [(kind, relative path, payload)], "progress": [...]}."""
        await self._open()
        scratch = Path(tempfile.mkdtemp(prefix="envscaler-item-"))
        progress: Progress = []
        try:
            with journal_writes() as ops:
                await self.job.run(scratch, lambda *event: progress.append(event), item)
            writes = [(kind, str(path.relative_to(scratch)), payload) for kind, path, payload in ops]
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return {"writes": writes, "progress": progress}

    async def close(self) -> None:
        if self._resources is not None:
            await self._resources.close()
        closer: Callable[[], Awaitable[None]] | None = getattr(self.job, "close", None)
        if closer is not None:
            await closer()


@dataclass
class ItemRun:
    """Items of one stage on Ray, written under `out` by the driver as they finish."""

    job: ItemJob
    out: Path
    address: str
    workers: int | None = None
    per_worker: int = 1
    on_item: ItemCallback | None = None
    on_lost: Callable[[str], None] = lambda _message: None
    done: int = 0
    lost_workers: int = field(default=0)

    def run(self, items: list[Any]) -> None:
        """Run every item once (blocking: call it from a worker thread)."""
        if not items:
            return
        connect(self.address)
        actor = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(ItemWorker)

        def finished(_item: tuple[Any, ...], record: dict[str, Any]) -> None:
            replay_writes(record["writes"], self.out)
            self.done += 1
            for stage, item_id, outcome in record["progress"]:
                if self.on_item is not None:
                    self.on_item(stage, item_id, outcome)

        dispatch = RayDispatch(start_actor=lambda: actor.remote(self.job), workers=self.workers or cluster_cpus(),
                               per_worker=self.per_worker, on_result=finished, on_lost=self.on_lost)
        dispatch.run([(item,) for item in items])
        self.lost_workers += dispatch.lost_workers


@dataclass
class RayCommand:
    """A command's `--ray ADDR [--ray-workers N]`: joins the cluster, then runs the command's items there."""

    address: str
    workers: int | None = None

    def connect(self) -> None:
        """Join the cluster (an address nobody answers on: one UsageError line, before any work)."""
        connect(self.address)

    def item_run(self, job: ItemJob, out: Path, *, per_worker: int = 1, on_item: ItemCallback | None = None) -> ItemRun:
        """An ItemRun of `job` on this cluster, a lost worker reported on stderr."""
        return ItemRun(job=job, out=out, address=self.address, workers=self.workers, per_worker=per_worker,
                       on_item=on_item, on_lost=lambda message: print(f"warning: {message}", file=sys.stderr))


async def run_items(job: ItemJob, items: list[Any], out: Path, address: str, *, workers: int | None = None,
                    per_worker: int = 1, on_item: ItemCallback | None = None) -> ItemRun:
    """ItemRun.run in a worker thread (the driver's event loop stays free)."""
    import anyio

    runner = ItemRun(job=job, out=out, address=address, workers=workers, per_worker=per_worker, on_item=on_item,
                     on_lost=lambda message: print(f"warning: {message}", file=sys.stderr))
    await anyio.to_thread.run_sync(runner.run, items)
    return runner

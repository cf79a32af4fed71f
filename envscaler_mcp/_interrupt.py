"""SIGTERM ends a command as Ctrl-C does: its event loop's root task is cancelled, so servers, sandbox workers and
the local model are stopped and finished work is kept; the command then ends with KeyboardInterrupt.

Every command's event loop is started by `run`, which knows its root task; the handler cancels that task itself
rather than relying on the SIGINT handler asyncio installs, which is absent when the process started with SIGINT
ignored (a script's background job). Raising KeyboardInterrupt inside a running loop instead left AnyIO's worker
threads waiting at interpreter exit, and the process hung.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import TypeVar

import anyio

T = TypeVar("T")

_roots: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[object]]] = []
_cancelled: set[asyncio.Task[object]] = set()


def run(fn: Callable[[], Awaitable[T]]) -> T:
    """`anyio.run(fn)`, cancelled by SIGTERM as by Ctrl-C (then KeyboardInterrupt is raised here)."""

    async def root() -> T:
        task = asyncio.current_task()
        assert task is not None
        entry = (asyncio.get_running_loop(), task)
        _roots.append(entry)
        try:
            return await fn()
        finally:
            _roots.remove(entry)

    try:
        return anyio.run(root)
    except asyncio.CancelledError:
        if _cancelled:
            raise KeyboardInterrupt from None
        raise
    finally:
        _cancelled.clear()


def on_sigterm(signum: int, frame: FrameType | None) -> None:
    """The SIGTERM handler: cancel the running loop's root task (a second SIGTERM, or one outside any loop,
    interrupts at once, as a second Ctrl-C does)."""
    if _roots:
        loop, task = _roots[-1]
        if not task.done() and task not in _cancelled:
            _cancelled.add(task)
            task.cancel()
            loop.call_soon_threadsafe(lambda: None)  # wake the loop if it waits in select()
            return
    raise KeyboardInterrupt


def install() -> None:
    """Make SIGTERM end this process's commands as Ctrl-C does."""
    signal.signal(signal.SIGTERM, on_sigterm)

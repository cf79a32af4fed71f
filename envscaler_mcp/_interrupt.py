"""SIGTERM ends a command as Ctrl-C does: its event loop's root task is cancelled, so servers, sandbox workers and
the local model are stopped and finished work is kept; the command then ends with KeyboardInterrupt.

Every command's event loop is started by `run`, which knows its root task; the handler cancels that task itself
rather than relying on the SIGINT handler asyncio installs, which is absent when the process started with SIGINT
ignored (a script's background job). Raising KeyboardInterrupt inside a running loop instead left AnyIO's worker
threads waiting at interpreter exit, and the process hung.

A second SIGTERM or Ctrl-C, while the first is being handled, stops the process at once: it kills its child
processes (their own children go with them: lifelines and PID namespaces, as when the command is killed with
SIGKILL) and exits with 130. Raising KeyboardInterrupt there, as Python does by default, could hang the same way:
a cleanup interrupted half-way leaves a worker thread waiting on a child that nobody stops any more. What the run
had finished is on disk already (results are appended a line at a time), so `--resume` continues it.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import TypeVar

import anyio

T = TypeVar("T")

_roots: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[object]]] = []
_cancelled: set[asyncio.Task[object]] = set()
_signalled: list[int] = []  # the interrupts received (SIGTERM, SIGINT); a second one stops the process at once


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


def on_interrupt(signum: int, frame: FrameType | None) -> None:
    """The SIGTERM (and Ctrl-C) handler: cancel the running loop's root task; one outside any loop interrupts at
    once; a second one, while the first is handled, stops the process at once (`stop_now`)."""
    if _signalled:
        stop_now()
    _signalled.append(signum)
    if _roots:
        loop, task = _roots[-1]
        if not task.done() and task not in _cancelled:
            _cancelled.add(task)
            task.cancel()
            loop.call_soon_threadsafe(lambda: None)  # wake the loop if it waits in select()
            return
    raise KeyboardInterrupt


def _children() -> list[int]:
    """This process's child processes (every thread's), from /proc; none where it cannot be read."""
    pids: list[int] = []
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as f:
                pids.extend(int(p) for p in f.read().split())
    except OSError:
        pass
    return pids


def stop_now() -> None:
    """Kill every child process and exit with 130, without running any cleanup (the second interrupt)."""
    os.write(2, b"\ninterrupted again: stopped at once; finished results are kept (--resume continues)\n")
    for pid in _children():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    os._exit(130)


def install() -> None:
    """Make SIGTERM end this process's commands as Ctrl-C does, and a second SIGTERM or Ctrl-C stop it at once.
    Ctrl-C is handled here too unless SIGINT is ignored (a background job): asyncio then installs no handler of
    its own, whose second Ctrl-C would raise KeyboardInterrupt inside the loop."""
    signal.signal(signal.SIGTERM, on_interrupt)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, on_interrupt)

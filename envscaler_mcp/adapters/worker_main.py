"""A local worker process (`--workers N`): `python -m envscaler_mcp.adapters.worker_main`, started by
adapters/worker_procs.py.

It reads JSON lines on stdin: first the job (`eval` or `gate`, adapters/worker_jobs.py), then `setup` (what an
environment's items need), `prepare` (start an environment's server ahead of its items), `run` (an item) and
`release` (an environment it will get no more items of: its server stops); it writes one JSON line per finished item on stdout ({"id", "record"}), or a `fatal` line when the job
cannot go on (a usage error, a server that cannot start, a bug). At end-of-file (the driver is done, was
interrupted or died) it cancels what is in flight, stops its servers and sandbox, and exits.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import traceback
from pathlib import Path
from typing import IO, Any

import anyio

from envscaler_mcp.adapters.worker_jobs import Job, make_job
from envscaler_mcp.catalog.paths import set_home


class _Channel:
    """The driver's pipe: a line in, a line out (written whole: one task writes at a time, without awaiting)."""

    def __init__(self) -> None:
        # The same for stdin (a child started here never reads the driver's messages).
        # Anything else this process (or a library) prints must not corrupt the messages: the protocol keeps a
        # private copy of stdout, and fd 1 becomes stderr for everything else, servers started here included.
        self._out: IO[bytes] = os.fdopen(os.dup(1), "wb")
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        self._in: IO[bytes] = os.fdopen(os.dup(0), "rb")
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)

    async def receive(self) -> dict[str, Any] | None:
        line = await anyio.to_thread.run_sync(self._in.readline, abandon_on_cancel=True)
        return json.loads(line) if line else None

    def send(self, message: dict[str, Any]) -> None:
        self._out.write((json.dumps(message, separators=(",", ":")) + "\n").encode())
        self._out.flush()


def _error(exc: BaseException) -> dict[str, Any]:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return {"op": "fatal", "type": type(exc).__name__, "message": str(exc),
            "traceback": "".join(traceback.format_exception(exc))}


async def serve(channel: _Channel) -> None:
    """Run the job the first message names until end-of-file."""
    first = await channel.receive()
    if first is None:
        return
    if first.get("home"):
        set_home(Path(first["home"]))
    job: Job = make_job(first)
    try:
        async with job, anyio.create_task_group() as tg:
            gc.freeze()  # what the job opened lives as long as the process (as a one-process run does)

            async def run(message: dict[str, Any]) -> None:
                record = await job.run(message["key"], message["item"])
                channel.send({"id": message["id"], "record": record})

            while (message := await channel.receive()) is not None:
                op = message["op"]
                if op == "run":
                    tg.start_soon(run, message)
                elif op == "setup":
                    job.setup(message["key"], message["setup"])
                elif op == "release":
                    job.release(message["key"])
                elif op == "prepare":
                    tg.start_soon(job.prepare, message["key"])
            tg.cancel_scope.cancel()  # the driver is done (or gone): stop what is in flight
    except Exception as exc:
        channel.send(_error(exc))


def main() -> None:
    """The process's entry: serve the driver on stdin/stdout."""
    channel = _Channel()
    try:
        anyio.run(serve, channel)
    except BrokenPipeError:  # the driver is gone
        pass


if __name__ == "__main__":
    main()

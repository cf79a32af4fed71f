"""The client end of a server process's stdin/stdout, for the pipe and stdio transports: `stdio_client` with
lines split in linear time.

The SDK's `stdio_client` (mcp 2.3) joins its pending text to every 64 KiB chunk it reads and splits the whole
again, so one long line costs time quadratic in its length: a 16 MiB tool result took 50 s over the pipe,
3 s over HTTP (benchmarks/README.md). This transport keeps the chunks of the line being read in a list and
joins them once, at its newline; it parses and frames messages as the SDK does (one JSON-RPC message per
line, the SDK's message adapter) and stops the process as the SDK does: stdin closed, then SIGTERM after a
grace period, then SIGKILL.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TextIO

import anyio
from anyio.abc import Process
from mcp import StdioServerParameters, types
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

log = logging.getLogger(__name__)
_GRACE_S, _TERM_S = 2.0, 3.0


def _parse(line: bytes) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:  # handed to the session, which reports it
        log.warning("the server wrote a line that is no JSON-RPC message: %s", str(exc)[:200])
        return exc


async def _stop(process: Process) -> None:
    with anyio.CancelScope(shield=True):
        if process.stdin is not None:
            await process.stdin.aclose()
        for signal_it, wait_s in ((None, _GRACE_S), (process.terminate, _TERM_S), (process.kill, None)):
            if signal_it is not None and process.returncode is None:
                signal_it()
            with anyio.move_on_after(wait_s):
                await process.wait()
            if process.returncode is not None:
                break
        await process.aclose()  # its pipes and transport closed now, not by the collector after the loop ends


@asynccontextmanager
async def line_client(server: StdioServerParameters, errlog: TextIO,
                      start: Callable[[], Awaitable[Process]] | None = None) -> AsyncIterator[Any]:
    """(read stream, write stream) of a started server process, as `mcp.Client` takes them. `start` starts the
    process with pipes for stdin and stdout (default: `server`'s command, a fresh process)."""
    if start is not None:
        process = await start()
    else:
        process = await anyio.open_process([server.command, *server.args], cwd=server.cwd,
                                           env=get_default_environment() | (server.env or {}), stderr=errlog)
    read_send, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_receive = anyio.create_memory_object_stream[SessionMessage](0)

    async def read() -> None:
        assert process.stdout is not None
        pieces: list[bytes] = []
        async with read_send:
            try:
                async for chunk in process.stdout:
                    start = 0
                    while (end := chunk.find(b"\n", start)) >= 0:
                        pieces.append(chunk[start:end])
                        line, pieces = b"".join(pieces), []
                        start = end + 1
                        if line.strip():
                            message = _parse(line)
                            del line  # neither the line nor its message is held here once handed on (a
                            await read_send.send(message)  # final state: megabytes, until the next line)
                            del message
                    if start < len(chunk):
                        pieces.append(chunk[start:])
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                pass

    async def write() -> None:
        assert process.stdin is not None
        async with write_receive:
            try:
                async for message in write_receive:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(text.encode("utf-8") + b"\n")
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                await read_send.aclose()  # the session sees the connection end, not a request hanging

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        tg.start_soon(write)
        try:
            yield read_stream, write_stream
        finally:
            await _stop(process)
            tg.cancel_scope.cancel()
            for stream in (read_stream, write_stream):
                await stream.aclose()

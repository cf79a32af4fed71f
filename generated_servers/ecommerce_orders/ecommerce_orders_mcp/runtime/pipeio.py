"""stdin/stdout for the stdio transport through the event loop's pipe support, without threads.

The SDK's `stdio_server()` reads and writes the standard streams through worker threads (one thread hop per
line each way); when both are pipes (what every MCP client and the launcher give a server) this module hands
it streams that the event loop drives directly. The SDK still frames and parses every message. As the SDK does
for its own streams, fd 0 and 1 are first moved aside: fd 0 then reads the null device and fd 1 writes to
stderr, so environment code that prints cannot corrupt the protocol. Anything else (a terminal, a file)
gets the SDK's own streams.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

_PIPE_BYTES = 1 << 20  # the answer pipe's buffer (_widen)
_LINE_LIMIT = 1 << 30  # one JSON-RPC message per line; a state sent inline may be large


class _Lines:
    """Async iteration over the text lines of a StreamReader (what the SDK reads from its stdin)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self.reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _Out:
    """`write` and `flush` as the SDK calls them on its stdout."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer

    async def write(self, text: str) -> None:
        self.writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self.writer.drain()


def _widen(fd: int) -> None:
    """Let the answer pipe hold a large answer (a final state) whole: one write and one read instead of one
    per 64 KiB, the default. Up to the system's pipe-max-size; where the kernel refuses, the default stays."""
    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    except (OSError, AttributeError):
        pass


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@asynccontextmanager
async def pipe_streams() -> AsyncIterator[tuple[Any, Any] | None]:
    """(stdin, stdout) for `stdio_server(stdin, stdout)` when both are pipes, else None."""
    if not (_is_pipe(0) and _is_pipe(1)):
        yield None
        return
    wire_in, wire_out = os.dup(0), os.dup(1)
    _widen(wire_out)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_LINE_LIMIT)
    in_file = os.fdopen(wire_in, "rb", buffering=0)
    out_file = os.fdopen(wire_out, "wb", buffering=0)
    in_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), in_file)
    out_transport, out_protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out_file)
    writer = asyncio.StreamWriter(out_transport, out_protocol, None, loop)
    try:
        yield _Lines(reader), _Out(writer)
    finally:
        in_transport.close()
        out_transport.close()

"""The client end of a server process's stdin/stdout, for the pipe and stdio transports: `stdio_client` with
lines split in linear time.

The SDK's `stdio_client` (mcp 2.3) joins its pending text to every 64 KiB chunk it reads and splits the whole
again, so one long line costs time quadratic in its length: a 16 MiB tool result took 50 s over the pipe,
3 s over HTTP (benchmarks/README.md). This transport keeps the chunks of the line being read in a list and
joins them once, at its newline; it parses and frames messages as the SDK does (one JSON-RPC message per
line, the SDK's message adapter) and stops the process as the SDK does: stdin closed, then SIGTERM after a
grace period, then SIGKILL.

Unlike the SDK's, it runs no task of its own: the session's receive loop reads the server's lines itself, and
each sender writes its own line (whole, one at a time, whatever cancels the sender). Two task switches fewer
per message: 10-60 us of the harness's 450 us or so of CPU per tool call over the pipe (benchmarks/README.md).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TextIO

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, ObjectReceiveStream, ObjectSendStream, Process
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


class _LineReader(ObjectReceiveStream[SessionMessage | Exception]):
    """The messages of a server's stdout, read in the task that asks for the next one (the session's receive
    loop): no task between the pipe and the session. The chunks of the line being read are kept in a list and
    joined once, at its newline; once closed (here, or the pipe by the process's end) it ends the stream."""

    def __init__(self, stdout: ByteReceiveStream | None) -> None:
        assert stdout is not None
        self._stdout = stdout
        self._pieces: list[bytes] = []
        self._chunk = b""
        self._start = 0
        self._closed = False

    async def receive(self) -> SessionMessage | Exception:
        while True:
            chunk, start = self._chunk, self._start
            end = chunk.find(b"\n", start)
            if end >= 0:
                self._pieces.append(chunk[start:end])
                self._start = end + 1
                line, self._pieces = b"".join(self._pieces), []
                if line.strip():
                    return _parse(line)  # neither the line nor its message is held here once handed on
                continue
            if start < len(chunk):
                self._pieces.append(chunk[start:])
            self._chunk, self._start = b"", 0
            if self._closed:
                raise anyio.EndOfStream
            try:
                self._chunk = await self._stdout.receive()
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                self._closed = True
                raise anyio.EndOfStream from None

    async def aclose(self) -> None:
        """End the stream: a receive waiting on the pipe ends too (the pipe is closed under it)."""
        if not self._closed:
            self._closed = True
            await self._stdout.aclose()


class _LineWriter(ObjectSendStream[SessionMessage]):
    """Writes each message to the server's stdin in the task that sends it (no task between the session and
    the pipe), one line at a time. A line is written whole, whatever cancels its sender: a pipe cannot take
    half a line back. A server that takes no line for `timeout_s` is not reading its requests: the connection
    is then ended (the session's waiters see it closed), as when the pipe breaks."""

    def __init__(self, stdin: ByteSendStream | None, reader: _LineReader, timeout_s: float) -> None:
        assert stdin is not None
        self._stdin, self._reader, self._timeout_s = stdin, reader, timeout_s
        self._lock = anyio.Lock(fast_acquire=True)
        self._closed = False

    async def send(self, item: SessionMessage) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        line = item.message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8") + b"\n"
        async with self._lock:
            with anyio.CancelScope(shield=True, deadline=anyio.current_time() + self._timeout_s) as scope:
                try:
                    await self._stdin.send(line)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                    self._closed = True
            if scope.cancelled_caught:
                log.warning("the server took no request for %g s: the connection is ended", self._timeout_s)
                self._closed = True
            if self._closed:
                await self._reader.aclose()  # the session sees the connection end, not a request hanging
                raise anyio.BrokenResourceError

    async def aclose(self) -> None:
        self._closed = True


@asynccontextmanager
async def line_client(server: StdioServerParameters, errlog: TextIO,
                      start: Callable[[], Awaitable[Process]] | None = None, *,
                      write_timeout_s: float = 60.0) -> AsyncIterator[Any]:
    """(read stream, write stream) of a started server process, as `mcp.Client` takes them. `start` starts the
    process with pipes for stdin and stdout (default: `server`'s command, a fresh process). No task stands
    between the session and the pipes: the session's receive loop reads the server's lines, and each sender
    writes its own (`write_timeout_s`: how long a server may take no line before the connection is ended)."""
    if start is not None:
        process = await start()
    else:
        process = await anyio.open_process([server.command, *server.args], cwd=server.cwd,
                                           env=get_default_environment() | (server.env or {}), stderr=errlog)
    read_stream = _LineReader(process.stdout)
    write_stream = _LineWriter(process.stdin, read_stream, write_timeout_s)

    try:
        yield read_stream, write_stream
    finally:
        await _stop(process)
        for stream in (read_stream, write_stream):
            await stream.aclose()

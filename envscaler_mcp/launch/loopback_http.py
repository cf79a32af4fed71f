"""The harness's HTTP connections to a server it launched on loopback: an `httpx2` transport.

The launcher's clients (the admin REST API and the MCP client on /admin/mcp) talk to one local server, over
plain HTTP/1.1 with keep-alive. httpx's default transport (httpcore) is built for the open internet: before each
request its pool asks every idle connection whether the peer has closed it, and a request goes out as two
writes (head, then body). For the harness's many small requests that was a third of its CPU over HTTP
(py-spy, benchmarks/README.md). This transport keeps only what a loopback peer needs: idle connections in a
list, each request sent in one write, the response parsed by `h11` (the HTTP/1.1 state machine httpcore
and the server's uvicorn use), the body read whole. An idle connection is checked alone, without blocking,
just before it is used: readable means the server closed it while idle (its keep-alive is 300 s, or it ended),
and it is dropped for another or a new one. Once a request's bytes are written it is never sent again: a
server may have read and run it (a tool call that changed the state) and then closed the connection without an
answer (environment code closing the socket, a crash mid-request), and sending it again would run it twice.
Such a failure reaches the caller as an error (`McpLoopbackTransport`, the MCP client's, turns it into a
JSON-RPC error answer). Timeouts and errors are httpx's (`ReadTimeout`, `ConnectError`, `RemoteProtocolError`),
so callers catching `httpx2.HTTPError` see no difference; the read timeout bounds the whole exchange (httpx's
bounds each read), and a request waits for a free connection without a limit.
"""

from __future__ import annotations

import json
import select
from typing import Any

import anyio
import anyio.abc
import h11
import httpx2
from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

_CHUNK = 1 << 16


class _Connection:
    """One keep-alive HTTP/1.1 connection."""

    __slots__ = ("h11", "socket", "stream")

    def __init__(self, stream: anyio.abc.SocketStream) -> None:
        self.stream = stream
        self.socket = stream.extra(anyio.abc.SocketAttribute.raw_socket)
        self.h11 = h11.Connection(our_role=h11.CLIENT)

    def closed_while_idle(self) -> bool:
        """Whether the server closed this idle connection: its socket is readable (end of stream, a reset) or
        already closed. One poll, never blocking. (Bytes a server sent on an idle connection without closing it,
        which HTTP/1.1 does not allow, may already sit in the event loop's buffer, unseen here.)"""
        fd = self.socket.fileno()  # -1 once the event loop closed it; never a number another socket reused
        return fd < 0 or bool(select.select((fd,), (), (), 0)[0])

    async def exchange(self, method: bytes, target: bytes, headers: list[tuple[bytes, bytes]],
                       body: bytes) -> tuple[h11.Response, bytes]:
        """Send one request in one write and read its whole answer (any failure raises: never sent again)."""
        conn = self.h11
        head = conn.send(h11.Request(method=method, target=target, headers=headers)) or b""
        data = conn.send(h11.Data(data=body)) if body else b""
        tail = conn.send(h11.EndOfMessage()) or b""
        await self.stream.send(head + (data or b"") + tail)
        response: h11.Response | None = None
        chunks: list[bytes] = []
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                try:
                    received = await self.stream.receive(_CHUNK)
                except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
                    received = b""  # h11 then says the connection closed
                conn.receive_data(received)
            elif isinstance(event, h11.Response):
                response = event
            elif isinstance(event, h11.Data):
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                assert response is not None
                return response, b"".join(chunks)
            elif isinstance(event, h11.ConnectionClosed):
                raise h11.RemoteProtocolError("the server closed the connection without a complete answer")

    def reusable(self) -> bool:
        """True when both sides finished the exchange and keep the connection (then ready for the next one)."""
        if self.h11.our_state is h11.DONE and self.h11.their_state is h11.DONE:
            self.h11.start_next_cycle()
            return True
        return False


class LoopbackTransport(httpx2.AsyncBaseTransport):
    """Keep-alive connections to one local HTTP server; at most `max_connections` at a time."""

    def __init__(self, max_connections: int = 32) -> None:
        self._idle: list[_Connection] = []
        self._slots = anyio.Semaphore(max_connections)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        timeouts: dict[str, Any] = request.extensions.get("timeout", {})
        body = await request.aread()
        response, content = await self.exchange(request, request.method.encode("ascii"), request.url.raw_path,
                                                request.headers.raw, body, timeouts.get("connect"),
                                                timeouts.get("read"))
        return httpx2.Response(response.status_code, headers=response.headers.raw_items(),
                               stream=httpx2.ByteStream(content),
                               extensions={"http_version": b"HTTP/1.1", "reason_phrase": response.reason})

    async def exchange(self, request: httpx2.Request, method: bytes, target: bytes,
                       headers: list[tuple[bytes, bytes]], body: bytes, connect_timeout: float | None,
                       read_timeout: float | None) -> tuple[h11.Response, bytes]:
        """One request and its whole answer, without building httpx objects for either (`request` names the
        server and goes into the errors; its own headers and body are not sent: `headers` and `body` are,
        `headers` with a Host header). Failures raise httpx's errors, as `handle_async_request`'s."""
        async with self._slots:
            conn = await self._idle_connection() or await self._connect(request, connect_timeout)
            try:
                with anyio.fail_after(read_timeout):
                    response, content = await conn.exchange(method, target, headers, body)
            except BaseException as exc:
                with anyio.CancelScope(shield=True):
                    await conn.stream.aclose()
                mapped = _as_httpx(exc, request)
                if mapped is exc:
                    raise
                raise mapped from exc
            if conn.reusable():
                self._idle.append(conn)
            else:
                await conn.stream.aclose()
            return response, content

    async def _idle_connection(self) -> _Connection | None:
        """The most recently used idle connection the server has not closed (those it closed are dropped on the
        way), or None. Only the connection about to be used is checked, not the whole pool."""
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed_while_idle():
                return conn
            await conn.stream.aclose()
        return None

    @staticmethod
    async def _connect(request: httpx2.Request, timeout: float | None) -> _Connection:
        host = request.url.host
        port = request.url.port or 80
        try:
            with anyio.fail_after(timeout):
                return _Connection(await anyio.connect_tcp(host, port))
        except TimeoutError as exc:
            raise httpx2.ConnectTimeout(f"connecting to {host}:{port} timed out", request=request) from exc
        except OSError as exc:
            raise httpx2.ConnectError(f"connecting to {host}:{port} failed: {exc}", request=request) from exc

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            await conn.stream.aclose()


class McpLoopbackTransport(LoopbackTransport):
    """The transport of the harness's MCP client: a POST that failed (the connection closed before an answer, no
    answer in time, no connection) is answered here with a JSON-RPC error (502), which the SDK hands to the
    request's caller as an `MCPError` (CONNECTION_CLOSED, or REQUEST_TIMEOUT): that call fails and its episode
    takes the infra-error path (the run's pool restarts the server). Raised, the error would end the SDK's
    transport task group, that is the shared client of every episode of the server, and the run with it."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await super().handle_async_request(request)
        except httpx2.TransportError as exc:
            if request.method != "POST":
                raise
            code = REQUEST_TIMEOUT if isinstance(exc, httpx2.TimeoutException) else CONNECTION_CLOSED
            error = {"code": code, "message": f"no answer from the server ({type(exc).__name__}: {exc}); the "
                                              "request was not sent again, as the server may have run it"}
            return httpx2.Response(502, headers={"Content-Type": "application/json"},
                                   content=json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode(),
                                   request=request)


def _as_httpx(exc: BaseException, request: httpx2.Request) -> BaseException:
    """httpx's exception for a failed exchange (cancellation and other exceptions pass unchanged)."""
    if isinstance(exc, TimeoutError):
        return httpx2.ReadTimeout("the server did not answer in time", request=request)
    if isinstance(exc, h11.ProtocolError):
        return httpx2.RemoteProtocolError(str(exc), request=request)
    if isinstance(exc, (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)):
        return httpx2.ReadError(f"the connection failed: {exc!r}", request=request)
    return exc

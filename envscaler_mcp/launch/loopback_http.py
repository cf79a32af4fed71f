"""The harness's HTTP connections to a server it launched on loopback: an `httpx2` transport.

The launcher's clients (the admin REST API and the MCP client on /admin/mcp) talk to one local server, over
plain HTTP/1.1 with keep-alive. httpx's default transport (httpcore) is built for the open internet: before each
request its pool asks every idle connection whether the peer has closed it, and a request goes out as two
writes (head, then body). For the harness's many small requests that was a third of its CPU over HTTP
(py-spy, benchmarks/README.md). This transport keeps only what a loopback peer needs: idle connections in a
list, each request's head written out directly (the callers' headers: a header holding a line break is
refused) and sent with its body in one write, the answer parsed by `httptools` (the C parser of llhttp that
uvicorn uses; `h11`, the pure-Python state machine, was half of this transport's CPU), the body read whole. An idle connection is checked alone, without blocking,
just before it is used: readable means the server closed it while idle (its keep-alive is 300 s, or it ended),
and it is dropped for another or a new one. Once a request's bytes are written it is never sent again: a
server may have read and run it (a tool call that changed the state) and then closed the connection without an
answer (environment code closing the socket, a crash mid-request), and sending it again would run it twice.
Such a failure reaches the caller as an error (the MCP client's transport, launch/loopback_mcp.py, answers
the request with a JSON-RPC error). Timeouts and errors are httpx's (`ReadTimeout`, `ConnectError`, `RemoteProtocolError`),
so callers catching `httpx2.HTTPError` see no difference; the read timeout bounds the whole exchange (httpx's
bounds each read), and a request waits for a free connection without a limit.
"""

from __future__ import annotations

import select
from typing import Any

import anyio
import anyio.abc
import httptools
import httpx2

_CHUNK = 1 << 16


class Answer:
    """One HTTP answer as httptools parsed it: the status, the headers (names in lower case), the whole body."""

    __slots__ = ("body", "complete", "headers", "keep_alive", "parser", "reason", "status_code")

    def __init__(self) -> None:
        self.parser: httptools.HttpResponseParser | None = httptools.HttpResponseParser(self)
        self.keep_alive = False
        self.status_code = 0
        self.reason = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
        self.complete = False

    def on_status(self, reason: bytes) -> None:
        self.reason = reason

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.lower(), value))

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_headers_complete(self) -> None:
        assert self.parser is not None
        self.status_code = self.parser.get_status_code()
        self.keep_alive = self.parser.should_keep_alive()  # read while parsing (the parser resets at the end)

    def on_message_complete(self) -> None:
        self.complete = True

    def header(self, name: bytes) -> bytes | None:
        """The first value of a header (`name` in lower case), or None."""
        return next((value for key, value in self.headers if key == name), None)


def _head(method: bytes, target: bytes, headers: list[tuple[bytes, bytes]]) -> bytes:
    """A request's head; a header name or value holding a line break is refused (it would end the head)."""
    lines = [method + b" " + target + b" HTTP/1.1"]
    for name, value in headers:
        if b"\n" in name or b"\r" in name or b"\n" in value or b"\r" in value or b":" in name:
            raise ValueError(f"invalid header {name!r}")
        lines.append(name + b": " + value)
    return b"\r\n".join(lines) + b"\r\n\r\n"


class _Connection:
    """One keep-alive HTTP/1.1 connection."""

    __slots__ = ("keep", "socket", "stream")

    def __init__(self, stream: anyio.abc.SocketStream) -> None:
        self.stream = stream
        self.socket = stream.extra(anyio.abc.SocketAttribute.raw_socket)
        self.keep = False

    def closed_while_idle(self) -> bool:
        """Whether the server closed this idle connection: its socket is readable (end of stream, a reset) or
        already closed. One poll, never blocking. (Bytes a server sent on an idle connection without closing it,
        which HTTP/1.1 does not allow, may already sit in the event loop's buffer, unseen here.)"""
        fd = self.socket.fileno()  # -1 once the event loop closed it; never a number another socket reused
        return fd < 0 or bool(select.select((fd,), (), (), 0)[0])

    async def exchange(self, method: bytes, target: bytes, headers: list[tuple[bytes, bytes]],
                       body: bytes) -> tuple[Answer, bytes]:
        """Send one request in one write and read its whole answer (any failure raises: never sent again).
        The request carries a Content-Length when it has a body (callers put it in `headers`)."""
        await self.stream.send(_head(method, target, headers) + body)
        answer = Answer()
        parser = answer.parser
        assert parser is not None
        while not answer.complete:
            try:
                received = await self.stream.receive(_CHUNK)
            except (anyio.EndOfStream, anyio.BrokenResourceError, ConnectionError):
                raise httpx2.RemoteProtocolError("the server closed the connection without a complete answer") from None
            parser.feed_data(received)
        self.keep = answer.keep_alive
        content, answer.body, answer.parser = b"".join(answer.body), [], None  # no cycle left to collect
        return answer, content

    def reusable(self) -> bool:
        """True when the server keeps the connection after the exchange (then ready for the next one)."""
        return self.keep


class LoopbackTransport(httpx2.AsyncBaseTransport):
    """Keep-alive connections to one local HTTP server; at most `max_connections` at a time."""

    def __init__(self, max_connections: int = 32) -> None:
        self._idle: list[_Connection] = []
        self._slots = anyio.Semaphore(max_connections)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        timeouts: dict[str, Any] = request.extensions.get("timeout", {})
        body = await request.aread()
        heads = request.headers.raw
        if body and not any(name.lower() == b"content-length" for name, _ in heads):
            heads = [*heads, (b"content-length", str(len(body)).encode("ascii"))]
        response, content = await self.exchange(request, request.method.encode("ascii"), request.url.raw_path,
                                                heads, body, timeouts.get("connect"), timeouts.get("read"))
        return httpx2.Response(response.status_code, headers=response.headers,
                               stream=httpx2.ByteStream(content),
                               extensions={"http_version": b"HTTP/1.1", "reason_phrase": response.reason})

    async def exchange(self, request: httpx2.Request, method: bytes, target: bytes,
                       headers: list[tuple[bytes, bytes]], body: bytes, connect_timeout: float | None,
                       read_timeout: float | None) -> tuple[Answer, bytes]:
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


def _as_httpx(exc: BaseException, request: httpx2.Request) -> BaseException:
    """httpx's exception for a failed exchange (cancellation and other exceptions pass unchanged)."""
    if isinstance(exc, TimeoutError):
        return httpx2.ReadTimeout("the server did not answer in time", request=request)
    if isinstance(exc, httptools.HttpParserError):
        return httpx2.RemoteProtocolError(f"the server's answer is not HTTP/1.1: {exc}", request=request)
    if isinstance(exc, httpx2.RemoteProtocolError):
        return httpx2.RemoteProtocolError(str(exc), request=request)
    if isinstance(exc, (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)):
        return httpx2.ReadError(f"the connection failed: {exc!r}", request=request)
    return exc

"""The harness's MCP client transport to a server it launched on loopback: Streamable HTTP POSTs over the
kept connections of `LoopbackTransport`, without building httpx requests and responses.

`mcp.Client` takes it as it takes the SDK's `streamable_http_client`, and the requests on the wire are the
ones that client sends (each JSON-RPC message POSTed to the endpoint with `Accept: application/json,
text/event-stream`, the session id the server gave at `initialize`, the protocol version and the other
per-message headers the session stamps; a `notifications/cancelled` at the 2026 protocol aborts its request's
POST instead of being sent, as the SDK's transport does). What it leaves out serves what the harness does not
use: there is no GET stream for messages the server sends unasked (the generated servers send none: tools
neither log nor report progress), an answer must be JSON (the generated servers answer JSON, `json_response`;
an event stream is answered with an error naming it), redirects are not followed, and the session is never
terminated with a DELETE (the harness's server lives as long as its client). Per request it saves the SDK's
two tasks and task group, httpx's request, URL, header and response objects and the message's second encoding
(about a third of the harness's CPU over HTTP, benchmarks/README.md). Messages are built and parsed with the
SDK's types, as `launch/lines.py` does for the pipe.

A POST that fails (no connection, the connection closed before an answer, no answer in time) is answered
with a JSON-RPC error for its request (CONNECTION_CLOSED, or REQUEST_TIMEOUT): that call fails and its episode
takes the infra-error path; it is never sent again, as the server may have run it (launch/loopback_http.py).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
from anyio.abc import ObjectSendStream
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params
from mcp.shared.message import ClientMessageMetadata, SessionMessage
from mcp.types import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_TIMEOUT,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    RequestId,
    jsonrpc_message_adapter,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from envscaler_mcp.launch.loopback_http import LoopbackTransport

log = logging.getLogger(__name__)
_SESSION = "mcp-session-id"


class _Endpoint:
    """One MCP endpoint's request heads: its path, the fixed headers, the session id and the protocol version
    the session last stamped (used on messages that carry no stamp, as the SDK's transport does)."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self.request = httpx2.Request("POST", url)  # the server's address, and the request errors name
        self.target = self.request.url.raw_path
        self.fixed = [(b"host", self.request.url.netloc), (b"accept", b"application/json, text/event-stream"),
                      (b"content-type", b"application/json"),
                      *((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items())]
        self.session_id: bytes | None = None
        self.version: str | None = None

    def headers(self, stamped: dict[str, str] | None, length: int) -> list[tuple[bytes, bytes]]:
        heads = [*self.fixed, (b"content-length", str(length).encode("ascii"))]
        if self.session_id is not None:
            heads.append((_SESSION.encode("ascii"), self.session_id))
        own = {k.lower(): v for k, v in (stamped or {}).items()}
        if self.version is not None and MCP_PROTOCOL_VERSION_HEADER not in own:
            own[MCP_PROTOCOL_VERSION_HEADER] = self.version
        heads.extend((k.encode("latin-1"), v.encode("latin-1")) for k, v in own.items())
        return heads


def _error(request_id: RequestId, code: int, message: str) -> SessionMessage:
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message)))


def _answer(message: JSONRPCRequest, status: int, content_type: str, body: bytes,
            has_session: bool) -> SessionMessage:
    """The session message a request's HTTP answer stands for (an error message for anything but JSON)."""
    if status == 202:
        return _error(message.id, INVALID_REQUEST, "server answered a request with 202 Accepted")
    is_json = content_type.startswith("application/json")
    if status >= 400:
        if is_json:  # a JSON-RPC error at a non-2xx status: that error, for this request's id
            try:
                parsed = jsonrpc_message_adapter.validate_json(body, by_name=False)
            except ValueError:
                parsed = None
            if isinstance(parsed, JSONRPCError):
                return SessionMessage(JSONRPCError(jsonrpc="2.0", id=message.id, error=parsed.error))
        if status == 404:
            return (_error(message.id, INVALID_REQUEST, "Session terminated") if has_session
                    else _error(message.id, METHOD_NOT_FOUND, "Not Found"))
        return _error(message.id, INTERNAL_ERROR, "Server returned an error response")
    if not is_json:
        return _error(message.id, INVALID_REQUEST, f"Unexpected content type: {content_type} (this transport "
                                                   "reads JSON answers only)")
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(body, by_name=False))
    except ValueError as exc:
        return _error(message.id, PARSE_ERROR, f"Failed to parse JSON response: {exc}")


class _Sender(ObjectSendStream[SessionMessage]):
    """The client's write stream: each message handed on in the task that sends it (a request's POST then
    runs in a task of its own), with no task between the session and the transport."""

    def __init__(self, write: Callable[[SessionMessage], Awaitable[None]]) -> None:
        self._write = write
        self._closed = False

    async def send(self, item: SessionMessage) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        await self._write(item)

    async def aclose(self) -> None:
        self._closed = True


@asynccontextmanager
async def loopback_mcp_client(transport: LoopbackTransport, url: str, headers: dict[str, str], *,
                              connect_timeout: float = 30.0, read_timeout: float | None = None,
                              on_post: Callable[[JSONRPCMessage], None] | None = None) -> AsyncIterator[Any]:
    """(read stream, write stream) of an MCP client of the Streamable HTTP endpoint at `url`, as `mcp.Client`
    takes them, through `transport`'s connections; `headers` go with every POST (the bearer token).
    `on_post` sees each message as it is POSTed."""
    endpoint = _Endpoint(url, headers)
    read_send, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    in_flight: dict[RequestId, tuple[anyio.CancelScope, bool]] = {}

    async def post(message: JSONRPCMessage, stamped: dict[str, str] | None) -> None:
        body = message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8")
        if on_post is not None:
            on_post(message)
        try:
            response, content = await transport.exchange(
                endpoint.request, b"POST", endpoint.target, endpoint.headers(stamped, len(body)), body,
                connect_timeout, read_timeout)
        except ValueError as exc:  # a header no HTTP head can carry: nothing was sent
            if isinstance(message, JSONRPCRequest):
                await read_send.send(_error(message.id, INVALID_REQUEST, f"the request was not sent: {exc}"))
            return
        except httpx2.TransportError as exc:
            if isinstance(message, JSONRPCRequest):
                code = REQUEST_TIMEOUT if isinstance(exc, httpx2.TimeoutException) else CONNECTION_CLOSED
                await read_send.send(_error(message.id, code, f"no answer from the server ({type(exc).__name__}: "
                                                              f"{exc}); the request was not sent again, as the "
                                                              "server may have run it"))
            else:
                log.debug("a notification's POST failed: %s", exc)
            return
        if not isinstance(message, JSONRPCRequest):
            return  # a notification's answer (202) carries nothing
        if message.method == "initialize" and response.status_code < 400:
            endpoint.session_id = response.header(_SESSION.encode("ascii")) or endpoint.session_id
        content_type = (response.header(b"content-type") or b"").decode("latin-1").lower()
        answer = _answer(message, response.status_code, content_type, content, endpoint.session_id is not None)
        del content
        await read_send.send(answer)

    async def request(message: JSONRPCRequest, stamped: dict[str, str] | None, scope: anyio.CancelScope) -> None:
        entry = in_flight[message.id]
        try:
            with scope:
                await post(message, stamped)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the client is closing: nobody waits for the answer
        finally:
            if in_flight.get(message.id) is entry:
                del in_flight[message.id]

    def cancelled_here(message: JSONRPCMessage) -> bool:
        """An outbound `notifications/cancelled` at the 2026 protocol: its request's POST is aborted and the
        frame not sent (True); below 2026 the frame is the signal and is POSTed (False). As the SDK does."""
        if not (isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled"):
            return False
        request_id = cancelled_request_id_from_params(message.params)
        flight = in_flight.get(request_id) if request_id is not None else None
        if flight is not None:
            if flight[1]:
                flight[0].cancel()
            return flight[1]
        return endpoint.version in MODERN_PROTOCOL_VERSIONS

    async def write(session_message: SessionMessage) -> None:
        message = session_message.message
        metadata = session_message.metadata
        stamped = metadata.headers if isinstance(metadata, ClientMessageMetadata) else None
        if isinstance(message, JSONRPCRequest) and message.method == "initialize":
            endpoint.version = None  # the negotiation carries no version of an earlier probe
        elif stamped and (version := stamped.get(MCP_PROTOCOL_VERSION_HEADER)) is not None:
            endpoint.version = version
        if cancelled_here(message):
            return
        if isinstance(message, JSONRPCRequest):
            superseded = in_flight.get(message.id)
            if superseded is not None:  # a reused id: the old POST must not answer the new request
                superseded[0].cancel()
            scope = anyio.CancelScope()
            in_flight[message.id] = (scope, endpoint.version in MODERN_PROTOCOL_VERSIONS)
            tg.start_soon(request, message, stamped, scope)
        else:
            await post(message, stamped)

    async with read_send, anyio.create_task_group() as tg:
        write_stream = _Sender(write)
        try:
            yield read_stream, write_stream
        finally:
            tg.cancel_scope.cancel()
            for stream in (read_stream, write_stream):
                await stream.aclose()

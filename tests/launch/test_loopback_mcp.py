"""The harness's MCP client transport over loopback HTTP (launch/loopback_mcp.py), against a small local HTTP
server with canned answers: the headers a Streamable HTTP client sends (session id from `initialize`, the
session's protocol-version stamp), how each kind of answer reaches the session, a dropped POST answered with
an error and never sent again, and a cancelled request at the 2026 protocol aborting its POST unsent."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import anyio
from mcp.shared.message import ClientMessageMetadata, SessionMessage
from mcp.types import (
    CONNECTION_CLOSED,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)

from envscaler_mcp.launch.loopback_http import LoopbackTransport
from envscaler_mcp.launch.loopback_mcp import loopback_mcp_client
from tests.launch.local_http import LocalServer

Answer = tuple[int, str, bytes, dict[str, str]] | None  # status, content type, body, headers; None: drop


def _ok(request: dict[str, Any]) -> Answer:
    body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"echo": request["method"]}}).encode()
    return 200, "application/json", body, {}


class _Server(LocalServer):
    """Answers each POST with `answer(message)`; keeps each request's headers and message."""

    path = "/admin/mcp"

    def __init__(self, answer: Callable[[dict[str, Any]], Answer | str]) -> None:
        self.answer = answer
        self.seen: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.closed_early = 0  # connections the client closed while the server held a request

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return
                lines = head.decode().split("\r\n")[1:]
                headers = {k.strip().lower(): v.strip() for k, v in (x.split(":", 1) for x in lines if ":" in x)}
                message = json.loads(await reader.readexactly(int(headers["content-length"])))
                self.seen.append((headers, message))
                answer = self.answer(message) if "id" in message else (202, "", b"", {})
                if answer == "hang":
                    if await reader.read(1) == b"":
                        self.closed_early += 1
                    return
                if answer is None or isinstance(answer, str):
                    return
                status, content_type, body, extra = answer
                heads = "".join(f"{k}: {v}\r\n" for k, v in ({"Content-Type": content_type} | extra).items())
                writer.write(f"HTTP/1.1 {status} X\r\n{heads}Content-Length: {len(body)}\r\n\r\n".encode() + body)
                await writer.drain()
        finally:
            writer.close()


def _request(request_id: int, method: str, version: str | None = None) -> SessionMessage:
    metadata = ClientMessageMetadata(headers={"mcp-protocol-version": version}) if version else None
    return SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method), metadata=metadata)


async def _exchange(server: _Server, messages: list[SessionMessage], answers: int, one_by_one: bool = False
                    ) -> list[Any]:
    """Send `messages` in order, then read `answers` messages back (`one_by_one`: each answer before the next
    message, as a session does with `initialize`)."""
    got: list[Any] = []
    async with server as url, loopback_mcp_client(LoopbackTransport(), url, {"Authorization": "Bearer t"},
                                                  read_timeout=20) as (read, write):
        with anyio.fail_after(30):
            for message in messages:
                await write.send(message)
                if one_by_one:
                    got.append((await read.receive()).message)
            while len(got) < answers:
                got.append((await read.receive()).message)
    return got


def test_session_id_and_protocol_version_go_with_the_following_requests() -> None:
    def answer(message: dict[str, Any]) -> Answer:
        ok = _ok(message)
        assert ok is not None
        return (*ok[:3], {"mcp-session-id": "s-1"}) if message["method"] == "initialize" else ok

    server = _Server(answer)
    got = anyio.run(_exchange, server, [_request(1, "initialize"), _request(2, "tools/list", "2025-11-25"),
                                        _request(3, "tools/call")], 3, True)
    assert [m.result for m in got] == [{"echo": "initialize"}, {"echo": "tools/list"}, {"echo": "tools/call"}]
    first, second, third = (headers for headers, _ in server.seen)
    assert "mcp-session-id" not in first and "mcp-protocol-version" not in first
    assert second["mcp-session-id"] == third["mcp-session-id"] == "s-1"
    assert second["mcp-protocol-version"] == third["mcp-protocol-version"] == "2025-11-25"  # stamped, then kept
    assert first["authorization"] == "Bearer t" and first["accept"] == "application/json, text/event-stream"
    assert first["content-type"] == "application/json"


def test_each_kind_of_answer_reaches_the_session_as_the_sdk_gives_it() -> None:
    def answer(message: dict[str, Any]) -> Answer:
        error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32602, "message": "bad arguments"}}
        return {"a": (400, "application/json", json.dumps(error).encode(), {}),
                "b": (404, "text/plain", b"no", {}),
                "c": (200, "text/event-stream", b"data: {}\n\n", {}),
                "d": (202, "", b"", {})}.get(message["method"]) or _ok(message)

    got = anyio.run(_exchange, _Server(answer), [_request(i, m) for i, m in enumerate("abcde")], 5)
    by_id = {m.id: m for m in got}
    assert all(isinstance(by_id[i], JSONRPCError) for i in range(4)) and isinstance(by_id[4], JSONRPCResponse)
    assert (by_id[0].error.code, by_id[0].error.message) == (-32602, "bad arguments")  # the id is the request's
    assert by_id[1].error.code == METHOD_NOT_FOUND
    assert by_id[2].error.code == INVALID_REQUEST and "text/event-stream" in by_id[2].error.message
    assert by_id[3].error.code == INVALID_REQUEST and "202" in by_id[3].error.message


def test_a_dropped_post_is_an_error_for_its_request_and_is_not_sent_again() -> None:
    server = _Server(lambda message: None if message["method"] == "tools/call" else _ok(message))
    got = anyio.run(_exchange, server, [_request(7, "tools/call"), _request(8, "tools/list")], 2)
    by_id = {m.id: m for m in got}
    assert isinstance(by_id[7], JSONRPCError) and by_id[7].error.code == CONNECTION_CLOSED
    assert isinstance(by_id[8], JSONRPCResponse)
    assert [m["method"] for _, m in server.seen].count("tools/call") == 1


def _cancel(request_id: int) -> SessionMessage:
    return SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled",
                                              params={"requestId": request_id}))


async def _cancel_in_flight(server: _Server, version: str) -> None:
    async with server as url, loopback_mcp_client(LoopbackTransport(), url, {}, read_timeout=20) as (read, write):
        with anyio.fail_after(30):
            await write.send(_request(1, "tools/call", version))
            while not server.seen:
                await anyio.sleep(0.01)
            await write.send(_cancel(1))
            await write.send(_request(2, "tools/list", version))
            while (await read.receive()).message.id != 2:
                pass
            if version == "2026-07-28":
                while not server.closed_early:
                    await anyio.sleep(0.01)


def test_a_cancelled_request_at_the_2026_protocol_aborts_its_post_and_sends_no_frame() -> None:
    server = _Server(lambda message: "hang" if message["method"] == "tools/call" else _ok(message))
    anyio.run(_cancel_in_flight, server, "2026-07-28")
    assert [m["method"] for _, m in server.seen] == ["tools/call", "tools/list"]
    assert server.closed_early == 1  # the held request's connection was closed by the client


def test_below_2026_the_cancellation_frame_is_posted() -> None:
    server = _Server(lambda message: "hang" if message["method"] == "tools/call" else _ok(message))
    anyio.run(_cancel_in_flight, server, "2025-11-25")
    assert [m["method"] for _, m in server.seen] == ["tools/call", "notifications/cancelled", "tools/list"]

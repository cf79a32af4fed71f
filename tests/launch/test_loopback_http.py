"""LoopbackTransport (launch/loopback_http.py): keep-alive reuse, a connection the server closed while idle,
a request the server ran and then closed on without answering (never sent twice), a server that answers
nothing, a read timeout, each against a small local HTTP server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import anyio
import httpx2
import pytest

from envscaler_mcp.launch.loopback_http import LoopbackTransport
from tests.launch.local_http import LocalServer


class _Server(LocalServer):
    """A local HTTP/1.1 server: answers each request with its method, path and body; `mode` changes that."""

    def __init__(self, mode: str = "keep") -> None:
        # keep | close-after (closes each connection once it answered) | mute | slow | garbage (answers with
        # bytes that are no HTTP) | run-and-drop (a request
        # whose body is b"call" is run, counted in `calls`, and its connection closed without an answer)
        self.mode = mode
        self.connections = 0
        self.closed = 0  # connections this server has closed
        self.calls = 0
        self.requests: list[bytes] = []

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return
                lines = head.decode().split("\r\n")
                length = next((int(line.split(":")[1]) for line in lines if line.lower().startswith("content-length")),
                              0)
                body = await reader.readexactly(length)
                if self.mode == "mute":
                    return
                self.requests.append(body)
                if self.mode == "run-and-drop" and body == b"call":
                    self.calls += 1  # the state changed; then the connection ends with no answer
                    return
                if self.mode == "slow":
                    await asyncio.sleep(30)
                if self.mode == "garbage":
                    writer.write(b"NOT HTTP AT ALL\r\n\r\n")
                    await writer.drain()
                    continue
                answer = f"{lines[0].split()[0]} {lines[0].split()[1]} ".encode() + body
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
                             + str(len(answer)).encode() + b"\r\n\r\n" + answer)
                await writer.drain()
                if self.mode == "close-after":
                    return  # as a server whose keep-alive ran out: the answer said nothing of a close
        finally:
            writer.close()
            await writer.wait_closed()
            self.closed += 1


async def _with_client(server: _Server, body: Callable[[httpx2.AsyncClient], Any],
                       **timeout: Any) -> Any:
    transport = LoopbackTransport()
    async with server as url, httpx2.AsyncClient(base_url=url, transport=transport,
                                                 timeout=httpx2.Timeout(10.0, **timeout)) as client:
        return await body(client)


def test_requests_share_one_connection_and_get_their_own_answers() -> None:
    server = _Server()

    async def body(client: httpx2.AsyncClient) -> list[str]:
        answers = [(await client.post(f"/p{i}", content=b"x" * i)).text for i in range(5)]
        answers.append((await client.get("/g")).text)
        return answers

    answers = anyio.run(_with_client, server, body)
    assert answers == [f"POST /p{i} " + "x" * i for i in range(5)] + ["GET /g "]
    assert server.connections == 1


def test_concurrent_requests_each_get_their_own_answer() -> None:
    server = _Server()

    async def body(client: httpx2.AsyncClient) -> dict[int, str]:
        got: dict[int, str] = {}

        async def one(i: int) -> None:
            got[i] = (await client.post("/c", content=str(i).encode())).text

        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(one, i)
        return got

    assert anyio.run(_with_client, server, body) == {i: f"POST /c {i}" for i in range(20)}


async def _until(condition: Callable[[], bool]) -> None:
    with anyio.fail_after(30):
        while not condition():
            await anyio.sleep(0.01)


def test_connections_closed_while_idle_are_replaced_and_the_request_sent_once() -> None:
    server = _Server("close-after")

    async def body(client: httpx2.AsyncClient) -> list[str]:
        first: list[str] = []

        async def one(i: int) -> None:
            first.append((await client.post("/a", content=str(i).encode())).text)

        async with anyio.create_task_group() as tg:  # three requests at once: three connections, then idle
            for i in range(3):
                tg.start_soon(one, i)
        await _until(lambda: server.closed == 3)  # the server has closed every one of them
        second = (await client.post("/b", content=b"next")).text
        return [*sorted(first), second]

    assert anyio.run(_with_client, server, body) == ["POST /a 0", "POST /a 1", "POST /a 2", "POST /b next"]
    assert sorted(server.requests) == [b"0", b"1", b"2", b"next"]  # each request reached the server exactly once
    assert server.connections == 4  # the next request went on a new connection


@pytest.mark.parametrize("reused", [True, False])
def test_a_request_the_server_ran_then_dropped_is_never_sent_again(reused: bool) -> None:
    """A server that ran a state-changing call and closed the connection without answering: the call ran once
    and the caller got an error, on a kept-alive connection (where a retry would look safe) as on a new one."""
    server = _Server("run-and-drop")

    async def body(client: httpx2.AsyncClient) -> None:
        if reused:
            assert (await client.post("/warm", content=b"warm")).text == "POST /warm warm"
        await client.post("/call", content=b"call")

    with pytest.raises(httpx2.HTTPError):
        anyio.run(_with_client, server, body)
    assert server.calls == 1
    assert server.connections == 1  # not sent again on a new connection either


@pytest.mark.parametrize(("mode", "error"), [("mute", httpx2.HTTPError), ("garbage", httpx2.RemoteProtocolError)])
def test_a_server_that_answers_nothing_or_no_http_is_an_httpx_error(mode: str, error: type[Exception]) -> None:
    async def body(client: httpx2.AsyncClient) -> None:
        await client.post("/x", content=b"1")

    with pytest.raises(error):
        anyio.run(_with_client, _Server(mode), body)


def test_a_header_holding_a_line_break_is_refused_before_anything_is_sent() -> None:
    server = _Server()

    async def body(client: httpx2.AsyncClient) -> None:
        transport = LoopbackTransport()
        request = httpx2.Request("POST", str(client.base_url))
        try:
            await transport.exchange(request, b"POST", b"/x", [(b"host", b"h"), (b"x-a", b"1\r\nx-b: 2")], b"",
                                     5.0, 5.0)
        finally:
            await transport.aclose()

    with pytest.raises(ValueError, match="invalid header"):
        anyio.run(_with_client, server, body)
    assert server.requests == []

"""LoopbackTransport (launch/loopback_http.py): keep-alive reuse, a connection the server closed while idle,
a server that answers nothing, a read timeout, each against a small local HTTP server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import anyio
import httpx2
import pytest

from envscaler_mcp.launch.loopback_http import LoopbackTransport


class _Server:
    """A local HTTP/1.1 server: answers each request with its method, path and body; `mode` changes that."""

    def __init__(self, mode: str = "keep") -> None:
        self.mode = mode  # keep | close-after (closes each connection once it answered) | mute | slow
        self.connections = 0
        self.requests: list[bytes] = []
        self.server: asyncio.base_events.Server | None = None

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
                if self.mode == "slow":
                    await asyncio.sleep(30)
                answer = f"{lines[0].split()[0]} {lines[0].split()[1]} ".encode() + body
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
                             + str(len(answer)).encode() + b"\r\n\r\n" + answer)
                await writer.drain()
                if self.mode == "close-after":
                    return  # as a server whose keep-alive ran out: the answer said nothing of a close
        finally:
            writer.close()

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc: Any) -> None:
        assert self.server is not None
        self.server.close()


async def _with_client(server: _Server, body: Callable[[httpx2.AsyncClient], Any], **timeout: Any) -> Any:
    async with server as url, httpx2.AsyncClient(base_url=url, transport=LoopbackTransport(),
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


def test_a_connection_closed_while_idle_is_replaced_and_the_request_sent_once() -> None:
    server = _Server("close-after")

    async def body(client: httpx2.AsyncClient) -> list[str]:
        first = (await client.post("/a", content=b"1")).text
        await anyio.sleep(0.2)  # the server's close reaches this process
        second = (await client.post("/b", content=b"2")).text
        return [first, second]

    assert anyio.run(_with_client, server, body) == ["POST /a 1", "POST /b 2"]
    assert server.requests == [b"1", b"2"]  # each request reached the server exactly once
    assert server.connections == 2


def test_a_server_that_answers_nothing_is_an_httpx_error() -> None:
    async def body(client: httpx2.AsyncClient) -> None:
        await client.post("/x", content=b"1")

    with pytest.raises(httpx2.HTTPError):
        anyio.run(_with_client, _Server("mute"), body)


def test_a_slow_answer_is_a_read_timeout() -> None:
    async def body(client: httpx2.AsyncClient) -> None:
        await client.post("/x", content=b"1")

    with pytest.raises(httpx2.ReadTimeout):
        anyio.run(lambda: _with_client(_Server("slow"), body, read=0.3))

"""A small asyncio HTTP test server on a free loopback port, for the loopback transports' tests: a subclass
serves each connection in `_serve`, and `async with server as url` runs it for the block."""

from __future__ import annotations

import asyncio
from typing import Any


class LocalServer:
    path = ""  # what the url names after the server's address
    server: asyncio.base_events.Server | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}{self.path}"

    async def __aexit__(self, *exc: Any) -> None:
        assert self.server is not None
        self.server.close()

"""Episodes on servers the harness did not launch (`--server CMD`, `--url URL`): tools only, no admin plane.

Without an admin plane the harness can neither start an episode at a scenario's initial state nor read the
final state, so validators cannot run: checks are recorded as not scorable.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, Tool

from envscaler_mcp.errors import UsageError
from envscaler_mcp.harness.source import StateUnavailable

_READ_TIMEOUT_S = 120.0


class ClientEpisode:
    """An episode that is just an MCP client session."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def list_tools(self) -> list[Tool]:
        """The server's tools."""
        return list((await self.client.list_tools()).tools)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        """Call a tool."""
        return await self.client.call_tool(name, arguments)

    async def get_state(self) -> dict[str, Any]:
        """Always unavailable: the server has no admin plane the harness knows of."""
        raise StateUnavailable("external server: no admin plane")


class ExternalSource:
    """EpisodeSource over an external server: a fresh stdio process per episode, or a shared URL."""

    has_admin = False

    def __init__(self, *, command: str | None = None, url: str | None = None) -> None:
        if bool(command) == bool(url):
            raise UsageError("an external server needs exactly one of --server 'CMD' or --url URL")
        self.command = shlex.split(command) if command else []
        self.url = url

    @asynccontextmanager
    async def episode(self, initial_state: dict[str, Any] | None = None) -> AsyncIterator[ClientEpisode]:
        """Connect; the initial state cannot be set (the server starts where it starts)."""
        target: Any = self.url
        if self.command:
            target = StdioServerParameters(command=self.command[0], args=self.command[1:], env=dict(os.environ))
        async with Client(target, read_timeout_seconds=_READ_TIMEOUT_S) as client:
            yield ClientEpisode(client)


NOT_SCORABLE_WARNING = (
    "external server: it has no admin plane the harness can use, so episodes start from the server's own state "
    "(not the scenarios' initial states) and final-state validators cannot run; checks are recorded as "
    "'not scorable' and only steps, tool calls, errors, tokens and latency are measured."
)

"""What the harness needs from a server: isolated episodes with tools and (with an admin plane) state.

`envscaler_mcp.launch` servers satisfy EpisodeSource directly (`server.episode(state)`); external servers
(`--server CMD`, `--url URL`) are wrapped in harness/external.py.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol

from mcp.types import CallToolResult, Tool

from envscaler_mcp._json import JSONObject, State


class EpisodeHandle(Protocol):
    """One isolated episode on a server."""

    async def list_tools(self) -> list[Tool]:
        """The tools offered to the agent (admin plane excluded)."""
        ...

    async def call_tool(self, name: str, arguments: JSONObject) -> CallToolResult:
        """Call a tool through MCP."""
        ...

    async def get_state(self) -> State:
        """The episode's current state through the admin plane (launch.NoAdminPlane without one)."""
        ...


class EpisodeSource(Protocol):
    """Anything that opens isolated episodes at a given initial state."""

    def episode(
        self, initial_state: State | None = None
    ) -> AbstractAsyncContextManager[EpisodeHandle]:
        """Open an episode at `initial_state` (None: the server's default state)."""
        ...


def has_admin_plane(source: object) -> bool:
    """Whether final states can be read from this source (launch servers: yes; external ones say so)."""
    return bool(getattr(source, "has_admin", True))

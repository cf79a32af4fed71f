"""What the harness needs from a server: isolated episodes with tools and (with an admin plane) state.

`envscaler_mcp.launch` servers satisfy EpisodeSource directly (`server.episode(state)`); external servers
(`--server CMD`, `--url URL`) are wrapped in harness/external.py.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol

from envscaler_mcp._json import State
from envscaler_mcp.launch.episodes import Episode


class EpisodeSource(Protocol):
    """Anything that opens isolated episodes at a given initial state."""

    def episode(
        self, initial_state: State | None = None
    ) -> AbstractAsyncContextManager[Episode]:
        """Open an episode at `initial_state` (None: the server's default state)."""
        ...


def has_admin_plane(source: object) -> bool:
    """Whether final states can be read from this source (launch servers: yes; external ones say so)."""
    return bool(getattr(source, "has_admin", True))

"""External MCP servers (a command or a URL) that envscaler-mcp did not render: tools only, no admin plane."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from mcp import Client, StdioServerParameters

from envscaler_mcp._json import State
from envscaler_mcp.errors import UsageError
from envscaler_mcp.launch.episodes import ClientEpisode, Episode, NoAdminPlane
from envscaler_mcp.launch.launched import LaunchedServer


class ExternalServer(LaunchedServer):
    """Any MCP server given by a command (stdio, a process per episode) or a URL; no admin plane."""

    def __init__(self, command: Sequence[str] | None, url: str | None, env: dict[str, str] | None,
                 cwd: str | None, client_timeout: float) -> None:
        if (command is None) == (url is None):
            raise UsageError("give exactly one of command=[...] or url=... for an external server")
        self.command = list(command) if command else None
        self.url = url
        self.env = env
        self.cwd = cwd
        self.client_timeout = client_timeout
        self.transport = "stdio" if command else "http"
        self._count = itertools.count()

    @asynccontextmanager
    async def episode(self, initial_state: State | None = None, *,
                      scenario_id: str | None = None) -> AsyncIterator[Episode]:
        if initial_state is not None or scenario_id:
            raise NoAdminPlane("an external server has no admin plane: it cannot start an episode at a given "
                               "state; open the episode without one")
        if self.command:
            params = StdioServerParameters(command=self.command[0], args=self.command[1:], env=self.env,
                                           cwd=self.cwd)
            client = Client(params, read_timeout_seconds=self.client_timeout)
        else:
            client = Client(str(self.url), read_timeout_seconds=self.client_timeout)
        async with client:
            yield ClientEpisode(client, episode_id=f"external-{next(self._count)}", transport=self.transport,
                                state_reader=None, text_only=False)  # nothing in `_meta` a server may not expect


@asynccontextmanager
async def launch_external(*, command: Sequence[str] | None = None, url: str | None = None,
                          env: dict[str, str] | None = None, cwd: str | None = None,
                          client_timeout: float = 120.0) -> AsyncIterator[LaunchedServer]:
    """An external MCP server (a command spawned per episode, or a URL). Episodes have no get_state."""
    yield ExternalServer(command, url, env, cwd, client_timeout)

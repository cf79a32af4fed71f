"""Episodes on servers the harness did not launch (`--server CMD`, `--url URL`): tools only, no admin plane.

Without an admin plane the harness can neither start an episode at a scenario's initial state nor read the
final state, so validators cannot run: checks are recorded as not scorable.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from envscaler_mcp._json import State
from envscaler_mcp.launch import LaunchedServer, launch_external
from envscaler_mcp.launch.episodes import Episode

NOT_SCORABLE_WARNING = (
    "external server: it has no admin plane the harness can use, so episodes start from the server's own "
    "state "
    "(not the scenarios' initial states) and final-state validators cannot run; checks are recorded as "
    "'not scorable' and only steps, tool calls, errors, tokens and latency are measured."
)


class ExternalSource:
    """An external launch server as an EpisodeSource that says it has no admin plane."""

    has_admin = False

    def __init__(self, server: LaunchedServer) -> None:
        self.server = server

    def episode(self, initial_state: State | None = None) -> AbstractAsyncContextManager[Episode]:
        """An episode in the server's own state (an initial state cannot be set without an admin plane)."""
        return self.server.episode(None)


@asynccontextmanager
async def external_source(
    *, command: str | None = None, url: str | None = None
) -> AsyncIterator[ExternalSource]:
    """`--server 'CMD'` (a fresh process per episode, with this process's environment) or `--url URL`."""
    argv = shlex.split(command) if command else None
    async with launch_external(command=argv, url=url, env=dict(os.environ) if argv else None) as server:
        yield ExternalSource(server)

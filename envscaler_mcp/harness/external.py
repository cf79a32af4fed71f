"""Episodes on servers the harness did not launch (`--server CMD`, `--url URL`): tools only, no admin plane.

Without an admin plane the harness can neither start an episode at a scenario's initial state nor read the
final state, so state checks cannot run (recorded as not scorable); transcript checks, which read what the
agent did and said, still run.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import AsyncIterator, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

from envscaler_mcp._json import State
from envscaler_mcp.launch import LaunchedServer, launch_external
from envscaler_mcp.launch.episodes import Episode
from envscaler_mcp.scenario.models import Scenario


def external_warning(scenarios: Iterable[Scenario]) -> str:
    """What an external server (no admin plane) means for these scenarios: which checks cannot run."""
    scenarios = list(scenarios)
    state = sum(1 for s in scenarios for c in s.checklist if c.kind == "state")
    transcript = sum(1 for s in scenarios for c in s.checklist if c.kind == "transcript")
    text = ("external server: it has no admin plane the harness can use, so episodes start from the server's "
            "own state (not the scenarios' initial states) and state checks cannot run")
    if state:
        text += f" ({state} state check(s) in these scenarios will be recorded as 'not scorable')"
    empty = sum(1 for s in scenarios if not s.checklist)
    if empty:
        text += (f"; {empty} scenario(s) have an empty checklist, so their episodes cannot be scored on any "
                 "server")
    if transcript:
        return text + f"; {transcript} transcript check(s) (what the agent did and said) will be scored."
    why = "have empty checklists" if empty == len(scenarios) else "have no transcript checks"
    return (text + f"; these scenarios {why}, so no episode can be scored: only steps, "
            "tool calls, errors, tokens and latency are measured.")


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

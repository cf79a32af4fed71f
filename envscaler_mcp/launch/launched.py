"""What every launched server offers (launch/servers.py starts one per transport): episodes, its isolation.

The transports' modules (servers.py for HTTP, pipe.py, stdio.py, memory.py, external.py) import this one, and
launch_server imports them, so no module of the stage imports one that imports it back.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path

from envscaler_mcp._json import State
from envscaler_mcp.isolation.report import IsolationReport
from envscaler_mcp.launch.episodes import Episode, WarmCache
from envscaler_mcp.launch.target import ServerDir


class LaunchedServer:
    """A running server (or the recipe for one): opens episodes with `episode(initial_state)`.

    `isolation` is the IsolationReport of its server processes (None until one has started)."""

    transport: str
    server_dir: ServerDir | None = None
    isolation: IsolationReport | None = None
    warm: WarmCache = WarmCache(enabled=False)

    def episode(self, initial_state: State | None = None, *,
                scenario_id: str | None = None) -> AbstractAsyncContextManager[Episode]:
        """An isolated episode at `initial_state` (None: the default state; or a bundled scenario's)."""
        raise NotImplementedError


def log_tail(path: Path, lines: int = 20) -> str:
    """The last lines of a server's log (for error messages)."""
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""

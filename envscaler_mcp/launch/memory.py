"""In-process servers: the generated package imported into this process (TESTS AND TRUSTED CODE ONLY).

The environment code then runs inside the caller's process with no limits; use http or stdio for
anything untrusted.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import ModuleType

from mcp import Client

from envscaler_mcp._json import State
from envscaler_mcp.errors import ServerStartError
from envscaler_mcp.launch.episodes import ClientEpisode, Episode, WarmCache
from envscaler_mcp.launch.launched import LaunchedServer
from envscaler_mcp.launch.server_process import in_process_report
from envscaler_mcp.launch.target import ServerDir

_memory_counter = itertools.count()


def import_server_package(server: ServerDir) -> ModuleType:
    """Import a generated package in this process under a unique name (TESTS / TRUSTED CODE ONLY)."""
    name = f"_envscaler_inproc_{next(_memory_counter)}_{server.package}"
    init = server.path / server.package / "__init__.py"
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(init.parent)])
    if spec is None or spec.loader is None:
        raise ServerStartError(f"cannot import {init}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class MemoryServer(LaunchedServer):
    """The generated package imported in process; one `EnvServer` per episode."""

    transport = "memory"

    def __init__(self, server: ServerDir, call_timeout: float | None, warm: bool = True) -> None:
        self.server_dir = server
        self.warm = WarmCache(warm, target_id=f"memory:{server.path}")
        self.call_timeout = call_timeout
        self.isolation = in_process_report()
        module = import_server_package(server)
        pkg = importlib.import_module(f"{module.__name__}.runtime.package")
        self._server_mod = importlib.import_module(f"{module.__name__}.runtime.server")
        self.package = pkg.load_package(server.path / server.package, module.__name__)
        self._count = itertools.count()

    @asynccontextmanager
    async def episode(self, initial_state: State | None = None, *,
                      scenario_id: str | None = None) -> AsyncIterator[Episode]:
        if initial_state is None and scenario_id:
            initial_state = self.package.scenario_state(scenario_id)
        env_server = self._server_mod.EnvServer(self.package, call_timeout=self.call_timeout,
                                                initial_state=initial_state)

        async def read_state() -> State:
            return dict((await env_server.default_episode()).get_state())

        async with Client(env_server.server, **self.warm.client_options()) as client:
            yield ClientEpisode(client, episode_id=f"memory-{next(self._count)}", transport="memory",
                          state_reader=read_state, warm=self.warm)

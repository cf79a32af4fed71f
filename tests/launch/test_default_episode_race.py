"""The default episode is built on first use: two first uses at once build it once (in process, with a zygote
whose fork waits until released, so both uses are inside the build together)."""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

import pytest

from envscaler_mcp.launch import resolve_target
from envscaler_mcp.launch.memory import import_server_package
from tests.render.fixture_env import scenarios, skeleton

pytestmark = pytest.mark.anyio


class _SlowZygote:
    """Stands in for the server zygote: each fork is counted and waits for `release`."""

    def __init__(self) -> None:
        self.forks: list[str] = []
        self.release = asyncio.Event()

    async def fork_episode(self, request: dict[str, Any], episode_id: str) -> object:
        self.forks.append(episode_id)
        await self.release.wait()
        return object()


def _env_server(zygote: _SlowZygote) -> Any:
    server = resolve_target(skeleton(), scenarios())
    module = import_server_package(server)
    package = importlib.import_module(f"{module.__name__}.runtime.package")
    runtime = importlib.import_module(f"{module.__name__}.runtime.server")
    return runtime.EnvServer(package.load_package(server.path / server.package, module.__name__), zygote=zygote)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_two_first_uses_at_once_build_the_default_episode_once() -> None:
    zygote = _SlowZygote()
    env = _env_server(zygote)
    assert env.episode_count() == 1 and "default" not in env.episodes  # counted, not built
    first = asyncio.ensure_future(env.default_episode())
    second = asyncio.ensure_future(env.episode("default"))
    while not zygote.forks:  # the first use is inside the build
        await asyncio.sleep(0)
    for _ in range(20):  # give the second use every chance to start a build of its own
        await asyncio.sleep(0)
    zygote.release.set()
    a, b = await asyncio.gather(first, second)
    assert zygote.forks == ["default"]
    assert a is b is env.episodes["default"]
    assert await env.default_episode() is a and zygote.forks == ["default"]

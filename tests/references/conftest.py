"""The episode factory the reference tests count episodes on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from envscaler_mcp.launch import launch_server
from tests.harness.shop import SCENARIOS, SKELETON


@pytest.fixture
async def counted() -> AsyncIterator[tuple[Any, list[int]]]:
    """An episode factory on the in-memory mini_shop server, and how many episodes it opened."""
    opened = [0]
    async with launch_server(SKELETON, transport="memory", scenarios=SCENARIOS) as server:
        @asynccontextmanager
        async def factory(state: Any) -> AsyncIterator[Any]:
            opened[0] += 1
            async with server.episode(state) as ep:
                yield ep

        yield factory, opened

"""The episode factory the reference tests count episodes on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.harness.shop import counted_episodes


@pytest.fixture
async def counted() -> AsyncIterator[tuple[Any, list[int]]]:
    """An episode factory on the in-memory mini_shop server, and how many episodes it opened."""
    async with counted_episodes() as found:
        yield found

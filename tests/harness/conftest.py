"""Fixtures of the harness tests: the mini_shop server (in memory) and the validator sandbox."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from envscaler_mcp.harness.checks import SandboxChecker
from tests.harness.shop import shop_server


@pytest.fixture
async def server() -> AsyncIterator[Any]:
    async with shop_server("memory") as s:
        yield s


@pytest.fixture
async def checker() -> AsyncIterator[SandboxChecker]:
    async with SandboxChecker() as c:
        yield c

"""Run folders for the viewer tests: two real runs of mini_shop (the oracle, and an agent that does nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envscaler_mcp.harness.config import RunConfig
from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.seats import Seat
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.report.summary import finish_run
from tests.harness.shop import MINI_SHOP


def config() -> RunConfig:
    return RunConfig.model_validate({"envs": [str(MINI_SHOP)], "agent": "mock", "transport": "memory",
                                     "progress": False})


@pytest.fixture(scope="session")
def runs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """<root>/oracle (every scenario solved) and <root>/idle (an agent that answers without doing anything)."""
    import anyio

    root = tmp_path_factory.mktemp("runs")

    async def make() -> None:
        await run_eval(config(), root / "oracle", agent=Seat.oracle())
        idle = Seat("mock", factory=lambda sc: MockProvider(["I cannot help with that."]))
        await run_eval(config(), root / "idle", agent=idle)

    anyio.run(make)
    finish_run(root / "oracle")
    finish_run(root / "idle")
    return root

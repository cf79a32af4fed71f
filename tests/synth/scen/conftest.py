"""Shared fixtures of the ScenGenerator tests: the two fixture skeletons, launched once per test module (memory
transport: the real generated server, in this process), and a way to run the pipeline on them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp.catalog.store import load_skeleton
from envscaler_mcp.launch import LaunchedServer, launch_server
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.skeleton.build import build_skeleton_from_dir
from envscaler_mcp.skeleton.models import EnvSkeleton
from envscaler_mcp.synth._common_progress import ReportingProvider, RunLog
from envscaler_mcp.synth.scen.pipeline import ScenOptions, run_scenarios
from envscaler_mcp.synth.scen.summary import ScenSummary
from tests.synth.fixtures.scen_router import ScenRouter

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def skeletons() -> dict[str, EnvSkeleton]:
    return {"mini_shop": load_skeleton(ROOT / "tests" / "fixtures" / "mini_shop" / "skeleton.json"),
            "scen_todo": build_skeleton_from_dir(ROOT / "tests" / "synth" / "fixtures" / "scen_todo")}


@pytest.fixture(scope="module")
async def servers(skeletons: dict[str, EnvSkeleton], anyio_backend: str) -> AsyncIterator[dict[str, LaunchedServer]]:
    async with launch_server(skeletons["mini_shop"], "memory") as shop, \
            launch_server(skeletons["scen_todo"], "memory") as todo:
        yield {"mini_shop": shop, "scen_todo": todo}


Runner = Callable[..., Any]


@pytest.fixture
def run(skeletons: dict[str, EnvSkeleton], servers: dict[str, LaunchedServer], tmp_path: Path) -> Runner:
    """run(env, case, n=1, **options) -> (summary, router, out folder); the pipeline on the shared server; with
    `logged`, the model calls reported to OUT/_work/synth.log as the command line's runs report them."""

    def opener(skeleton: EnvSkeleton) -> AbstractAsyncContextManager[LaunchedServer]:
        @asynccontextmanager
        async def shared() -> AsyncIterator[LaunchedServer]:
            yield servers[skeleton.id]

        return shared()

    async def runner(env: str, case: str = "good", n: int = 1, router: ScenRouter | None = None,
                     logged: bool = False, **options: Any) -> tuple[ScenSummary, ScenRouter, Path]:
        router = router or ScenRouter(env, case)
        provider: Any = MockProvider([router], repeat_last=True, spec="mock/scen")
        options.setdefault("out", tmp_path / "out")
        if logged:
            provider = ReportingProvider(provider, RunLog(options["out"] / "_work" / "synth.log", echo=lambda _: None))
        summary = await run_scenarios([skeletons[env]], provider, None, ScenOptions(n=n, **options), opener)
        return summary, router, options["out"]

    return runner

"""ScenGenerator on a bundled environment: the model's answers are the bundled hand-authored scenarios
written out in the answer formats, so the pipeline should give back exactly those scenarios (same ids), keep
them when mutation testing is off, and drop the ones whose validators leave a changed field unguarded."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp._io import iter_jsonl
from envscaler_mcp.catalog.store import load_scenarios
from envscaler_mcp.launch import LaunchedServer, launch_server
from envscaler_mcp.providers.base import Message, ToolDef
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.qa.gate import check_scenario
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.skeleton.build import build_skeleton_from_dir
from envscaler_mcp.skeleton.models import EnvSkeleton
from envscaler_mcp.synth.scen.parsers import MIN_TASK_WORDS
from envscaler_mcp.synth.scen.pipeline import ScenOptions, run_scenarios

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[3]
ENV = "ecommerce_orders"


def bundled() -> list[Scenario]:
    """The bundled task scenarios (not questions) whose task is long enough for the task step."""
    return [s for s in load_scenarios(ROOT / "scenarios" / f"{ENV}.jsonl")
            if len(s.task.split()) >= MIN_TASK_WORDS and s.reference_answer is None]


class Echo:
    """Answers every step with the fields of the next bundled scenario (items run one at a time)."""

    def __init__(self, scenarios: list[Scenario]) -> None:
        self.scenarios = scenarios
        self.current: Scenario | None = None

    def __call__(self, messages: list[Message], tools: list[ToolDef]) -> str:
        system = messages[0].content
        if "You write one initial state" in system:
            variant = re.search(r"This is variant (\d+) of", system)
            assert variant
            self.current = self.scenarios[int(variant.group(1)) - 1]
            return f"# Initial State\n```json\n{json.dumps(self.current.initial_state)}\n```"
        sc = self.current
        assert sc is not None
        if "You write a task" in system:
            return f"# Title\n{sc.title}\n\n# Task\n{sc.task}"
        if "You split a task" in system:
            marks = ["change" if c.claims_change else "keep" for c in sc.checklist]
            return "# Checklist\n" + "\n".join(f"- [{m}] {c.description}" for m, c in zip(marks, sc.checklist,
                                                                                          strict=True))
        if "You write one Python validator" in system:
            return "\n\n".join(f"# {c.id}\n```python\n{c.validator}\n```" for c in sc.checklist)
        assert "You solve a task" in system
        calls = [c.model_dump() for c in sc.reference_solution]
        return f"# Solution\n```json\n{json.dumps(calls)}\n```"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def skeleton() -> EnvSkeleton:
    return build_skeleton_from_dir(ROOT / "environments" / ENV)


@pytest.fixture(scope="module")
async def server(skeleton: EnvSkeleton, anyio_backend: str) -> AsyncIterator[LaunchedServer]:
    async with launch_server(skeleton, "memory") as launched:
        yield launched


async def generate(skeleton: EnvSkeleton, server: LaunchedServer, out: Path, scenarios: list[Scenario],
                   **options: Any) -> None:
    def opener(_skeleton: EnvSkeleton) -> AbstractAsyncContextManager[LaunchedServer]:
        @asynccontextmanager
        async def shared() -> AsyncIterator[LaunchedServer]:
            yield server

        return shared()

    provider = MockProvider([Echo(scenarios)], repeat_last=True, spec="mock/echo")
    await run_scenarios([skeleton], provider, None, ScenOptions(n=len(scenarios), out=out, concurrency=1,
                                                                **options), opener)


async def test_bundled_scenarios_come_back_with_the_same_ids(skeleton: EnvSkeleton, server: LaunchedServer,
                                                             tmp_path: Path) -> None:
    scenarios = bundled()
    assert len(scenarios) >= 5
    await generate(skeleton, server, tmp_path, scenarios, require_mutation=False)
    made = load_scenarios(tmp_path / f"{ENV}.jsonl")
    assert [s.id for s in made] == [s.id for s in scenarios]  # distinct tasks: none taken for a duplicate
    assert all(s.difficulty == len(s.reference_solution) and s.provenance.source == "synthesized" for s in made)


async def test_strict_mutation_keeps_only_fully_guarded_scenarios(skeleton: EnvSkeleton, server: LaunchedServer,
                                                                  tmp_path: Path) -> None:
    scenarios = bundled()[:4]
    await generate(skeleton, server, tmp_path, scenarios)
    path = tmp_path / f"{ENV}.jsonl"
    kept = {s.id for s in load_scenarios(path)} if path.exists() else set()
    dropped = [r for _, r in iter_jsonl(tmp_path / "_work" / ENV / "dropped.jsonl")]
    assert len(kept) + len(dropped) == len(scenarios) and dropped  # these bundled validators skip side effects
    assert all(r["step"] == "gate" and "mutation: no validator notices" in r["reason"] for r in dropped)
    async with ValidatorSandbox(timeout_s=2.0) as sandbox:  # the gate's own verdict agrees, scenario by scenario
        for sc in scenarios:
            report = await check_scenario(sc, server.episode, sandbox, mutation=True, validators_only=True,
                                          free_fields=skeleton.free_fields)
            assert (sc.id in kept) == (report.passed and report.step("mutation").status == "pass")
            # the catalog's gate adds the state check, which catches the side effects these validators skip
            full = await check_scenario(sc, server.episode, sandbox, mutation=True, free_fields=skeleton.free_fields)
            assert full.passed, full.reasons()

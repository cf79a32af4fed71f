"""Test fixture: a small finished run folder made with the in-process to-do environment and scripted agents."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from envscaler_mcp.harness.config import EnvPlan, RunConfig, scenario_hashes
from envscaler_mcp.harness.prompts import EnvInfo
from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.seats import Seat
from envscaler_mcp.providers.base import Message, ToolCallRequest
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.scenario.models import Scenario
from tests.harness.fakes import FakeSource, InProcessChecker, todo_scenario


@asynccontextmanager
async def _source(plan: EnvPlan, config: RunConfig) -> AsyncIterator[FakeSource]:
    yield FakeSource()


def _agent(scenario: Scenario) -> MockProvider:
    """Good on the first scenario (with reasoning and a parallel call, after one bad call), lazy on the second."""
    if "variant 1" in scenario.task:
        return MockProvider(["Nothing to do <here>."])
    return MockProvider([
        Message(role="assistant", reasoning="Look first.", tool_calls=[ToolCallRequest(id="a", name="list_items")]),
        Message(role="assistant", tool_calls=[ToolCallRequest(id="b", name="complete_item", arguments={"item_id": "7"})]),
        Message(role="assistant", content="Adding both.", tool_calls=[
            ToolCallRequest(id="c", name="add_item", arguments={"title": "milk"}),
            ToolCallRequest(id="d", name="complete_item", arguments={"item_id": "1"})]),
        Message(role="assistant", content="All done.", reasoning="Both changes made."),
    ])


async def make_run(path: Path) -> Path:
    """Two scenarios x one trial: the first solved (score 1), the second not (score 0)."""
    scenarios = [todo_scenario(f"Add an item 'milk' and mark item 1 as done (variant {i}).") for i in range(2)]
    plan = EnvPlan(env_id="todo", env_info=EnvInfo(name="To-do"), scenarios=scenarios,
                   hashes={"environment": "x", **scenario_hashes(scenarios)})
    config = RunConfig(envs=["todo"], agent="mock", progress=False)
    await run_eval(config, path, plans=[plan], agent=Seat("mock", factory=_agent), checker=InProcessChecker(),
                   source_factory=_source)
    return path

"""Test fixture: a small finished run folder on the mini_shop server (in memory) with scripted agents."""

from __future__ import annotations

from pathlib import Path

from envscaler_mcp.harness.config import RunConfig
from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.seats import Seat
from envscaler_mcp.providers.base import Message, ToolCallRequest
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.scenario.models import Scenario
from tests.harness.shop import BOB, MINI_SHOP, calls


def _agent(scenario: Scenario) -> MockProvider:
    """Solves Bob's scenario (with reasoning, a bad call and a parallel call); does nothing on Alice's."""
    if scenario.id != BOB.id:
        return MockProvider(["Nothing to do <here>."])
    return MockProvider([
        Message(role="assistant", reasoning="Look first.",
                tool_calls=[ToolCallRequest(id="a", name="get_order", arguments={"order_id": "O-1002"})]),
        calls(("add_note", {"order_id": "O-7"})),
        calls(("cancel_order", {"order_id": "O-1002"}), ("add_note", {"order_id": "O-1002", "text": "Customer changed mind"}),
              text="Doing both."),
        Message(role="assistant", content="All done.", reasoning="Both changes made."),
    ])


async def make_run(path: Path) -> Path:
    """Two scenarios x one trial: Bob's solved (score 1), Alice's not (score 0.25: one 'left alone' check)."""
    config = RunConfig(envs=[str(MINI_SHOP)], agent="mock", transport="memory", progress=False)
    await run_eval(config, path, agent=Seat("mock", factory=_agent))
    return path

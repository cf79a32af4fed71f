"""The episode time limit that follows the agent's measured speed, and the model's activity on the progress line."""

from __future__ import annotations

import io
import re
from typing import Any

import anyio
import pytest
from rich.console import Console

from envscaler_mcp.harness.checks import SandboxChecker
from envscaler_mcp.harness.episode import run_episode
from envscaler_mcp.harness.models import EpisodeConfig
from envscaler_mcp.harness.progress import RunProgress
from envscaler_mcp.providers.mock import MockProvider
from tests.harness.shop import BOB, calls

pytestmark = pytest.mark.anyio


class _Measured(MockProvider):
    """A scripted agent that takes `delays[i]` seconds for turn i and says each turn may take `budget` s (`first`
    s until it has answered once, when given)."""

    def __init__(self, script: list[Any], delays: list[float], budget: float, first: float | None = None) -> None:
        super().__init__(script)
        self.delays = delays
        self.budget = budget
        self.first = first
        self.budgets_asked = 0

    def turn_budget_s(self, settings: Any = None) -> float:
        self.budgets_asked += 1
        return self.first if self.first is not None and not self.requests else self.budget

    async def complete(self, messages, tools=None, settings=None):  # type: ignore[no-untyped-def]
        await anyio.sleep(self.delays[len(self.requests)])
        return await super().complete(messages, tools, settings)


async def test_slow_turns_within_the_measured_budget_are_not_cut(server: Any, checker: SandboxChecker) -> None:
    # 3 turns of 0.4 s = 1.2 s in all: more than a fixed 1 s allows, but each turn is well within its 1 s budget
    script = [calls(("cancel_order", {"order_id": "O-1002"})),
              calls(("add_note", {"order_id": "O-1002", "text": "Customer changed mind"})), "Done."]
    agent = _Measured(script, delays=[0.4, 0.4, 0.4], budget=1.0)
    result = await run_episode(BOB, source=server, agent=agent, checker=checker,
                               config=EpisodeConfig(max_steps=3))
    assert result.status == "completed" and result.success is True and agent.budgets_asked >= 3
    fixed = _Measured(script, delays=[0.4, 0.4, 0.4], budget=1.0)
    result = await run_episode(BOB, source=server, agent=fixed, checker=checker,
                               config=EpisodeConfig(max_steps=3, timeout_s=1.0))
    assert result.status == "timeout"  # a fixed --timeout still wins


async def test_a_hung_turn_is_cut_at_the_budget_of_the_steps_left(server: Any, checker: SandboxChecker) -> None:
    # The first turn may take 30 s (a loaded machine never cuts it: its call is what scores 0.5); once it has
    # answered, a turn may take 0.3 s. The hung second turn is cut 0.3 s after the first, by the deadline
    # recomputed for the one step left, not by the first deadline (2 steps x 30 s) nor the hang's end.
    agent = _Measured([calls(("cancel_order", {"order_id": "O-1002"})), "never"], delays=[0.0, 3600.0], budget=0.3,
                      first=30.0)
    started = anyio.current_time()
    result = await run_episode(BOB, source=server, agent=agent, checker=checker, config=EpisodeConfig(max_steps=2))
    assert result.status == "timeout" and result.score == 0.5
    assert anyio.current_time() - started < 30


def test_progress_line_shows_the_model_activity() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=200)
    with RunProgress(3, console=console, activity=lambda: "local model: reading the prompt 256/1480 tokens"):
        pass
    assert "local model: reading the prompt 256/1480 tokens" in out.getvalue()


def test_on_an_80_column_terminal_the_activity_has_a_line_of_its_own() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=80)
    with RunProgress(3, console=console, activity=lambda: "local model: generating 40 tokens, 6.2 tok/s"):
        pass
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    lines = [line.rstrip() for line in plain.splitlines() if "local model" in line]
    assert lines and lines[-1].strip().endswith("local model: generating 40 tokens, 6.2 tok/s")
    assert "eval" not in lines[-1]  # not squeezed into a column beside the bar


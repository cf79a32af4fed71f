"""A bundled read-only scenario end to end: the reference transcript succeeds, a wrong amount fails, doing
nothing fails; the verdicts carry the evidence that decided them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from envscaler_mcp.catalog.store import scenarios_for
from envscaler_mcp.harness.checks import SandboxChecker
from envscaler_mcp.harness.episode import run_episode
from envscaler_mcp.harness.oracle import OraclePolicy
from envscaler_mcp.launch import launch_server
from envscaler_mcp.providers.mock import MockProvider
from tests.harness.shop import calls

pytestmark = pytest.mark.anyio

KETTLE = next(s for s in scenarios_for("ecommerce_orders") if s.title == "Where is my kettle order?")


@pytest.fixture
async def shop() -> AsyncIterator[Any]:
    async with launch_server("ecommerce_orders", transport="memory") as server:
        yield server


async def test_reference_transcript_succeeds(shop: Any, checker: SandboxChecker) -> None:
    result = await run_episode(KETTLE, source=shop, agent=OraclePolicy(KETTLE), checker=checker)
    assert result.final_answer == KETTLE.reference_answer
    assert [c.status for c in result.checks] == ["pass"] * len(KETTLE.checklist)
    assert result.success is True and result.score == 1.0
    total = next(c for c in result.checks if "119.85" in c.description)
    assert total.evidence == ["stated '119.85': \u00abYou paid $119.85 in total.\u00bb"]


async def test_a_wrong_amount_fails(shop: Any, checker: SandboxChecker) -> None:
    lookups = [calls((c.tool, c.arguments)) for c in KETTLE.reference_solution]
    wrong = (KETTLE.reference_answer or "").replace("$119.85", "$191.85")
    result = await run_episode(KETTLE, source=shop, agent=MockProvider([*lookups, wrong]), checker=checker)
    failed = [c for c in result.checks if c.status != "pass"]
    assert [c.description for c in failed] == ["Has the agent given the total paid, 119.85?"]
    assert failed[0].evidence[0].startswith("missing '119.85' in the answer: \u00abYes: your order O-10046")
    assert result.success is False and result.score is not None and result.score < 1.0


async def test_doing_nothing_fails(shop: Any, checker: SandboxChecker) -> None:
    result = await run_episode(KETTLE, source=shop, agent=MockProvider(["Sorry, I can't help with that."]),
                               checker=checker)
    assert [c.status for c in result.checks if c.kind == "transcript"] == ["fail"] * 5
    assert result.checks[-1].kind == "state" and result.checks[-1].status == "pass"  # nothing changed
    assert result.success is False

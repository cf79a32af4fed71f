"""The gym-style API on the in-process to-do fixture."""

from __future__ import annotations

import pytest

from envscaler_mcp.errors import UsageError
from envscaler_mcp.harness.gym import EnvScalerMCPEnv
from envscaler_mcp.harness.prompts import STOP_TOKEN
from envscaler_mcp.providers.mock import MockProvider
from tests.harness.fakes import FakeSource, InProcessChecker, todo_scenario

pytestmark = pytest.mark.anyio


async def test_reset_step_and_reward_at_termination() -> None:
    async with EnvScalerMCPEnv(FakeSource(), InProcessChecker()) as env:
        obs, info = await env.reset(todo_scenario())
        assert obs == todo_scenario().task and info["tools"][0]["name"] == "list_items"
        obs, reward, terminated, truncated, info = await env.step({"name": "add_item", "arguments": '{"title": "milk"}'})
        assert (reward, terminated, truncated, info["is_error"]) == (0.0, False, False, False)
        obs, reward, *_ = await env.step({"name": "nope", "arguments": {}})
        assert "Unknown tool" in obs and reward == 0.0
        obs, reward, terminated, truncated, info = await env.step("Added milk.")
        assert terminated and not truncated and reward == 0.5 and info["success"] is False
        assert [c["status"] for c in info["checks"]] == ["pass", "fail"]
        with pytest.raises(UsageError, match="reset"):
            await env.step("again")
        # a new episode starts from the scenario's initial state again
        await env.reset(todo_scenario())
        await env.step({"name": "add_item", "arguments": {"title": "milk"}})
        await env.step({"name": "complete_item", "arguments": {"item_id": "1"}})
        _, reward, terminated, _, info = await env.step("done")
        assert reward == 1.0 and info["success"] is True


async def test_step_limit_truncates_and_scores() -> None:
    async with EnvScalerMCPEnv(FakeSource(), InProcessChecker(), max_steps=2) as env:
        await env.reset(todo_scenario())
        assert (await env.step({"name": "list_items"}))[3] is False
        _, reward, terminated, truncated, info = await env.step({"name": "complete_item", "arguments": {"item_id": "1"}})
        assert truncated and not terminated and reward == 0.5 and info["success"] is False


async def test_conversation_mode_routes_text_to_the_simulated_user() -> None:
    user = MockProvider(["Please add milk.", f"Great. {STOP_TOKEN}"])
    async with EnvScalerMCPEnv(FakeSource(), InProcessChecker(), mode="conversation", user=user) as env:
        obs, _ = await env.reset(todo_scenario())
        assert obs == "Please add milk."
        await env.step({"name": "add_item", "arguments": {"title": "milk"}})
        obs, reward, terminated, _, _ = await env.step("Added milk.")
        assert obs == STOP_TOKEN and terminated and reward == 0.5

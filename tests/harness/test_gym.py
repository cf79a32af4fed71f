"""The gym-style API on the mini_shop server (in memory) with the real validator sandbox."""

from __future__ import annotations

from typing import Any

import pytest

from envscaler_mcp.adapters.gym import EnvScalerMCPEnv
from envscaler_mcp.errors import UsageError
from envscaler_mcp.harness.checks import SandboxChecker
from envscaler_mcp.harness.prompts import STOP_TOKEN
from envscaler_mcp.providers.mock import MockProvider
from tests.harness.shop import BOB, MINI_SHOP

pytestmark = pytest.mark.anyio


async def test_reset_step_and_reward_at_termination(server: Any, checker: SandboxChecker) -> None:
    env = EnvScalerMCPEnv(server, checker)
    obs, info = await env.reset(BOB)
    assert obs == BOB.task and info["tools"][0]["name"] == "get_order" and info["scenario_id"] == BOB.id
    obs, reward, terminated, truncated, info = await env.step(
        {"name": "cancel_order", "arguments": '{"order_id": "O-1002"}'}
    )
    assert (reward, terminated, truncated, info["is_error"]) == (0.0, False, False, False)
    obs, reward, *_ = await env.step({"name": "nope", "arguments": {}})
    assert "Unknown tool" in obs and reward == 0.0
    obs, reward, terminated, truncated, info = await env.step("Cancelled it.")
    assert terminated and not truncated and reward == 0.5 and info["success"] is False
    assert [c["status"] for c in info["checks"]] == ["pass", "fail"] and info["diff"]
    with pytest.raises(UsageError, match="reset"):
        await env.step("again")
    await env.reset(BOB)  # a fresh episode at the initial state again
    await env.step({"name": "cancel_order", "arguments": {"order_id": "O-1002"}})
    await env.step({"name": "add_note", "arguments": {"order_id": "O-1002", "text": "Customer changed mind"}})
    _, reward, terminated, _, info = await env.step("done")
    assert reward == 1.0 and info["state_check"]["status"] == "pass"
    assert info["observation"]["status"] == "failed" and info["success"] is False  # it never looked the order up
    await env.close()


async def test_step_limit_truncates_and_scores(server: Any, checker: SandboxChecker) -> None:
    async with EnvScalerMCPEnv(server, checker, max_steps=2) as env:
        await env.reset(BOB)
        assert (await env.step({"name": "get_order", "arguments": {"order_id": "O-1002"}}))[3] is False
        _, reward, terminated, truncated, info = await env.step(
            {"name": "cancel_order", "arguments": {"order_id": "O-1002"}}
        )
        assert truncated and not terminated and reward == 0.5 and info["success"] is False


async def test_conversation_mode_routes_text_to_the_simulated_user(
    server: Any, checker: SandboxChecker
) -> None:
    user = MockProvider(["Please cancel my order O-1002.", f"Great. {STOP_TOKEN}"])
    async with EnvScalerMCPEnv(server, checker, mode="conversation", user=user) as env:
        obs, _ = await env.reset(BOB)
        assert obs == "Please cancel my order O-1002."
        await env.step({"name": "cancel_order", "arguments": {"order_id": "O-1002"}})
        obs, reward, terminated, _, _ = await env.step("Cancelled.")
        assert obs == STOP_TOKEN and terminated and reward == 0.5


async def test_create_launches_the_server_itself() -> None:
    env = await EnvScalerMCPEnv.create(str(MINI_SHOP), transport="memory")
    try:
        obs, _ = await env.reset(BOB)
        assert obs == BOB.task
        _, reward, terminated, _, _ = await env.step("nothing")
        assert terminated and reward == 0.0
    finally:
        await env.close()


async def test_a_collateral_change_voids_the_reward(server: Any, checker: SandboxChecker) -> None:
    """Bob's whole task plus a cancellation nobody asked for: every checklist item passes, the state check
    (against the replayed reference) finds the collateral change and the reward is 0."""
    async with EnvScalerMCPEnv(server, checker) as env:
        await env.reset(BOB)
        for call in BOB.reference_solution:
            await env.step({"name": call.tool, "arguments": call.arguments})
        _, reward, *_, info = await env.step("done")
        assert reward == 1.0 and info["state_check"]["status"] == "pass" and info["success"] is True
        assert info["observation"]["status"] == "passed"
        await env.reset(BOB)
        for call in BOB.reference_solution:
            await env.step({"name": call.tool, "arguments": call.arguments})
        await env.step({"name": "cancel_order", "arguments": {"order_id": "O-1001"}})
        _, reward, terminated, _, info = await env.step("done")
    assert terminated and info["score"] == 1.0 and info["success"] is False and reward == 0.0
    verdict = info["state_check"]
    assert verdict["status"] == "fail"
    assert [c["kind"] for c in verdict["changes"]] == ["collateral"] and "O-1001" in verdict["changes"][0]["path"]


async def test_state_check_off_gives_the_checklist_score(server: Any, checker: SandboxChecker) -> None:
    async with EnvScalerMCPEnv(server, checker, state_check=False) as env:
        await env.reset(BOB)
        for call in BOB.reference_solution:
            await env.step({"name": call.tool, "arguments": call.arguments})
        await env.step({"name": "cancel_order", "arguments": {"order_id": "O-1001"}})
        _, reward, _, _, info = await env.step("done")
    assert reward == 1.0 and info["state_check"]["status"] == "not_available"
    assert info["observation"]["status"] == "not_applicable"

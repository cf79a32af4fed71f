"""Malformed tool-call arguments from the model (nested hundreds to thousands of levels deep, megabytes long,
lone surrogates) are the model's fault on every transport and in the gym and OpenEnv APIs: an error result the
agent sees, the episode scored and stored, never a stop of the harness nor an infrastructure exclusion."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp.adapters.gym import EnvScalerMCPEnv
from envscaler_mcp.harness.checks import SandboxChecker
from envscaler_mcp.harness.episode import run_episode
from envscaler_mcp.harness.models import EpisodeResult
from envscaler_mcp.harness.rundir import RunDir
from envscaler_mcp.providers.arguments import MAX_ARGUMENT_CHARS, MAX_ARGUMENT_DEPTH
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.providers.tools import decode_arguments
from tests.harness.shop import BOB, ENV_INFO, calls, shop_server

pytestmark = pytest.mark.anyio

TRANSPORTS = ["memory", "pipe", "http", "stdio"]
DEPTHS = [MAX_ARGUMENT_DEPTH + 1, 200, 254, 255, 10_000]


def nested(depth: int) -> dict[str, Any]:
    """An arguments object `depth` levels deep ({"order_id": "O-1002", "x": {"x": ... {}}})."""
    inner: dict[str, Any] = {}
    for _ in range(depth - 2):
        inner = {"x": inner}
    return {"order_id": "O-1002", "x": inner}


def bad_turns() -> list[tuple[str, dict[str, Any]]]:
    return [*(("cancel_order", nested(d)) for d in DEPTHS),
            ("cancel_order", {"order_id": "O-1002", "note": "x" * (MAX_ARGUMENT_CHARS + 10)}),
            ("cancel_order", {"order_id": "O-1002", "list": [[1] * 100] * 2_000 * 6})]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_malformed_arguments_are_the_models_fault_on_every_transport(transport: str, tmp_path: Path) -> None:
    """Every malformed call is an error result naming the reason (the harness sends none of them); a lone
    surrogate is replaced and the call goes through; then the agent solves the task and is scored 1.0; the
    episode's record is written to results.jsonl and read back."""
    bad = bad_turns()
    agent = MockProvider([
        *(calls(call) for call in bad),
        calls(("get_order", {"order_id": "O-1002\ud800", "\udcff": 1})),  # lone surrogates: replaced
        calls(("cancel_order", {"order_id": "O-1002"}),
              ("add_note", {"order_id": "O-1002", "text": "Customer changed mind"})),
        "Cancelled O-1002 and added the note.",
    ])
    async with shop_server(transport) as server, SandboxChecker() as checker:
        result = await run_episode(BOB, source=server, agent=agent, checker=checker, env_info=ENV_INFO)
    assert result.status == "completed" and result.infra_reason is None and result.scorable
    assert result.score == 1.0
    tool_messages = [m for m in result.messages if m.role == "tool"]
    rejected = tool_messages[:len(bad)]
    assert all(m.is_error for m in rejected)
    reasons = [m.content for m in rejected]
    assert all(f"nested more than {MAX_ARGUMENT_DEPTH} levels deep" in r for r in reasons[:len(DEPTHS)])
    assert all(f"larger than {MAX_ARGUMENT_CHARS:,} characters" in r for r in reasons[len(DEPTHS):])
    lookup = tool_messages[len(bad)]
    assert lookup.is_error and "\ufffd" in lookup.content  # the server got the replaced text (and refused the key)
    assert not any(m.is_error for m in tool_messages[len(bad) + 1:])
    assert result.tool_errors == len(bad) + 1
    _written_and_read(result, tmp_path)


def _written_and_read(result: EpisodeResult, tmp_path: Path) -> None:
    """The record survives results.jsonl: written, read back, the same calls."""
    run = RunDir(tmp_path)
    run.append(result)
    [read] = run.read_results()
    assert [m.content for m in read.messages] == [m.content for m in result.messages]
    assert len(json.dumps(read.model_dump(mode="json"))) < 100_000  # nothing huge was kept


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_gym_api_gives_malformed_arguments_an_error_result(transport: str) -> None:
    async with shop_server(transport) as server, SandboxChecker() as checker:
        async with EnvScalerMCPEnv(server, checker) as env:
            await env.reset(BOB)
            for name, arguments in bad_turns():
                obs, reward, terminated, truncated, info = await env.step({"name": name, "arguments": arguments})
                assert info["is_error"] and "was not sent" in obs and (reward, terminated, truncated) == (0, False, False)
            deep_text = "[" * 100_000 + "]" * 100_000  # past the interpreter's recursion limit when decoded
            obs, *_, info = await env.step({"name": "cancel_order", "arguments": deep_text})
            assert info["is_error"] and "not a JSON object" in obs
            await env.step({"name": "get_order", "arguments": {"order_id": "O-1002"}})  # looks it up, as told
            await env.step({"name": "cancel_order", "arguments": {"order_id": "O-1002"}})
            await env.step({"name": "add_note", "arguments": {"order_id": "O-1002", "text": "Customer changed mind"}})
            _, reward, terminated, _, info = await env.step("done")
    assert terminated and reward == 1.0 and info["success"] is True


def test_argument_text_nested_past_the_recursion_limit_is_kept_raw() -> None:
    text = '{"a": ' * 5_000 + "1" + "}" * 5_000
    assert decode_arguments(text) == ({}, text)


def test_the_openenv_api_gives_malformed_arguments_an_error_result() -> None:
    pytest.importorskip("openenv", reason="OpenEnv is the optional extra .[openenv]")
    from envscaler_mcp.adapters.openenv_env import EnvScalerAction, EnvScalerOpenEnv

    env = EnvScalerOpenEnv("ecommerce_orders", transport="memory", seed=0)
    try:
        env.reset(seed=1)
        for _, arguments in bad_turns():
            obs = env.step(EnvScalerAction(tool_name="get_order", arguments=arguments))
            assert obs.is_error and "was not sent" in obs.text and not obs.done
        obs = env.step(EnvScalerAction(type="answer", text="Done."))
        assert obs.done and obs.reward is not None and obs.outcome is not None
    finally:
        env.close()

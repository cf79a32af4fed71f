"""The OpenEnv adapter with the real openenv-core package: a bundled environment served over HTTP, validators
in the OS sandbox, the state check against the replayed reference; in process and over OpenEnv's WebSocket."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from envscaler_mcp.catalog.store import scenarios_for
from envscaler_mcp.errors import UsageError
from envscaler_mcp.scenario.models import Scenario

pytest.importorskip("openenv", reason="OpenEnv is the optional extra .[openenv]: pip install -e '.[openenv]'")

from envscaler_mcp.adapters.openenv_env import (
    EnvScalerAction,
    EnvScalerOpenEnv,
    openenv_app,
)

ENV = "ecommerce_orders"
SHIPPING = "sc-ad387702801e9cdc"  # switch O-10052 to express shipping (3 checks)


@pytest.fixture(scope="module")
def env() -> Iterator[EnvScalerOpenEnv]:
    e = EnvScalerOpenEnv(ENV, seed=0)
    try:
        yield e
    finally:
        e.close()


def by_id(scenario_id: str) -> Scenario:
    return next(s for s in scenarios_for(ENV) if s.id == scenario_id)


def call(tool: str, arguments: dict[str, Any]) -> EnvScalerAction:
    return EnvScalerAction(tool_name=tool, arguments=arguments)


def replay(env: EnvScalerOpenEnv, scenario: Scenario, *extra: EnvScalerAction) -> Any:
    obs = env.reset(scenario_id=scenario.id)
    assert obs.text == scenario.task and not obs.done and obs.reward is None
    assert {t["name"] for t in obs.tools} >= {c.tool for c in scenario.reference_solution}
    for c in scenario.reference_solution:
        obs = env.step(call(c.tool, c.arguments))
        assert not obs.done and obs.reward == 0.0 and not obs.is_error and obs.tool_name == c.tool
    for action in extra:
        obs = env.step(action)
    return env.step(EnvScalerAction(type="answer", text="Done."))


def test_the_reference_solutions_earn_reward_1(env: EnvScalerOpenEnv) -> None:
    chosen = [s for s in scenarios_for(ENV) if s.reference_solution][:3]
    for scenario in chosen:
        obs = replay(env, scenario)
        assert obs.done and not obs.truncated and obs.reward == 1.0, (scenario.id, obs.outcome)
        assert obs.outcome["success"] is True and obs.outcome["state_check"]["status"] == "pass"
        assert all(c["status"] == "pass" for c in obs.outcome["checks"])
        assert env.state.scenario_id == scenario.id and env.state.done
        assert env.state.step_count == len(scenario.reference_solution) + 1


def test_a_wrong_solution_earns_less(env: EnvScalerOpenEnv) -> None:
    env.reset(scenario_id=SHIPPING)
    obs = env.step(call("update_shipping", {"order_id": "O-10052", "shipping_method": "overnight_drone"}))
    obs = env.step(EnvScalerAction(type="answer", text="Switched it."))
    assert obs.done and obs.reward is not None and obs.reward < 1.0
    assert obs.outcome["success"] is False and any(c["status"] != "pass" for c in obs.outcome["checks"])


def test_a_collateral_change_is_caught_by_the_state_check(env: EnvScalerOpenEnv) -> None:
    """The task done right, plus another order switched too: every check passes, the state check fails."""
    obs = replay(env, by_id(SHIPPING), call("update_shipping", {"order_id": "O-10053", "shipping_method": "express"}))
    assert obs.done and obs.outcome["score"] == 1.0 and obs.reward == 0.0 and obs.outcome["success"] is False
    verdict = obs.outcome["state_check"]
    assert verdict["status"] == "fail" and {c["kind"] for c in verdict["changes"]} == {"collateral"}
    assert all("O-10053" in c["path"] for c in verdict["changes"])


def test_step_limit_reset_choices_and_bad_input() -> None:
    env = EnvScalerOpenEnv(ENV, max_steps=1, transport="memory", seed=3)
    try:
        first = env.reset(seed=11).scenario_id
        assert env.reset(seed=11).scenario_id == first  # a seed picks the same scenario
        obs = env.step(call("get_order", {"order_id": "O-10052"}))
        assert obs.done and obs.truncated and obs.outcome is not None and obs.outcome["success"] is False
        with pytest.raises(UsageError, match="reset"):
            env.step(call("get_order", {"order_id": "O-10052"}))
        with pytest.raises(UsageError, match="unknown scenario id"):
            env.reset(scenario_id="sc-nope")
        with pytest.raises(ValueError, match="tool_name"):
            EnvScalerAction(type="call_tool")
    finally:
        env.close()
    with pytest.raises(UsageError, match="closed"):
        env.reset()


def test_async_calls_from_other_event_loops_share_one_episode(env: EnvScalerOpenEnv) -> None:
    """reset_async and step_async from two separate event loops (as a web server's tasks would): one episode."""
    scenario = by_id(SHIPPING)
    asyncio.run(env.reset_async(scenario_id=scenario.id))
    for c in scenario.reference_solution:
        asyncio.run(env.step_async(call(c.tool, c.arguments)))
    obs = asyncio.run(env.step_async(EnvScalerAction(type="answer", text="Done.")))
    assert obs.done and obs.reward == 1.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_openenv_clients_run_episodes_over_the_websocket() -> None:
    """openenv_app under uvicorn and OpenEnv's own GenericEnvClient (what trainers use): reward 1 for the
    reference calls, less for an answer with no call."""
    import uvicorn
    from openenv.core.generic_client import GenericEnvClient

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(openenv_app(ENV, transport="memory"), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        scenario = by_id(SHIPPING)
        with GenericEnvClient(base_url=f"http://127.0.0.1:{port}").sync() as client:
            result = client.reset(scenario_id=scenario.id)
            assert result.observation["text"] == scenario.task and not result.done
            for c in scenario.reference_solution:
                result = client.step({"type": "call_tool", "tool_name": c.tool, "arguments": c.arguments})
                assert result.reward == 0.0 and not result.done
            result = client.step({"type": "answer", "text": "Done."})
            assert result.done and result.reward == 1.0 and result.observation["outcome"]["success"] is True
            client.reset(scenario_id=scenario.id)
            result = client.step({"type": "answer", "text": "Done."})
            assert result.done and result.reward is not None and result.reward < 1.0
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def test_nothing_imports_openenv_unless_asked() -> None:
    code = "import sys, envscaler_mcp.cli, envscaler_mcp.adapters.gym; print('openenv' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

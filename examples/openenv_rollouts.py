"""A generated environment as an OpenEnv environment: served over OpenEnv's WebSocket, driven by its client.

    python examples/openenv_rollouts.py --env ecommerce_orders --episodes 3 [--port 8765] [--serve-only]

The server half is what a trainer's environment service runs (`openenv_app` under uvicorn); the client half
is what a rollout loop does with OpenEnv's GenericEnvClient (TRL-style trainers hold such a client). The
policy replays each scenario's reference solution so the example runs without a model.
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any

import uvicorn
from openenv.core.generic_client import GenericEnvClient

from envscaler_mcp.adapters.openenv_env import openenv_app
from envscaler_mcp.catalog.store import scenarios_for
from envscaler_mcp.scenario.models import Scenario


def policy(scenario: Scenario, step: int) -> dict[str, Any]:
    """The next action: the reference solution's next call, then the final answer (a model goes here)."""
    if step < len(scenario.reference_solution):
        call = scenario.reference_solution[step]
        return {"type": "call_tool", "tool_name": call.tool, "arguments": call.arguments}
    return {"type": "answer", "text": "Done."}


def rollouts(base_url: str, scenarios: list[Scenario]) -> list[dict[str, Any]]:
    """One episode per scenario through an OpenEnv client: (scenario id, reward, steps, success)."""
    out = []
    with GenericEnvClient(base_url=base_url).sync() as client:
        for scenario in scenarios:
            result, step = client.reset(scenario_id=scenario.id), 0
            while not result.done:
                result, step = client.step(policy(scenario, step)), step + 1
            outcome = result.observation["outcome"] or {}
            out.append({"scenario_id": scenario.id, "reward": result.reward, "steps": step,
                        "success": outcome.get("success")})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="ecommerce_orders")
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--serve-only", action="store_true", help="only serve the environment")
    args = parser.parse_args()
    server = uvicorn.Server(uvicorn.Config(openenv_app(args.env), host="127.0.0.1", port=args.port,
                                           log_level="warning"))
    if args.serve_only:
        server.run()
        return
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        scenarios = [s for s in scenarios_for(args.env) if s.reference_solution][: args.episodes]
        for row in rollouts(f"http://127.0.0.1:{args.port}", scenarios):
            print(row)
    finally:
        server.should_exit = True
        thread.join()


if __name__ == "__main__":
    main()

"""RL rollouts on Ray: N parallel episodes of the gym API, one environment per Ray actor.

    python examples/ray_rollouts.py --env ecommerce_orders --episodes 8 --actors 2 [--address auto]

Each actor keeps one EnvScalerMCPEnv (its own server and validator sandbox) and runs the episodes it is
given; the driver gathers (scenario id, reward, steps) per episode. The policy here replays the scenario's
reference solution so the example runs without a model: a trainer puts its policy in `act`.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import ray

from envscaler_mcp.adapters.gym import EnvScalerMCPEnv
from envscaler_mcp.catalog.store import scenarios_for
from envscaler_mcp.scenario.models import Scenario


def act(scenario: Scenario, step: int) -> dict[str, Any] | str:
    """The policy: the reference solution's next call, then a text answer (a trainer's model goes here)."""
    if step < len(scenario.reference_solution):
        call = scenario.reference_solution[step]
        return {"name": call.tool, "arguments": call.arguments}
    return "Done."


@ray.remote(num_cpus=1)
class RolloutWorker:
    """One environment on one Ray worker. Ray runs each call of an async actor in a task of its own, and an
    episode must be reset, stepped and closed from one task: so one loop task owns the environment and the
    calls hand it scenarios through a queue."""

    def __init__(self, env_id: str, transport: str = "http") -> None:
        self.env_id, self.transport = env_id, transport
        self.queue: asyncio.Queue[tuple[Scenario, asyncio.Future[dict[str, Any]]] | None] | None = None
        self.loop_task: asyncio.Task[None] | None = None

    async def _loop(self) -> None:
        assert self.queue is not None
        env = await EnvScalerMCPEnv.create(self.env_id, transport=self.transport)  # type: ignore[arg-type]
        try:
            while (item := await self.queue.get()) is not None:
                scenario, reply = item
                try:
                    reply.set_result(await self._episode(env, scenario))
                except Exception as exc:  # the caller gets the episode's error
                    reply.set_exception(exc)
        finally:
            await env.close()

    @staticmethod
    async def _episode(env: EnvScalerMCPEnv, scenario: Scenario) -> dict[str, Any]:
        await env.reset(scenario)
        reward, step, done = 0.0, 0, False
        while not done:
            _obs, reward, terminated, truncated, _info = await env.step(act(scenario, step))
            done, step = terminated or truncated, step + 1
        return {"scenario_id": scenario.id, "reward": reward, "steps": step}

    async def rollout(self, scenario_json: dict[str, Any]) -> dict[str, Any]:
        if self.queue is None:
            self.queue = asyncio.Queue()
            self.loop_task = asyncio.create_task(self._loop())
        reply: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        await self.queue.put((Scenario.model_validate(scenario_json), reply))
        return await reply

    async def close(self) -> None:
        if self.queue is not None and self.loop_task is not None:
            await self.queue.put(None)
            await self.loop_task


def rollouts(env_id: str, episodes: int, actors: int, transport: str = "http") -> list[dict[str, Any]]:
    """Run `episodes` episodes over `actors` Ray actors (the driver must have called ray.init)."""
    scenarios = scenarios_for(env_id)
    workers = [RolloutWorker.remote(env_id, transport) for _ in range(actors)]  # type: ignore[attr-defined]
    refs = [workers[i % actors].rollout.remote(scenarios[i % len(scenarios)].model_dump(mode="json"))
            for i in range(episodes)]
    try:
        return list(ray.get(refs))
    finally:
        ray.get([w.close.remote() for w in workers])
        for w in workers:
            ray.kill(w)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--env", default="ecommerce_orders")
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--address", default=None, help="a running cluster ('auto' or host:port); default: local")
    args = parser.parse_args()
    ray.init(address=args.address, log_to_driver=False)
    results = rollouts(args.env, args.episodes, args.actors)
    for r in results:
        print(f"{r['scenario_id']}: reward {r['reward']:.2f} in {r['steps']} steps")
    print(f"mean reward {sum(r['reward'] for r in results) / len(results):.3f} over {len(results)} episodes")


if __name__ == "__main__":
    main()

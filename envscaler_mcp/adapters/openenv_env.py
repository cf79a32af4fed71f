"""Any environment as an OpenEnv environment (`openenv-core`, the optional `[openenv]` extra).

    from envscaler_mcp.adapters.openenv_env import EnvScalerAction, EnvScalerOpenEnv

    env = EnvScalerOpenEnv("ecommerce_orders")                 # launches the server and the validator sandbox
    obs = env.reset(scenario_id="sc-f79edc6dcc747e77")         # or reset(seed=7): a scenario drawn at random
    obs = env.step(EnvScalerAction(tool_name="cancel_order", arguments={"order_id": "O-10053"}))
    obs = env.step(EnvScalerAction(type="answer", text="Done."))   # obs.done, obs.reward, obs.outcome
    env.close()

The episode is the gym API's (adapters.gym): an action is a tool call (`type="call_tool"`, the same JSON
shape as OpenEnv's own CallToolAction, which is accepted too) or the agent's final answer (`type="answer"`);
the observation is the tool's result (or, at reset, the task with the tools and the system prompt). The
episode ends on the answer (or ###STOP### from the simulated user) or at the step limit; the final reward
is the checklist score from the validators run in the OS sandbox, 0.0 when the state check finds a change
the reference solution did not make. `obs.outcome` holds the checks, the score, the state check and success.

Every call works from any thread or event loop: the gym environment lives in one task of an event loop in
a thread of its own (an episode's MCP session must stay in one task), and reset/step/close are handed to it.
`openenv_app(env_id)` serves the environment to OpenEnv clients (a WebSocket session per client, each with
its own environment), the way trainers such as TRL consume OpenEnv environments.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import random
import threading
import weakref
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import Field, model_validator

from envscaler_mcp.adapters.gym import Action as GymAction
from envscaler_mcp.adapters.gym import EnvScalerMCPEnv, StepResult
from envscaler_mcp.catalog.store import get_skeleton, load_scenarios, scenarios_of
from envscaler_mcp.errors import UsageError
from envscaler_mcp.scenario.models import Scenario

Work = Callable[[EnvScalerMCPEnv], Awaitable[Any]]


class EnvScalerAction(Action):  # type: ignore[misc]
    """A tool call (type 'call_tool': tool_name, arguments) or the agent's final answer (type 'answer': text)."""

    type: Literal["call_tool", "answer"] = Field("call_tool", description="A tool call or the final answer.")
    tool_name: str = Field("", description="The tool to call (type 'call_tool').")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The tool's arguments.")
    text: str = Field("", description="The answer (type 'answer'); in conversation mode, the message to the user.")

    @model_validator(mode="after")
    def _named(self) -> EnvScalerAction:
        if self.type == "call_tool" and not self.tool_name:
            raise ValueError("a call_tool action needs a tool_name")
        return self


class EnvScalerObservation(Observation):  # type: ignore[misc]
    """What the agent sees; `outcome` is set when the episode ends (done)."""

    text: str = Field("", description="The tool's result; at reset the task (or the simulated user's opening "
                      "message); in conversation mode the user's reply to an answer.")
    tool_name: str = Field("", description="The tool called, for a tool result.")
    is_error: bool = Field(False, description="The tool call failed (unknown tool, bad arguments, refused).")
    scenario_id: str = Field("", description="The scenario of this episode.")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="The tools (name, description, "
                                        "parameters), at reset and for a list_tools action.")
    system_prompt: str = Field("", description="The agent's system prompt, at reset.")
    truncated: bool = Field(False, description="The episode ended at the step limit, not on an answer.")
    outcome: dict[str, Any] | None = Field(None, description="At the end: checks, score, diff, state_check "
                                           "and success (every item passes, the state check does not fail).")


class EnvScalerState(State):  # type: ignore[misc]
    """The episode's bookkeeping (the environment's own state stays in its server)."""

    env_id: str = Field("", description="The environment.")
    scenario_id: str = Field("", description="The scenario of the current episode.")
    done: bool = Field(True, description="No episode is running (none started yet, or it ended).")


class _Owner:
    """An event loop in a thread of its own, with one task that owns the gym environment: every piece of
    work (reset, step, close) runs in that task, whichever thread or event loop asks for it."""

    def __init__(self, create: Callable[[], Awaitable[EnvScalerMCPEnv]]) -> None:
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue[tuple[Work, concurrent.futures.Future[Any]] | None] | None = None
        self._closed = False
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(create),), daemon=True,
                                        name="envscaler-openenv")
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._closed = True
            self._thread.join()
            raise self._error

    async def _main(self, create: Callable[[], Awaitable[EnvScalerMCPEnv]]) -> None:
        self._loop, self._queue = asyncio.get_running_loop(), asyncio.Queue()
        try:
            env = await create()
        except BaseException as exc:  # handed to the constructor's caller
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            while (item := await self._queue.get()) is not None:
                work, reply = item
                if not reply.set_running_or_notify_cancel():
                    continue
                try:
                    reply.set_result(await work(env))
                except Exception as exc:  # the caller gets the error
                    reply.set_exception(exc)
        finally:
            await env.close()

    def submit(self, work: Work) -> concurrent.futures.Future[Any]:
        if self._closed or self._loop is None or self._queue is None:
            raise UsageError("the environment is closed")
        reply: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._loop.call_soon_threadsafe(self._queue.put_nowait, (work, reply))
        return reply

    def close(self) -> None:
        """Close the episode, the server and the sandbox, and end the thread (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._loop is not None and self._queue is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._queue.put_nowait, None)
        self._thread.join()


class EnvScalerOpenEnv(Environment):  # type: ignore[misc]
    """One environment (bundled id, folder or skeleton path) as an OpenEnv Environment; see the module doc.

    `scenarios`: the scenarios to reset to (default: the environment's own), as a list or a JSONL file;
    `seed`: draws scenarios reproducibly. `options` go to the gym (adapters.gym.EnvScalerMCPEnv.create:
    transport, mode, max_steps, user, validator_timeout_s, state_check)."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # every instance has its own server, sandbox and episode

    def __init__(self, env_id: str, *, scenarios: Sequence[Scenario] | str | Path | None = None,
                 seed: int | None = None, **options: Any) -> None:
        super().__init__()
        skeleton = get_skeleton(env_id)
        if scenarios is None:
            scenarios = scenarios_of(env_id, skeleton.id)
        elif isinstance(scenarios, str | Path):
            scenarios = load_scenarios(Path(scenarios))
        self.scenarios = list(scenarios)
        if not self.scenarios:
            raise UsageError(f"{env_id}: no scenarios to reset to (pass scenarios=...)")
        self._by_id = {s.id: s for s in self.scenarios}
        self._rng = random.Random(seed)
        self._metadata = EnvironmentMetadata(name=skeleton.id, description=skeleton.summary or skeleton.name)
        self._state = EnvScalerState(env_id=skeleton.id)
        self._tools: list[dict[str, Any]] = []
        self._owner = _Owner(lambda: EnvScalerMCPEnv.create(env_id, **options))
        self._finalizer = weakref.finalize(self, self._owner.close)

    # -- OpenEnv API ------------------------------------------------------------------------------------

    def reset(self, seed: int | None = None, episode_id: str | None = None, scenario_id: str | None = None,
              **kwargs: Any) -> EnvScalerObservation:
        """A fresh episode at a scenario's initial state: `scenario_id`, else one drawn (with `seed` if given)."""
        scenario = self._pick(seed, scenario_id)
        return self._reset_done(scenario, episode_id, self._owner.submit(lambda env: env.reset(scenario)).result())

    async def reset_async(self, seed: int | None = None, episode_id: str | None = None,
                          scenario_id: str | None = None, **kwargs: Any) -> EnvScalerObservation:
        scenario = self._pick(seed, scenario_id)
        result = await asyncio.wrap_future(self._owner.submit(lambda env: env.reset(scenario)))
        return self._reset_done(scenario, episode_id, result)

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> EnvScalerObservation:
        """Apply a tool call or the final answer (timeout_s is not used: the server's own limits apply)."""
        gym_action = self._gym_action(action)
        if gym_action is None:
            return self._tools_observation()
        return self._step_done(self._owner.submit(lambda env: env.step(gym_action)).result())

    async def step_async(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> EnvScalerObservation:
        gym_action = self._gym_action(action)
        if gym_action is None:
            return self._tools_observation()
        return self._step_done(await asyncio.wrap_future(self._owner.submit(lambda env: env.step(gym_action))))

    @property
    def state(self) -> EnvScalerState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return self._metadata

    def close(self) -> None:
        """Close the episode, the server and the validator sandbox."""
        self._finalizer()

    # -- the adapter ------------------------------------------------------------------------------------

    def _pick(self, seed: int | None, scenario_id: str | None) -> Scenario:
        if scenario_id is not None:
            if scenario_id not in self._by_id:
                raise UsageError(f"unknown scenario id {scenario_id!r} ({len(self._by_id)} scenarios)")
            return self._by_id[scenario_id]
        return (random.Random(seed) if seed is not None else self._rng).choice(self.scenarios)

    def _reset_done(self, scenario: Scenario, episode_id: str | None, result: tuple[str, dict[str, Any]]
                    ) -> EnvScalerObservation:
        text, info = result
        self._tools = info["tools"]
        self._state = EnvScalerState(env_id=self._state.env_id, episode_id=episode_id, step_count=0,
                                     scenario_id=scenario.id, done=False)
        return EnvScalerObservation(text=text, scenario_id=scenario.id, tools=self._tools,
                                    system_prompt=info["system_prompt"], done=False, reward=None)

    def _gym_action(self, action: Any) -> GymAction | None:
        """The gym's action for an OpenEnv action; None for list_tools (answered here, not a step)."""
        if isinstance(action, ListToolsAction):
            return None
        if isinstance(action, CallToolAction):
            return {"name": action.tool_name, "arguments": action.arguments}
        if isinstance(action, EnvScalerAction):
            if action.type == "answer":
                return action.text
            return {"name": action.tool_name, "arguments": action.arguments}
        raise UsageError(f"unsupported action {type(action).__name__}: use EnvScalerAction or CallToolAction")

    def _tools_observation(self) -> EnvScalerObservation:
        return EnvScalerObservation(tools=self._tools, scenario_id=self._state.scenario_id,
                                    done=self._state.done, reward=0.0)

    def _step_done(self, result: StepResult) -> EnvScalerObservation:
        text, reward, terminated, truncated, info = result
        done = terminated or truncated
        self._state.step_count += 1
        self._state.done = done
        outcome = None
        if done:
            outcome = {k: info[k] for k in ("checks", "score", "diff", "state_check", "success")}
        return EnvScalerObservation(
            text=text, tool_name=info.get("tool", ""), is_error=bool(info.get("is_error", False)),
            scenario_id=self._state.scenario_id, truncated=truncated, outcome=outcome, done=done, reward=reward,
        )


def openenv_app(env_id: str, *, max_concurrent_envs: int = 4, **options: Any) -> Any:
    """A FastAPI app serving the environment to OpenEnv clients (`uvicorn` it); each WebSocket session gets
    its own EnvScalerOpenEnv(env_id, **options). Reset takes `scenario_id` or `seed`."""
    skeleton = get_skeleton(env_id)
    return create_app(lambda: EnvScalerOpenEnv(env_id, **options), EnvScalerAction, EnvScalerObservation,
                      env_name=skeleton.id, max_concurrent_envs=max_concurrent_envs)

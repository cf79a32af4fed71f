"""A small gym-style API over MCP episodes, for RL loops that drive the agent themselves.

    env = await EnvScalerMCPEnv.create("mini_shop")   # transport="http" (default), "stdio" or "memory"
    obs, info = await env.reset(scenario)
    obs, reward, terminated, truncated, info = await env.step({"name": "get_order", "arguments": {...}})
    obs, reward, terminated, truncated, info = await env.step("Done: the order is cancelled.")
    await env.close()

An action is a tool call ({"name", "arguments"}; arguments may be a JSON string) or a text answer (str).
Tool calls go through MCP. The episode ends on a text answer in task mode or ###STOP### from the simulated
user (terminated), or at the step limit (truncated); every other step has reward 0.0. The final reward is the
checklist score of the final state and of the transcript (the calls and text answers so far), computed by the
validators in the sandbox, and the state check compares the final state with the reference solution's
(replayed once per scenario, as eval does): a change the reference did not make (kind collateral or extra)
sets the reward to 0.0. `info` holds the checks, the score, the diff, the state check, the observation check
(the results of the reference's read-only calls among the agent's) and `success` (every item passes and
neither check fails). Pass state_check=False for the checklist score alone (no reference is replayed, so the
observation check does not apply either).

An episode must be reset, stepped and closed from one task (its MCP session lives in that task): callers
that run each call in a task of its own (Ray actors, web servers) give the environment one owner task, as
adapters.openenv_env does.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any, Literal

from envscaler_mcp._json import State
from envscaler_mcp._outcome import DEFAULT_CONVENTION
from envscaler_mcp.errors import UsageError
from envscaler_mcp.harness.checks import Checker, SandboxChecker, episode_transcript
from envscaler_mcp.harness.episode import call_tool_safely, score_state, state_verdict
from envscaler_mcp.harness.observe import observation_verdict, read_only_tools
from envscaler_mcp.harness.prompts import EnvInfo, agent_system_prompt
from envscaler_mcp.harness.source import EpisodeSource, has_admin_plane
from envscaler_mcp.harness.user_sim import SimulatedUser
from envscaler_mcp.launch.episodes import Episode, NoAdminPlane
from envscaler_mcp.providers.base import Message, Provider, ToolCallRequest, ToolDef
from envscaler_mcp.providers.tools import decode_arguments, mcp_tools_to_defs
from envscaler_mcp.references.reference import ReferenceCache
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.scoring.metrics import episode_success
from envscaler_mcp.skeleton.models import FreeField

Action = dict[str, Any] | str
StepResult = tuple[str, float, bool, bool, dict[str, Any]]
UNEXPECTED = ("collateral", "extra")  # changes the reference did not make: they void the reward


class EnvScalerMCPEnv:
    """One environment served over MCP; each reset() opens a fresh isolated episode."""

    def __init__(
        self,
        source: EpisodeSource,
        checker: Checker,
        *,
        env_info: EnvInfo | None = None,
        mode: Literal["task", "conversation"] = "task",
        max_steps: int = 30,
        user: Provider | None = None,
        stack: AsyncExitStack | None = None,
        state_check: bool = True,
        free_fields: list[FreeField] | None = None,
        success_convention: str = DEFAULT_CONVENTION,
    ) -> None:
        if mode == "conversation" and user is None:
            raise UsageError("conversation mode needs a simulated-user provider (user=...)")
        self.source = source
        self.checker = checker
        self.env_info = env_info or EnvInfo()
        self.mode = mode
        self.max_steps = max_steps
        self.user_provider = user
        self.state_check = state_check
        self.free_fields = list(free_fields or [])
        self.success_convention = success_convention
        self.references = ReferenceCache()
        self._stack = stack or AsyncExitStack()
        self._episode_stack: AsyncExitStack | None = None
        self._ep: Episode | None = None
        self._scenario: Scenario | None = None
        self._user: SimulatedUser | None = None
        self._names: set[str] = set()
        self._read_only: set[str] | None = None  # tools the server marks read-only (the observation check)
        self._log: list[Message] = []  # the agent's calls, their results and its answers (for transcript items)
        self.tools: list[ToolDef] = []
        self.steps = 0
        self.done = True

    @classmethod
    async def create(
        cls,
        env_id: str,
        *,
        transport: Literal["memory", "http", "stdio"] = "http",
        mode: Literal["task", "conversation"] = "task",
        max_steps: int = 30,
        user: Provider | None = None,
        validator_timeout_s: float = 2.0,
        state_check: bool = True,
    ) -> EnvScalerMCPEnv:
        """Launch the environment's server (bundled env id, folder or skeleton) and a validator sandbox."""
        from envscaler_mcp.catalog.store import get_skeleton
        from envscaler_mcp.launch import launch_server

        skeleton = get_skeleton(env_id)
        stack = AsyncExitStack()
        try:
            server = await stack.enter_async_context(launch_server(env_id, transport=transport))
            checker = await stack.enter_async_context(SandboxChecker(timeout_s=validator_timeout_s))
        except BaseException:
            await stack.aclose()
            raise
        info = EnvInfo(name=skeleton.name, introduction=skeleton.introduction, rules=skeleton.rules)
        return cls(server, checker, env_info=info, mode=mode, max_steps=max_steps, user=user, stack=stack,
                   state_check=state_check, free_fields=list(skeleton.free_fields),
                   success_convention=skeleton.success_convention)

    async def reset(self, scenario: Scenario) -> tuple[str, dict[str, Any]]:
        """Open a fresh episode at the scenario's initial state. Returns (observation, info): the observation
        is the task (task mode) or the simulated user's opening message; info holds the tools and prompt."""
        await self._close_episode()
        self._episode_stack = AsyncExitStack()
        self._ep = await self._episode_stack.enter_async_context(self.source.episode(scenario.initial_state))
        listed = await self._ep.list_tools()
        self.tools, self._read_only = mcp_tools_to_defs(listed), read_only_tools(listed)
        self._names = {t.name for t in self.tools}
        self._scenario, self.steps, self.done, self._log = scenario, 0, False, []
        obs = scenario.task
        if self.mode == "conversation":
            assert self.user_provider is not None
            self._user = SimulatedUser(self.user_provider, scenario.task)
            obs = await self._user.first_message()
        info = {
            "scenario_id": scenario.id,
            "tools": [t.model_dump(mode="json") for t in self.tools],
            "system_prompt": agent_system_prompt(self.mode, self.env_info),
        }
        return obs, info

    async def step(self, action: Action) -> StepResult:
        """Apply one action; see the module docstring for the semantics."""
        if self.done or self._ep is None:
            raise UsageError("the episode is over: call reset(scenario) first")
        self.steps += 1
        if isinstance(action, str):
            return await self._answer(action)
        call = _to_call(action, self.steps)
        message = await call_tool_safely(self._ep, call, self._names)
        self._log += [Message(role="assistant", tool_calls=[call]), message]
        info: dict[str, Any] = {"tool": call.name, "is_error": message.is_error}
        if self.steps >= self.max_steps:
            return await self._end(message.content, terminated=False, info=info)
        return message.content, 0.0, False, False, info

    async def _answer(self, text: str) -> StepResult:
        self._log.append(Message(role="assistant", content=text))
        if self._user is None:
            return await self._end("", terminated=True, info={})
        reply = await self._user.respond(text)
        if self._user.stopped:
            return await self._end(reply, terminated=True, info={})
        if self.steps >= self.max_steps:
            return await self._end(reply, terminated=False, info={})
        return reply, 0.0, False, False, {}

    async def _end(self, obs: str, *, terminated: bool, info: dict[str, Any]) -> StepResult:
        assert self._ep is not None and self._scenario is not None
        self.done = True
        try:
            final_state: State | None = await self._ep.get_state()
        except NoAdminPlane:
            final_state = None
        answers = [m.content for m in self._log if m.role == "assistant" and m.content]
        transcript = episode_transcript(self._log, answers[-1] if answers else "", self.success_convention)
        checks, score, diff = await score_state(self._scenario, final_state, self.checker, transcript)
        reference = None
        if self.state_check and has_admin_plane(self.source):
            reference = await self.references.get(self._scenario, self.source.episode, self.free_fields,
                                                  convention=self.success_convention)
        verdict = state_verdict(reference, final_state)
        observation = observation_verdict("auto", reference, transcript, self._read_only)
        unexpected = any(c.kind in UNEXPECTED for c in verdict.changes)
        info.update(
            checks=[c.model_dump(mode="json") for c in checks],
            score=score,
            diff=[c.model_dump(mode="json") for c in diff],
            state_check=verdict.model_dump(mode="json"),
            observation=observation.model_dump(mode="json"),
            success=episode_success("checklist+state+observation", score, terminated, verdict.status,
                                    observation.status) is True,
        )
        reward = 0.0 if unexpected else float(score or 0.0)
        return obs, reward, terminated, not terminated, info

    async def _close_episode(self) -> None:
        if self._episode_stack is not None:
            await self._episode_stack.aclose()
        self._episode_stack, self._ep, self._user = None, None, None

    async def close(self) -> None:
        """Close the current episode, the server and the sandbox."""
        await self._close_episode()
        await self._stack.aclose()

    async def __aenter__(self) -> EnvScalerMCPEnv:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _to_call(action: dict[str, Any], step: int) -> ToolCallRequest:
    """A tool-call action as a ToolCallRequest; a non-object argument string is kept raw (an error result)."""
    if "name" not in action:
        raise UsageError("a tool-call action needs a 'name' (and 'arguments'); a text answer is a plain str")
    given = action.get("arguments") or {}
    if isinstance(given, str | dict):
        args, raw = decode_arguments(given)
    else:
        args, raw = {}, f"a {type(given).__name__}"
    return ToolCallRequest(
        id=str(action.get("id") or f"step_{step}"),
        name=str(action["name"]),
        arguments=args,
        raw_arguments=raw,
    )

"""One episode: an isolated server episode, the agent loop over MCP, the final state, the validators."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import anyio
from mcp import MCPError
from mcp.types import CallToolResult, TextContent, Tool

from envscaler_mcp._json import JSONObject, State
from envscaler_mcp._outcome import DEFAULT_CONVENTION
from envscaler_mcp._usage import Usage
from envscaler_mcp.compare.diff import StateChange, diff_states
from envscaler_mcp.errors import ModelFault, ServerFault, UsageError
from envscaler_mcp.harness.budget import EpisodeClock
from envscaler_mcp.harness.checks import (
    NO_ADMIN_REASON,
    Checker,
    episode_transcript,
    item_verdicts,
    mark_at_start,
)
from envscaler_mcp.harness.faults import describe, is_infra, not_retried
from envscaler_mcp.harness.limits import OutputLimits, check_state, cut, shown_result, stored_messages
from envscaler_mcp.harness.models import CheckOutcome, EpisodeConfig, EpisodeResult, EpisodeStatus, StepTiming
from envscaler_mcp.harness.observe import observation_verdict, read_only_tools
from envscaler_mcp.harness.prompts import EnvInfo, agent_system_prompt
from envscaler_mcp.harness.repeats import repeated_refusal
from envscaler_mcp.harness.source import EpisodeSource, has_admin_plane
from envscaler_mcp.harness.turns import TurnScoring, score_turns
from envscaler_mcp.harness.user_sim import SCRIPTED, ScriptedUser, SimulatedUser, turn_messages
from envscaler_mcp.launch.episodes import Episode, NoAdminPlane
from envscaler_mcp.providers.base import Message, Provider, ToolCallRequest, ToolDef
from envscaler_mcp.providers.tools import mcp_tools_to_defs, tool_result_message
from envscaler_mcp.references.reference import Reference, StateVerdict
from envscaler_mcp.scenario.models import Scenario
from envscaler_mcp.scoring.metrics import checklist_score, episode_success
from envscaler_mcp.transcript.observation import ObservationVerdict
from envscaler_mcp.transcript.record import EMPTY_TRANSCRIPT

# JSON-RPC errors a model can cause by a bad call; they go back to the agent as error results.
_MODEL_FAULT_CODES = {-32602, -32601}
T = TypeVar("T")


class _Recorder:
    """The mutable record of one attempt; kept even when the attempt times out."""

    def __init__(self, scenario: Scenario, config: EpisodeConfig) -> None:
        self.scenario = scenario
        self.config = config
        self.messages: list[Message] = []
        self.timings: list[StepTiming] = []
        self.tools: list[ToolDef] = []
        self.read_only: set[str] | None = None  # tools the server marks read-only (None: it marks none)
        self.agent_usage = Usage()
        self.user: SimulatedUser | ScriptedUser | None = None
        self.turn_marks: list[int] = []  # len(messages) at the end of each turn but the last (multi-turn)
        self.turn_states: list[State | None] = []  # the state at each of those points (None: not readable)
        self.steps = 0
        self.tool_calls = 0
        self.tool_errors = 0
        self.final_answer = ""
        self.model_error: str | None = None
        self.waiting_on_server = False  # True while a server call is in flight (a timeout then is infra)

    def result(self, agent: Provider, user: Provider | None, **outcome: Any) -> EpisodeResult:
        """The episode's record: what every attempt records (the scenario, the seats, tools, messages, timings,
        usage, steps) and `outcome` (a finished attempt's status and verdicts, or the infra error's)."""
        scenario, config = self.scenario, self.config
        return EpisodeResult(
            env_id=scenario.env_id,
            scenario_id=scenario.id,
            mode=config.mode,
            agent_model=agent.spec,
            user_model=user.spec if user else None,
            title=scenario.title,
            task=scenario.task,
            tools=self.tools,
            messages=stored_messages(self.messages, config.limits),
            timings=self.timings,
            agent_usage=self.agent_usage,
            user_usage=self.user.usage if self.user else Usage(),
            steps=self.steps,
            **outcome,
        )

    def time(self, kind: Any, started: float, name: str = "", is_error: bool = False) -> None:
        self.timings.append(
            StepTiming(
                step=self.steps,
                kind=kind,
                name=name,
                is_error=is_error,
                seconds=round(time.perf_counter() - started, 6),
            )
        )


async def run_episode(
    scenario: Scenario,
    *,
    source: EpisodeSource,
    agent: Provider,
    checker: Checker,
    config: EpisodeConfig | None = None,
    env_info: EnvInfo | None = None,
    user: Provider | None = None,
    run_id: str = "",
    trial: int = 0,
    reference: Reference | None = None,
    success_convention: str = DEFAULT_CONVENTION,
) -> EpisodeResult:
    """Run one (scenario, trial) episode and score it.

    `reference` is the scenario's reference final state (references.reference, shared by every trial): the final state
    is compared with it (the state check); without it the state check is not available. `success_convention`
    is how the environment reports a failed call (_outcome.py), for the transcript checks.

    Infrastructure failures (server crash or hang, MCP transport, provider after its retries, validator
    sandbox) are retried `config.infra_retries` times on a fresh episode; if every attempt fails the result
    has status 'infra_error' with the reasons, and no score. The agent's own faults (context overflow,
    refusal, invalid requests) end the episode as 'model_error' and it is scored. Usage errors (a missing
    API key) and anything else (a bug in the harness) propagate: see harness/faults.py.
    """
    config = config or EpisodeConfig()
    if config.mode == "conversation" and user is None:
        raise UsageError("conversation mode needs a simulated user: pass --user PROVIDER/MODEL")
    reasons: list[str] = []
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    attempt = 0
    while attempt <= config.infra_retries:
        attempt += 1
        if attempt > 1:
            await anyio.sleep(config.infra_backoff_s * (attempt - 1))
        t0 = time.perf_counter()
        rec = _Recorder(scenario, config)
        try:
            result = await _attempt(rec, source, agent, checker, env_info or EnvInfo(), user, reference,
                                    success_convention)
        except Exception as exc:
            if not is_infra(exc):
                raise
            reasons.append(f"attempt {attempt}: {describe(exc)}")
            if not_retried(exc):  # the environment's code would do it again
                break
            continue
        return result.model_copy(
            update={
                "run_id": run_id,
                "trial": trial,
                "attempts": attempt,
                "started_at": started_at,
                "latency_s": round(time.perf_counter() - t0, 4),
            }
        )
    return rec.result(
        agent,
        user,
        run_id=run_id,
        trial=trial,
        status="infra_error",
        infra_reason="; ".join(reasons),
        attempts=attempt,
        started_at=started_at,
        latency_s=round(time.perf_counter() - t0, 4),
        scorable=False,
        state_check_reason="the episode ended in an infrastructure error",
        observation=ObservationVerdict(reason="the episode ended in an infrastructure error"),
    )


async def score_state(
    scenario: Scenario, final_state: State | None, checker: Checker,
    transcript: JSONObject | None = None, reference: Reference | None = None, turns: TurnScoring | None = None,
) -> tuple[list[CheckOutcome], float | None, list[StateChange]]:
    """(checklist verdicts, checklist score, state diff) of a final state and a transcript. Without a final
    state (no admin plane) state items are not scorable and transcript items still run. The items also run
    on the untouched initial state with an empty transcript (at the same time): those already true there are
    guards, which earn nothing (scoring.metrics.checklist_score). A final state that is the reference's own
    (launch gives it back when the JSON is the same) has the reference's diff. Items a turn of a multi-turn
    scenario names are judged on the state and transcript at that turn's end."""
    found: dict[str, list[CheckOutcome]] = {}

    async def run(key: str, final: State | None, seen: JSONObject | None) -> None:
        if key == "final" and turns is not None:
            found[key] = await score_turns(turns, checker, final, seen)
        else:
            found[key] = await checker.check(scenario.checklist, scenario.initial_state, final, seen)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run, "final", final_state, transcript)
        tg.start_soon(run, "start", scenario.initial_state, dict(EMPTY_TRANSCRIPT))
    checks = mark_at_start(found["final"], found["start"])
    if final_state is None:
        diff = []
    elif reference is not None and final_state is reference.final_state:
        diff = reference.diff_from_initial()
    else:
        diff = diff_states(scenario.initial_state, final_state)
    return checks, checklist_score(item_verdicts(checks)), diff


def state_verdict(reference: Reference | None, final_state: State | None) -> StateVerdict:
    """The state check of a final state against the scenario's reference (references.reference)."""
    if final_state is None:
        return StateVerdict(status="not_available", reason=NO_ADMIN_REASON)
    if reference is None:
        return StateVerdict(status="not_available", reason="no reference final state was computed for this run")
    return reference.check(final_state, no_state_reason=NO_ADMIN_REASON)


async def _attempt(
    rec: _Recorder,
    source: EpisodeSource,
    agent: Provider,
    checker: Checker,
    env_info: EnvInfo,
    user: Provider | None,
    reference: Reference | None,
    success_convention: str,
) -> EpisodeResult:
    scenario, config = rec.scenario, rec.config
    status: EpisodeStatus
    final_state: State | None = None
    t = time.perf_counter()
    async with source.episode(scenario.initial_state if has_admin_plane(source) else None) as opened:
        ep = _Watched(opened, rec, config.server_timeout_s)
        listed = await ep.list_tools()
        rec.tools, rec.read_only = mcp_tools_to_defs(listed), read_only_tools(listed)
        rec.time("setup", t)
        clock = EpisodeClock(agent, config)
        with clock.scope as scope:
            status = await _loop(rec, ep, agent, env_info, user, clock)
        if scope.cancelled_caught:
            if rec.waiting_on_server:  # the time ran out inside a server call: the server's fault
                raise ServerFault("the server did not answer a tool call before the episode's time ran out")
            status = "timeout"
        t = time.perf_counter()
        try:
            final_state = await ep.final_state(reference.final_state if reference is not None else None)
        except NoAdminPlane:
            final_state = None
        rec.time("state", t)
    check_state(final_state, config.limits)
    t = time.perf_counter()
    transcript = episode_transcript(rec.messages, rec.final_answer, success_convention)
    turns = TurnScoring(scenario, rec.turn_marks, rec.turn_states, rec.messages, reference)
    checks, score, diff = await score_state(scenario, final_state, checker, transcript, reference, turns)
    rec.time("validate", t)
    t = time.perf_counter()
    verdict = state_verdict(reference, final_state)
    turn_outcomes, verdict = turns.state_checks(verdict)
    turn_calls = [sum(len(m.tool_calls) for m in rec.messages[:mark] if m.role == "assistant")
                  for mark in rec.turn_marks]
    observation = observation_verdict(config.observation, reference, transcript, rec.read_only, turn_calls)
    rec.time("state_check", t)
    return rec.result(
        agent,
        user,
        run_id="",  # set with the trial, attempts and latency by run_episode
        trial=0,
        status=status,
        user_messages=stored_messages(rec.user.messages, config.limits) if rec.user else [],
        final_answer=rec.final_answer,
        tool_calls=rec.tool_calls,
        tool_errors=rec.tool_errors,
        scorable=score is not None,
        model_error=rec.model_error,
        checks=checks,
        score=score,
        success=episode_success(config.success, score, status == "completed", verdict.status, observation.status),
        state_check=verdict.status,
        state_check_reason=verdict.reason,
        observation=observation,
        unexpected_changes=verdict.changes,
        diff=diff,
        turns=turn_outcomes,
    )


async def _loop(
    rec: _Recorder,
    ep: Episode,
    agent: Provider,
    env_info: EnvInfo,
    user: Provider | None,
    clock: EpisodeClock,
) -> EpisodeStatus:
    config, scenario = rec.config, rec.scenario
    rec.messages.append(Message(role="system", content=agent_system_prompt(config.mode, env_info)))
    if config.mode == "conversation" and user is not None and user.spec != SCRIPTED:
        rec.user = SimulatedUser(user, scenario.task, config.user_settings)
    elif config.mode == "conversation" or scenario.turns:
        rec.user = ScriptedUser(turn_messages(scenario))
    if rec.user is not None:
        t = time.perf_counter()
        opening = await rec.user.first_message()
        rec.time("user", t)
        rec.messages.append(Message(role="user", content=opening))
    else:
        rec.messages.append(Message(role="user", content=scenario.task))
    all_tools = rec.tools
    turn = 0

    def offered() -> tuple[list[ToolDef], set[str]]:
        hidden = scenario.turn_tools_hidden(turn) if scenario.turns else set()
        tools = [tool for tool in all_tools if tool.name not in hidden]
        return tools, {tool.name for tool in tools}

    tools, names = offered()
    while rec.steps < config.max_steps:
        rec.steps += 1
        t = time.perf_counter()
        try:
            reply_turn = await agent.complete(list(rec.messages), tools, config.agent_settings)
        except ModelFault as fault:
            rec.time("agent", t)
            rec.model_error = f"{fault.kind}: {fault}"
            return "model_error"
        rec.time("agent", t)
        clock.after_turn(rec.steps)
        rec.agent_usage = rec.agent_usage + reply_turn.usage
        if reply_turn.finish_reason == "content_filter":
            rec.messages.append(reply_turn.message.model_copy(update={"role": "assistant"}))
            rec.model_error = "refusal: the provider stopped the answer (content filter / refusal)"
            return "model_error"
        message = reply_turn.message.model_copy(update={"role": "assistant"})
        over = len(message.content) - config.limits.answer_chars
        if over > 0 and not message.tool_calls:  # an answer (or a message to the user) past its cap: the model's
            rec.model_error = (f"answer_too_long: the answer has {len(message.content):,} characters, more than "
                               f"the cap of {config.limits.answer_chars:,} (--max-answer); scored cut to the cap")
            message = message.model_copy(update={"content": cut(message.content, config.limits.answer_chars,
                                                                 "the answer"), "full_chars": len(message.content)})
            rec.messages.append(message)
            rec.final_answer = message.content
            return "model_error"
        rec.messages.append(message)
        if not message.tool_calls:
            rec.final_answer = message.content
            if rec.user is None:
                return "completed"
            if turn < len(scenario.turns) - 1:  # a multi-turn scenario: keep the state at this turn's end
                await _end_of_turn(rec, ep)
            t = time.perf_counter()
            reply = await rec.user.respond(message.content)
            rec.time("user", t)
            if rec.user.stopped:
                return "completed"
            rec.messages.append(Message(role="user", content=reply))
            if isinstance(rec.user, ScriptedUser):
                turn = rec.user.revealed - 1
                tools, names = offered()
            continue
        for call in message.tool_calls:
            rec.messages.append(await _execute(rec, ep, call, names, config.limits))
        if (stuck := repeated_refusal(rec.messages)) is not None:
            rec.model_error = stuck
            return "model_error"
    return "max_steps"


async def _end_of_turn(rec: _Recorder, ep: Episode) -> None:
    """Mark the end of a turn and keep the state at that point (None without an admin plane)."""
    t = time.perf_counter()
    rec.turn_marks.append(len(rec.messages))
    try:
        rec.turn_states.append(await ep.get_state())
    except NoAdminPlane:
        rec.turn_states.append(None)
    rec.time("state", t)


async def _execute(rec: _Recorder, ep: Episode, call: ToolCallRequest, names: set[str],
                   limits: OutputLimits) -> Message:
    rec.tool_calls += 1
    t = time.perf_counter()
    message = await call_tool_safely(ep, call, names, limits)
    rec.tool_errors += message.is_error
    rec.time("tool", t, name=call.name, is_error=message.is_error)
    return message


async def call_tool_safely(ep: Episode, call: ToolCallRequest, names: set[str],
                           limits: OutputLimits | None = None) -> Message:
    """Run one tool call through MCP and return the `tool` message answering it, cut for the agent to
    `limits.shown_result_chars` (harness/limits.py).

    Model mistakes (undecodable or malformed arguments, unknown tool, a request the server rejects as invalid)
    become error results the agent can recover from; other MCP errors propagate (they are the
    infrastructure's), and so does OutputTooLarge for a result past `limits.tool_result_chars`.
    """
    if call.rejected is not None:
        result = _error_result(f"The call to '{call.name}' was not sent: {call.rejected}. Send the arguments as a "
                               "JSON object matching the tool's schema.")
    elif call.raw_arguments is not None:
        result = _error_result(
            f"The arguments of '{call.name}' are not a JSON object: {call.raw_arguments[:300]!r}. "
            "Send the arguments as a JSON object matching the tool's schema."
        )
    elif call.name not in names:
        result = _error_result(f"Unknown tool '{call.name}'. Available tools: {', '.join(sorted(names))}.")
    else:
        try:
            result = await ep.call_tool(call.name, call.arguments)
        except MCPError as exc:
            if exc.code not in _MODEL_FAULT_CODES:
                raise
            result = _error_result(f"Tool call rejected: {exc.message}")
    return shown_result(tool_result_message(call, result), limits or OutputLimits())


class _Watched:
    """An episode handle whose every server call has a deadline: a server that stops answering (hung,
    stopped, deadlocked) is a ServerFault, never time charged to the agent."""

    def __init__(self, ep: Episode, rec: _Recorder, timeout_s: float) -> None:
        self._ep, self._rec, self._timeout_s = ep, rec, timeout_s

    async def _call(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        self._rec.waiting_on_server = True  # stays set when the episode's time runs out in here
        try:
            with anyio.fail_after(self._timeout_s):
                result = await call()
        except TimeoutError:
            raise ServerFault(f"the server did not answer {what} within {self._timeout_s:g} s") from None
        self._rec.waiting_on_server = False
        return result

    async def list_tools(self) -> list[Tool]:
        return await self._call("tools/list", self._ep.list_tools)

    async def call_tool(self, name: str, arguments: JSONObject) -> CallToolResult:
        return await self._call(f"tools/call {name}", lambda: self._ep.call_tool(name, arguments))

    async def get_state(self) -> State:
        return await self._call("the state request", self._ep.get_state)

    async def final_state(self, like: State | None = None) -> State:
        """The state read for the last time (launched servers close the episode in the same request); `like` as
        for launch.Episode.final_state."""
        final = getattr(self._ep, "final_state", None)
        return await self._call("the state request", self._ep.get_state if final is None else lambda: final(like))


def _error_result(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)

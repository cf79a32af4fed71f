"""On-disk formats of the harness: one EpisodeResult per line of results.jsonl; the per-episode settings."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from envscaler_mcp._choices import Mode, ObservationMode, SuccessRule
from envscaler_mcp._usage import Usage
from envscaler_mcp.compare.diff import StateChange
from envscaler_mcp.compare.statecheck import StateCheckStatus, UnexpectedChange
from envscaler_mcp.harness.limits import OutputLimits
from envscaler_mcp.providers.base import GenerationSettings, Message, ToolDef
from envscaler_mcp.scenario.models import CheckKind
from envscaler_mcp.transcript.observation import ObservationVerdict

EpisodeStatus = Literal["completed", "max_steps", "timeout", "model_error", "infra_error"]
CheckStatus = Literal["pass", "fail", "error", "not_scorable"]


class CheckOutcome(BaseModel):
    """The verdict of one checklist item on the episode's final state or transcript."""

    id: str = Field(description="Checklist item id (e.g. 'c1').")
    description: str = Field(description="The fact the item asserts ('Has …?').")
    status: CheckStatus = Field(
        description="'pass' / 'fail' from the validator; 'error' when the validator raised, timed out or "
        "returned "
        "a non-bool (counts as fail); 'not_scorable' when no final state (state items) or no validator was "
        "available."
    )
    reason: str = Field("", description="Why it failed or could not be scored (exception text, timeout, …).")
    kind: CheckKind = Field("state", description="'state' (read the final state) or 'transcript' (read the "
                            "transcript: the calls made and the agent's answer).")
    evidence: list[str] = Field(
        default_factory=list,
        description="What decided a transcript item: the sentence that stated a fact, the call that matched, "
        "or what was missing.",
    )
    at_start: bool = Field(
        False,
        description="The item already held before the agent acted (on the initial state and an empty "
        "transcript): a guard that the score requires to stay true but that earns nothing itself.",
    )

    @property
    def passed(self) -> bool:
        """True only for a validator that returned True."""
        return self.status == "pass"


class StepTiming(BaseModel):
    """Wall time of one unit of work inside an episode."""

    step: int = Field(description="Agent step (model call) this belongs to, from 1; 0 for setup/scoring.")
    kind: Literal["setup", "agent", "user", "tool", "state", "validate", "state_check"] = Field(
        description="'agent'/'user': a model call of that seat; 'tool': one MCP tool call; 'setup': episode "
        "creation and tool listing; 'state': reading the final state; 'validate': running the validators; "
        "'state_check': comparing the final state with the reference solution's."
    )
    name: str = Field("", description="Tool name for 'tool' entries.")
    seconds: float = Field(description="Wall time in seconds.")
    is_error: bool = Field(False, description="For 'tool': the result was an error result.")


class TurnOutcome(BaseModel):
    """The state check at the end of one user turn of a multi-turn scenario."""

    turn: int = Field(description="Turn number, from 1.")
    reached: bool = Field(description="The episode got to the end of this turn.")
    state_check: StateCheckStatus = Field(description="The state at this turn's end against the reference's.")
    state_check_reason: str = Field("", description="Why it failed early or is not available.")
    unexpected_changes: list[UnexpectedChange] = Field(
        default_factory=list, description="How the state differs from the reference's at this turn's end."
    )


class EpisodeResult(BaseModel):
    """Everything one (scenario, trial) episode produced: the record written to results.jsonl."""

    run_id: str = Field(description="Id of the run this episode belongs to.")
    env_id: str = Field(description="Environment id.")
    scenario_id: str = Field(description="Scenario id.")
    trial: int = Field(description="Trial number, from 0, of this scenario in the run.")
    mode: Mode = Field(
        description="'task' (task is the first user message) or 'conversation' (simulated user)."
    )
    status: EpisodeStatus = Field(
        description="'completed': the agent answered without a tool call (task mode) or the simulated user "
        "ended with ###STOP### (conversation mode); 'max_steps': step limit reached; 'timeout': per-episode "
        "time limit "
        "reached; 'model_error': the agent's model failed by its own doing (context overflow, refusal, an "
        "invalid request its output produced, the same refused call repeated): scored as a failure; 'infra_error': the server, MCP transport, "
        "validator sandbox or a provider failed after retries (excluded from model scores)."
    )
    infra_reason: str | None = Field(None, description="For infra_error: what failed, per attempt.")
    model_error: str | None = Field(
        None, description="For model_error: 'context_overflow', 'refusal', 'invalid_request', 'answer_too_long' or "
        "'repeated_refused_call', then the message."
    )
    attempts: int = Field(
        1, description="Attempts made (infra errors are retried a bounded number of times)."
    )
    agent_model: str = Field("", description="provider/model of the agent seat.")
    user_model: str | None = Field(None, description="provider/model of the simulated-user seat, if any.")
    title: str = Field("", description="The scenario's short title ('' when it has none).")
    task: str = Field("", description="The scenario's task text.")
    tools: list[ToolDef] = Field(
        default_factory=list, description="Tools offered to the agent (admin excluded)."
    )
    messages: list[Message] = Field(
        default_factory=list,
        description="The agent's full transcript: system, user, assistant (text, tool calls, reasoning) and "
        "tool "
        "results (with is_error).",
    )
    user_messages: list[Message] = Field(
        default_factory=list,
        description="The simulated user's own transcript (conversation mode): it sees only the agent's text.",
    )
    final_answer: str = Field("", description="The agent's last text answer.")
    steps: int = Field(0, description="Agent steps taken (one step = one agent model call).")
    tool_calls: int = Field(0, description="Tool calls executed through MCP (or rejected before it).")
    tool_errors: int = Field(0, description="Tool calls whose result was an error result.")
    timings: list[StepTiming] = Field(default_factory=list, description="Per-step wall times.")
    agent_usage: Usage = Field(default_factory=Usage, description="Tokens and cost of the agent seat.")
    user_usage: Usage = Field(
        default_factory=Usage, description="Tokens and cost of the simulated-user seat."
    )
    scorable: bool = Field(
        True,
        description="False when no checklist item could be scored (e.g. a server without an admin plane and "
        "no transcript items, or no validators); the items' reasons say why.",
    )
    checks: list[CheckOutcome] = Field(default_factory=list, description="Per-checklist-item verdicts.")
    score: float | None = Field(
        None,
        description="Checklist score (scoring.metrics): passed / scorable items the task asks to become true "
        "(items already true at the start are guards: they earn nothing, and a failed guard makes the score "
        "0.0); None when no such item could be scored, or for infra errors.",
    )
    success: bool | None = Field(
        None,
        description="Under the run's success rule (EpisodeConfig.success): the episode completed and none of the "
        "rule's parts failed ('checklist': every scorable item passed; 'state': the state check did not fail; "
        "'observation': the observation check did not fail). A rule of 'state' or 'observation' alone needs that "
        "check to pass (None when it does not apply). None when not scorable or on an infra error.",
    )
    state_check: StateCheckStatus = Field(
        "not_available",
        description="The final state against the reference solution's: 'pass', 'fail' (see "
        "unexpected_changes) or 'not_available' (see state_check_reason).",
    )
    state_check_reason: str = Field("", description="Why the state check is not available.")
    observation: ObservationVerdict = Field(
        default_factory=ObservationVerdict,
        description="The observation check: the results of the reference solution's read-only calls against the "
        "results of the agent's own calls (status passed / failed / not_applicable, evidence of what was not "
        "observed).",
    )
    unexpected_changes: list[UnexpectedChange] = Field(
        default_factory=list,
        description="What the agent's final state has that the reference's has not: collateral changes, "
        "mismatches, missing and extra records (free fields excepted).",
    )
    diff: list[StateChange] = Field(
        default_factory=list,
        description="Final state vs initial state: every added, removed or changed path (lists element by "
        "element).",
    )
    turns: list[TurnOutcome] = Field(
        default_factory=list,
        exclude_if=lambda value: not value,
        description="Multi-turn scenarios: the state check after every turn (the episode's state_check is the "
        "first failing turn's).",
    )
    latency_s: float = Field(0.0, description="Wall time of the episode (last attempt), in seconds.")
    started_at: str = Field("", description="ISO-8601 UTC start time.")


class EpisodeConfig(BaseModel):
    """How episodes are run (the same for every episode of a run)."""

    mode: Mode = Field("task", description="'task' or 'conversation'.")
    max_steps: int = Field(
        30, ge=1, description="Agent steps (model calls) before the episode stops as max_steps."
    )
    timeout_s: float | None = Field(
        None,
        gt=0,
        description="Per-episode wall-time limit in seconds; None: derived from the agent's measured speed "
        "(harness/budget.py), 600 s for agents that do not measure it.",
    )
    server_timeout_s: float = Field(
        60.0,
        gt=0,
        description="Longest wait for one server answer (open an episode, list tools, a tool call, the state): "
        "a server silent for longer is hung (an infrastructure fault), and is restarted.",
    )
    infra_retries: int = Field(2, ge=0, description="Extra attempts after an infrastructure failure.")
    success: SuccessRule = Field(
        "checklist+state+observation",
        description="What success means: the parts, joined by '+', that must not fail: 'checklist' (every item "
        "passes), 'state' (the state check), 'observation' (the observation check); 'state' or 'observation' "
        "alone must pass. 'both' = 'checklist+state'. The episode must also have completed.",
    )
    observation: ObservationMode = Field(
        "auto",
        description="The observation check: 'auto' where the reference solution calls a tool the server marks "
        "read-only, 'on' wherever the reference has results, 'off' never.",
    )
    infra_backoff_s: float = Field(1.0, ge=0, description="Wait before retry n: n x this many seconds.")
    limits: OutputLimits = Field(
        default_factory=OutputLimits,
        description="Size caps on tool results (shown to the agent, accepted), final states, answers and stored "
        "transcripts (harness/limits.py).",
    )
    agent_settings: GenerationSettings = Field(
        default_factory=lambda: GenerationSettings(temperature=0.0, max_tokens=4096),
        description="Generation settings of the agent seat.",
    )
    user_settings: GenerationSettings = Field(
        default_factory=lambda: GenerationSettings(temperature=0.7, max_tokens=1024),
        description="Generation settings of the simulated-user seat.",
    )

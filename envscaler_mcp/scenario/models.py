"""Scenarios: an initial state, a task, a checklist with validators, and a reference solution."""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from envscaler_mcp._json import JSONObject, State
from envscaler_mcp.skeleton.models import FreeField, Provenance, canonical_hash

CheckKind = Literal["state", "transcript"]


class ChecklistItem(BaseModel):
    """One independent fact the episode must show, with the Python validator that checks it: on the final
    state (`kind="state"`) or on the transcript, what the agent did and said (`kind="transcript"`)."""

    id: str = Field(description="Item id, unique within the scenario (e.g. 'c1').")
    description: str = Field(description="The fact, phrased 'Has …?'.")
    validator: str | None = Field(
        None,
        description="Python source. State items define `def check_func(final_state) -> bool`; transcript items "
        "define `def check_func(transcript) -> bool` where transcript is {'calls': [{'name', 'arguments', "
        "'result', 'is_error'}], 'answer': str, 'told_user': [str]} and may use `from transcript_checks import "
        "says, called, not_called`. A global `initial_state` holds the scenario's initial state. None for "
        "scenarios without validators (EnvScaler SFT).",
    )
    claims_change: bool = Field(
        True,
        description="State items: True when the item asserts a change, so it must be False on the initial "
        "state. Transcript items must be False on the empty transcript whatever this says.",
    )
    kind: CheckKind = Field(
        "state",
        description="'state': the validator reads the final state; 'transcript': it reads the episode's "
        "transcript (tool calls in order and the agent's answer), for read-only tasks and servers without "
        "an admin plane.",
    )


class ToolCall(BaseModel):
    """One call of the reference solution."""

    tool: str = Field(description="Tool name.")
    arguments: JSONObject = Field(default_factory=dict, description="Arguments, as the tool's schema wants.")


class Turn(BaseModel):
    """One user turn of a multi-turn scenario: what the user says, the tools that appear with it, the
    reference calls that answer it, and the checklist items judged on the state at its end."""

    model_config = ConfigDict(extra="forbid")

    user: str = Field(description="The user's message that opens this turn, revealed verbatim.")
    tools_added: list[str] = Field(
        default_factory=list,
        description="Tools offered to the agent from this turn on; a tool named by a turn is hidden before it.",
    )
    reference: list[ToolCall] = Field(
        default_factory=list, description="The reference calls of this turn, in order (may be empty)."
    )
    answer: str | None = Field(None, description="What a correct agent tells the user at the end of this turn.")
    checks: list[str] = Field(
        default_factory=list,
        description="Ids of checklist items judged on the state (and transcript) at the end of this turn instead "
        "of at the end of the episode.",
    )
    check_state: bool = Field(
        True,
        exclude_if=lambda value: value,  # the default is left out: files and content hashes stay as they were
        description="False: the state is not compared with the reference's at this turn's end (a turn the task "
        "leaves unjudged, such as BFCL's turns without ground truth); the next judged turn still is. The last "
        "turn is always judged.",
    )


class StateCheckOptions(BaseModel):
    """How the state check treats one scenario, on top of its environment's free fields."""

    model_config = ConfigDict(extra="forbid")

    free: list[FreeField] = Field(default_factory=list, description="More free fields for this scenario.")
    not_free: list[str] = Field(
        default_factory=list,
        description="Path patterns that are NOT free here although the environment declares them free (the task "
        "dictates the exact text, say).",
    )
    disabled: str | None = Field(
        None, description="Why the state check does not apply to this scenario; set: it is 'not_available'."
    )


class Scenario(BaseModel):
    """A task on an environment, checkable on the final state and on the transcript."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field("", description="Content hash of env_id, initial state, task and checklist ('sc-' + 16 hex).")
    env_id: str = Field(description="Environment id the scenario runs on.")
    title: str = Field("", description="Short title shown in menus and prompts.")
    task: str = Field(description="The user's task, as the agent (or the simulated user) receives it.")
    initial_state: State = Field(description="Full initial state; keys are state attribute names.")
    checklist: list[ChecklistItem] = Field(description="Independent items; the checklist score is passed/total.")
    reference_solution: list[ToolCall] = Field(
        default_factory=list, description="Ordered tool calls that solve the task; empty when unknown."
    )
    reference_makes_no_calls: bool = Field(
        False,
        exclude_if=lambda value: not value,  # unset: left out, so scenario files stay as they were
        description="The reference solution is known and makes no call (the task needs none); "
        "reference_solution is then empty.",
    )
    reference_answer: str | None = Field(
        None,
        description="What a correct agent tells the user at the end (the facts transcript items look for); the "
        "oracle answers with it and the QA gate checks transcript items against it.",
    )
    wrong_solutions: list[list[ToolCall]] = Field(
        default_factory=list,
        description="Plausible wrong solutions (ordered tool calls each); the QA gate replays every one and "
        "requires it to leave some validator False. Never served to agents.",
    )
    difficulty: int | None = Field(None, description="Number of tool calls in the reference solution.")
    provenance: Provenance = Field(description="How this scenario was made.")
    extra: JSONObject = Field(default_factory=dict, description="Foreign-format fields kept for round trips.")
    state_check: StateCheckOptions | None = Field(
        None,
        exclude_if=lambda value: value is None,  # unset: left out, so scenario files stay as they were
        description="Scenario-specific options of the state check (extra or removed free fields, or off).",
    )
    turns: list[Turn] = Field(
        default_factory=list,
        exclude_if=lambda value: not value,  # single-turn scenarios are written as before
        description="Ordered user turns of a multi-turn task (empty: one turn, the task). The reference "
        "solution is then the turns' reference calls in order; the state is checked after every turn.",
    )

    @field_validator("checklist")
    @classmethod
    def _unique_item_ids(cls, checklist: list[ChecklistItem]) -> list[ChecklistItem]:
        """Verdicts are keyed by item id: two items with one id would let one verdict stand for both."""
        repeated = [f"'{item_id}' ({n} times)" for item_id, n in Counter(c.id for c in checklist).items() if n > 1]
        if repeated:
            raise ValueError(f"checklist item ids must be unique within a scenario; repeated: {', '.join(repeated)}")
        return checklist

    @model_validator(mode="after")
    def _turns_agree(self) -> Scenario:
        """A multi-turn scenario's reference solution is its turns' calls in order (filled in when empty), and a
        turn checks only items of the checklist, each at one turn."""
        if not self.turns:
            return self
        calls = [call for turn in self.turns for call in turn.reference]
        if not self.reference_solution:
            self.reference_solution = calls
        elif [c.model_dump() for c in self.reference_solution] != [c.model_dump() for c in calls]:
            raise ValueError("reference_solution must be the turns' reference calls in order")
        ids = {c.id for c in self.checklist}
        named = [item for turn in self.turns for item in turn.checks]
        unknown = sorted(set(named) - ids)
        if unknown:
            raise ValueError(f"turns name checklist items that do not exist: {', '.join(unknown)}")
        twice = sorted(item for item, n in Counter(named).items() if n > 1)
        if twice:
            raise ValueError(f"a checklist item is judged at one turn only; named twice: {', '.join(twice)}")
        return self

    def turn_tools_hidden(self, turn: int) -> set[str]:
        """Tools not yet offered at turn `turn` (0-based): those a later turn adds (and no turn up to it)."""
        offered = {name for done in self.turns[:turn + 1] for name in done.tools_added}
        return {name for later in self.turns[turn + 1:] for name in later.tools_added} - offered

    def item_turn(self) -> dict[str, int]:
        """{checklist item id: the turn at whose end it is judged}, for items a turn names."""
        return {item: n for n, turn in enumerate(self.turns) for item in turn.checks}

    def has_reference(self) -> bool:
        """Is a reference solution known (some calls, or the known answer that no call is needed)?"""
        return bool(self.reference_solution) or self.reference_makes_no_calls

    def compute_id(self) -> str:
        """The content hash that identifies this scenario."""
        body: dict[str, Any] = {
            "env_id": self.env_id,
            "task": self.task,
            "initial_state": self.initial_state,
            # Transcript items add their kind; state items hash as before, so existing ids stay stable.
            "checklist": [[c.description, c.validator, *(["transcript"] if c.kind == "transcript" else [])]
                          for c in self.checklist],
        }
        if self.turns:  # single-turn scenarios hash as before
            body["turns"] = [t.model_dump(mode="json") for t in self.turns]
        return "sc-" + canonical_hash(body)[:16]

    def with_id(self) -> Scenario:
        """Return a copy whose id is the content hash."""
        return self.model_copy(update={"id": self.compute_id()})

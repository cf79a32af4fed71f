"""On-disk records of the scenario pipeline under OUT/_work/<env>/ (one Pydantic model per file format)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from envscaler_mcp._json import State
from envscaler_mcp._usage import Usage
from envscaler_mcp.scenario.models import ChecklistItem, Scenario, ToolCall

STAGES = ("states", "task", "checklist", "validators", "solution", "answer")


class StateRecord(BaseModel):
    """OUT/_work/<env>/states/<item>.json: one initial state that fits the schema and loads into a server."""

    item_id: str = Field(description="Item id within the environment ('s001' …); one scenario per state.")
    state: State = Field(description="The initial state (keys are state attribute names).")
    repaired: bool = Field(False, description="True when the first answer was invalid and the repair was kept.")
    mends: list[str] = Field(default_factory=list, description="What code changed in the model's state before it "
                             "was kept (records naming missing records dropped, closed records reopened).")
    usage: Usage = Field(default_factory=Usage, description="Tokens and cost of making the state.")


class Draft(BaseModel):
    """A scenario being built: what each step produced so far."""

    title: str = Field("", description="Short title.")
    task: str = Field("", description="The task text.")
    checklist: list[ChecklistItem] = Field(default_factory=list, description="Items with validators once written.")
    solution: list[ToolCall] = Field(default_factory=list, description="The planned reference solution.")
    answer: str | None = Field(None, description="For a question (read-only item): the reference answer.")
    notes: list[str] = Field(default_factory=list, description="Repairs made (kept in provenance).")
    spared: tuple[str, str] | None = Field(
        None, description="Checklist items were dropped instead of the item (synth/scen/spare.py): the step and "
        "the failure that drops the item after all when the gate finds a change no remaining item checks.")


class ItemRecord(BaseModel):
    """OUT/_work/<env>/items/<item>.json: a scenario that passed the gate and the mutation test."""

    item_id: str = Field(description="Item id (the state it was built on).")
    scenario: Scenario = Field(description="The finished scenario, id = content hash.")
    usage: dict[str, Usage] = Field(default_factory=dict, description="Usage per stage (states excluded).")


class DroppedRecord(BaseModel):
    """OUT/_work/<env>/dropped.jsonl: an item given up, and why."""

    item_id: str = Field(description="Item id.")
    step: str = Field(description="Where it was dropped: states, task, checklist, validators, solution, gate, "
                      "dedupe.")
    reason: str = Field(description="The last failure seen (for the gate: every failing check).")
    scenario_id: str | None = Field(None, description="For 'dedupe': the id of the duplicate scenario.")
    usage: dict[str, Usage] = Field(default_factory=dict, description="Usage per stage spent before dropping.")

"""On-disk records of the SkelBuilder pipeline (one Pydantic model per file format under OUT/)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from envscaler_mcp._json import State
from envscaler_mcp._usage import Usage
from envscaler_mcp.skeleton.models import Entity, EnvSkeleton, QualityReport, ToolKind


class JudgeAnswer(BaseModel):
    """The stateful-task judge's answer."""

    analysis: str = Field("", description="The judge's reasoning.")
    stateful: bool = Field(description="True when the task needs a persistent, stateful domain system.")


class TopicAnswer(BaseModel):
    """The environment inferred for a task."""

    analysis: str = Field("", description="The model's reasoning.")
    summary: str = Field(description="Short environment label (EnvScaler's environment_summary).")
    introduction: str = Field(description="About three sentences describing the environment, independent of the task.")
    usefulness: int = Field(ge=1, le=10, description="Real-world breadth of use, 1-10.")
    modelability: int = Field(ge=1, le=10, description="How well it fits one Python class with state + methods, 1-10.")


class MineRecord(BaseModel):
    """OUT/mine/judged.jsonl: one finished task of the mine stage."""

    task_id: str = Field(description="Id of the corpus task.")
    task: str = Field(description="The user query.")
    source: str = Field(description="Corpus format the task came from.")
    status: Literal["topic", "rejected", "failed"] = Field(
        description="'topic': judged stateful and a topic inferred; 'rejected': judged not stateful; "
        "'failed': no usable answer after retries."
    )
    judge: JudgeAnswer | None = Field(None, description="The judge's answer.")
    topic: TopicAnswer | None = Field(None, description="The inferred environment.")
    reason: str = Field("", description="Why the task was rejected or failed.")
    usage: Usage = Field(default_factory=Usage, description="Tokens and cost spent on this task.")


class SelectedTopic(BaseModel):
    """OUT/mine/topics.jsonl: an environment topic kept after thresholds and de-duplication."""

    env_id: str = Field(description="Environment id (snake_case, unique in this run).")
    task_id: str = Field(description="The task the topic was inferred from.")
    task: str = Field(description="The example task.")
    summary: str = Field(description="Environment summary.")
    introduction: str = Field(description="Environment introduction.")
    usefulness: int = Field(description="Usefulness score.")
    modelability: int = Field(description="Modelability score.")
    merged: list[str] = Field(default_factory=list, description="task_ids of topics merged into this one.")


class Operation(BaseModel):
    """One planned operation (becomes one method and one tool)."""

    name: str = Field(description="Method name (snake_case).")
    description: str = Field(description="What the operation does.")
    kind: ToolKind = Field(description="'query' or 'state_change'.")


class StateDesign(BaseModel):
    """Entities, attributes and rules inferred for an environment."""

    analysis: str = Field("", description="The model's reasoning.")
    entities: list[Entity] = Field(description="Entities with their attributes.")
    rules: list[str] = Field(default_factory=list, description="Business rules and constraints.")


class ModelRecord(BaseModel):
    """OUT/model/envs/<env_id>.json: an environment whose code was written and passed the static checks."""

    env_id: str = Field(description="Environment id.")
    topic: SelectedTopic = Field(description="The topic it was built from.")
    design: StateDesign = Field(description="Entities and rules.")
    class_skeleton: str = Field(description="The class source with only __init__ (before methods were added).")
    operations: list[Operation] = Field(description="The planned operations.")
    skeleton: EnvSkeleton = Field(description="The assembled environment (default_state still empty).")
    usage: Usage = Field(default_factory=Usage, description="Tokens and cost of the model stage.")
    usage_by_seat: dict[str, Usage] = Field(default_factory=dict, description="Usage split by model seat.")


class DroppedRecord(BaseModel):
    """OUT/<stage>/dropped.jsonl: an environment given up in a stage, and why."""

    env_id: str = Field(description="Environment id.")
    stage: str = Field(description="Stage that dropped it.")
    step: str = Field(description="Step that failed (e.g. 'skel/method', 'init_state', 'quality').")
    reason: str = Field(description="What went wrong (the last error seen).")
    kind: str = Field("answer", description="Failure kind: 'answer' (never passed the parser and checks), "
                      "'context_overflow', 'refusal' or 'invalid_request' (the provider rejected the request).")
    usage: Usage = Field(default_factory=Usage, description="Tokens and cost spent before dropping.")


class CheckRecord(BaseModel):
    """OUT/check/envs/<env_id>.json: the dual-agent check of one environment."""

    env_id: str = Field(description="Environment id.")
    kept: bool = Field(description="Whether the environment met the quality threshold.")
    reason: str = Field("", description="Why it was dropped, if it was.")
    first_report: QualityReport | None = Field(None, description="Quality before the repair round.")
    final_report: QualityReport | None = Field(None, description="Quality after the repair round (or the first).")
    initial_state: State = Field(default_factory=dict, description="The generated initial state.")
    notes: list[str] = Field(default_factory=list, description="Repairs given up or reverted.")
    usage: Usage = Field(default_factory=Usage, description="Tokens and cost of the check stage.")
    usage_by_seat: dict[str, Usage] = Field(default_factory=dict, description="Usage split by model seat.")

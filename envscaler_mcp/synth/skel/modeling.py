"""Stage 2 (model): topic -> entities and rules -> one entity's attributes at a time -> class skeleton (written
from the design) -> operations -> one method each -> assembly.

The design steps ask for structured output (a JSON schema per step, see `structured`); a method is code,
asked one at a time and checked on its own against the class (AST, static checks) before the next.

Each environment is written to OUT/model/envs/<env_id>.json when it passes, or appended to
OUT/model/dropped.jsonl with the failing step and its last error.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from envscaler_mcp.errors import EnvironmentCodeError
from envscaler_mcp.providers.base import Provider
from envscaler_mcp.skeleton.build import EnvMeta, build_skeleton
from envscaler_mcp.skeleton.models import Entity, EnvSkeleton, Provenance
from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth._common_progress import item_scope
from envscaler_mcp.synth._common_store import ItemCallback, ItemDir, JsonlLedger, run_bounded
from envscaler_mcp.synth.llm import StepFailed, UsageMeter, ask, templates_digest
from envscaler_mcp.synth.skel import PROMPT_VERSION
from envscaler_mcp.synth.skel.codecheck import accept_method, accept_skeleton, static_problems
from envscaler_mcp.synth.skel.parsers import ClassAnswer, parse_method
from envscaler_mcp.synth.skel.records import DroppedRecord, ModelRecord, Operation, SelectedTopic, StateDesign
from envscaler_mcp.synth.skel.structured import (
    AttributesAnswer,
    EntitiesAnswer,
    OperationsPlan,
    accept_attributes,
    accept_entities,
    accept_operations,
    answer_schema,
    class_source,
)


@dataclass
class ModelOptions:
    """Settings of the model stage."""

    retries: int = 2
    concurrency: int = 4
    models: dict[str, str] = field(default_factory=dict)
    max_failed_methods: int = 0  # operations whose method may fail (left out) before the environment is dropped
    on_item: ItemCallback | None = None


def prompt_version() -> str:
    """PROMPT_VERSION plus a digest of the template files actually used."""
    return f"{PROMPT_VERSION}+{templates_digest('skel')}"


def helper_sources(source: str, class_name: str) -> str:
    """Source of the private helper methods of the class (shown to later method steps)."""
    tree = ast.parse(source)
    lines = source.splitlines()
    out = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for f in node.body:
                if isinstance(f, ast.FunctionDef) and f.name.startswith("_") and not f.name.startswith("__"):
                    assert f.end_lineno is not None
                    out.append("\n".join(lines[f.lineno - 1 : f.end_lineno]))
    return "\n\n".join(out)


async def build_environment(provider: Provider, topic: SelectedTopic, options: ModelOptions,
                            meter: UsageMeter) -> ModelRecord:
    """Run every model step for one topic. Raises StepFailed naming the step that gave up."""
    base_ctx = {"summary": topic.summary, "introduction": topic.introduction, "task": topic.task}
    named: EntitiesAnswer = await ask(provider, "skel/entities", base_ctx, accept_entities, meter=meter,
                                      retries=options.retries, schema=answer_schema(EntitiesAnswer))
    entities: list[Entity] = []
    for entity in named.entities:  # one small call per entity
        attributes = await ask(
            provider, "skel/attributes", {**base_ctx, "entity": entity, "entity_names": [e.name for e in named.entities]},
            accept_attributes, meter=meter, retries=options.retries, schema=answer_schema(AttributesAnswer))
        entities.append(Entity(name=entity.name, description=entity.description, attributes=attributes))
    design = StateDesign(entities=entities, rules=named.rules)
    skeleton_source = class_source(named.class_name, entities, named.rules)
    try:
        accept_skeleton(skeleton_source, named.class_name)
    except AnswerFormatError as exc:  # the design itself is unusable (e.g. an entity named like a builtin)
        raise StepFailed("skel/class", str(exc), 1) from exc
    cls = ClassAnswer(class_name=named.class_name, source=skeleton_source)
    operations: list[Operation] = await ask(
        provider, "skel/operations", {**base_ctx, "rules": design.rules, "class_source": cls.source},
        accept_operations, meter=meter, retries=options.retries, schema=answer_schema(OperationsPlan))
    source = cls.source
    notes: list[str] = []
    failed: list[Operation] = []
    names = [op.name for op in operations]
    writes: set[str] = set()  # planned as queries, but the accepted code writes: they are state changes
    for op in operations:
        base = source

        def accept(text: str, op: Operation = op, base: str = base) -> str:
            _, assembled, spec = accept_method(parse_method(text).code, op.name, base, cls.class_name)
            if op.kind == "query" and spec.kind == "state_change":
                writes.add(op.name)
            return assembled

        try:
            source = await ask(
                provider, "skel/method",
                {**base_ctx, "rules": design.rules, "class_source": cls.source,
                 "helpers": helper_sources(source, cls.class_name), "operation": op, "operation_names": names},
                accept, meter=meter, retries=options.retries)
        except StepFailed as exc:
            failed.append(op)
            if len(failed) > options.max_failed_methods:
                raise
            notes.append(f"{op.name}: left out, its method failed: {exc.reason[:300]}")
    operations = [op for op in operations if op not in failed]
    for i, op in enumerate(operations):  # (a planned state change whose code only reads is left to the check)
        if op.name in writes:
            notes.append(f"{op.name}: planned as a query, its code changes the state: kept as a state change")
            operations[i] = op.model_copy(update={"kind": "state_change"})
    for kind in ("query", "state_change"):
        if failed and not any(op.kind == kind for op in operations):
            raise StepFailed("skel/method", f"no {kind} operation is left after leaving out "
                             + ", ".join(op.name for op in failed), 1)

    problems = static_problems(source, cls.class_name)
    if problems:  # each method was clean on its own; this would be an interaction between them
        raise StepFailed("skel/assemble", "; ".join(problems[:5]), 1)
    meta = EnvMeta(id=topic.env_id, name=topic.summary, summary=topic.summary, introduction=topic.introduction,
                   class_name=cls.class_name, entities=design.entities, rules=design.rules)
    provenance = Provenance(
        source="synthesized", source_id=topic.task_id, source_task=topic.task, models=dict(options.models),
        prompt_version=prompt_version(), usage=meter.total,
        created_at=datetime.now(UTC).replace(microsecond=0).isoformat(),
        notes=[f"merged topics from tasks: {', '.join(topic.merged)}"] * bool(topic.merged) + notes,
    )
    try:
        skeleton: EnvSkeleton = build_skeleton(meta, source, {}, provenance, strict=False)
    except EnvironmentCodeError as exc:
        raise StepFailed("skel/assemble", str(exc), 1) from exc
    return ModelRecord(env_id=topic.env_id, topic=topic, design=design, class_skeleton=cls.source,
                       operations=operations, skeleton=skeleton, usage=meter.total,
                       usage_by_seat=meter.by_seat)


def model_todo(topics: list[SelectedTopic], out: Path) -> list[SelectedTopic]:
    """The topics not finished (written or dropped) in an earlier run."""
    done = ItemDir(out / "model" / "envs")
    dropped = JsonlLedger(out / "model" / "dropped.jsonl", "env_id")
    return [t for t in topics if not done.done(t.env_id) and t.env_id not in dropped]


async def run_model(topics: list[SelectedTopic], out: Path, provider: Provider, options: ModelOptions) -> None:
    """Run the model stage for every topic not finished (written or dropped) in an earlier run."""
    done = ItemDir(out / "model" / "envs")
    dropped = JsonlLedger(out / "model" / "dropped.jsonl", "env_id")

    async def work(topic: SelectedTopic) -> None:
        meter = UsageMeter()
        try:
            with item_scope(topic.env_id):
                record = await build_environment(provider, topic, options, meter)
        except StepFailed as exc:
            dropped.add(DroppedRecord(env_id=topic.env_id, stage="model", step=exc.step, reason=exc.reason,
                                      kind=exc.kind, usage=meter.total).model_dump(mode="json"))
            if options.on_item:
                options.on_item("model", topic.env_id, f"dropped at {exc.step}")
            return
        done.write(topic.env_id, record.model_dump(mode="json"))
        if options.on_item:
            options.on_item("model", topic.env_id, f"{len(record.skeleton.tools)} tools")

    await run_bounded(model_todo(topics, out), work, concurrency=options.concurrency)

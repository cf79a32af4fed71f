"""Stage 1 (mine): corpus -> cheap filters -> LLM judge -> LLM topic -> thresholds -> de-duplication.

Outputs under OUT/mine/: tasks.jsonl (after the cheap filters), filter_report.json, judged.jsonl (one
finished task per line, appended as each finishes), topics.jsonl and dedupe.json (the selection).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envscaler_mcp._io import atomic_write_json, write_jsonl_atomic
from envscaler_mcp.errors import UsageError
from envscaler_mcp.providers.base import Provider
from envscaler_mcp.synth._common_progress import item_scope
from envscaler_mcp.synth._common_store import ItemCallback, JsonlLedger, run_bounded, slugify
from envscaler_mcp.synth.llm import StepFailed, UsageMeter, ask
from envscaler_mcp.synth.skel.corpus import CorpusTask, collect_tasks
from envscaler_mcp.synth.skel.dedupe import Candidate, deduplicate
from envscaler_mcp.synth.skel.parsers import parse_judge, parse_topic
from envscaler_mcp.synth.skel.records import JudgeAnswer, MineRecord, SelectedTopic, TopicAnswer


@dataclass
class MineOptions:
    """Settings of the mine stage."""

    limit: int | None = None
    min_usefulness: int = 7
    min_modelability: int = 7
    similarity: float | None = None  # None: the backend's default threshold
    use_embeddings: bool = True
    retries: int = 2
    concurrency: int = 4
    on_item: ItemCallback | None = None
    on_start: Callable[[str, int], None] | None = None  # (stage, items to make) once they are known


async def judge_and_describe(provider: Provider, task: CorpusTask, retries: int) -> MineRecord:
    """Run the judge, then (for a stateful task) the topic inference. Parse failures become 'failed' records."""
    meter = UsageMeter()
    judge: JudgeAnswer | None = None
    try:
        judge = await ask(provider, "skel/judge", {"task": task.task}, parse_judge, meter=meter, retries=retries)
        if not judge.stateful:
            return MineRecord(task_id=task.task_id, task=task.task, source=task.source, status="rejected",
                              judge=judge, reason="judged not stateful", usage=meter.total)
        topic: TopicAnswer = await ask(provider, "skel/topic", {"task": task.task}, parse_topic,
                                       meter=meter, retries=retries)
    except StepFailed as exc:
        return MineRecord(task_id=task.task_id, task=task.task, source=task.source, status="failed",
                          judge=judge, reason=str(exc), usage=meter.total)
    return MineRecord(task_id=task.task_id, task=task.task, source=task.source, status="topic",
                      judge=judge, topic=topic, usage=meter.total)


def select_topics(records: list[MineRecord], options: MineOptions) -> tuple[list[SelectedTopic], dict[str, Any]]:
    """Apply the score thresholds and de-duplicate; returns (selected topics, selection report)."""
    order = {r.task_id: i for i, r in enumerate(records)}
    by_id = {r.task_id: r for r in records}
    scored = [r for r in records if r.status == "topic" and r.topic is not None]
    passing = [r for r in scored if r.topic is not None and r.topic.usefulness >= options.min_usefulness
               and r.topic.modelability >= options.min_modelability]
    candidates = [
        Candidate(key=r.task_id, summary=r.topic.summary, introduction=r.topic.introduction,
                  usefulness=r.topic.usefulness, modelability=r.topic.modelability, order=order[r.task_id])
        for r in passing if r.topic is not None
    ]
    result = deduplicate(candidates, threshold=options.similarity, use_embeddings=options.use_embeddings)
    used: set[str] = set()
    selected = []
    for key in sorted(result.kept, key=lambda k: order[k]):
        record = by_id[key]
        assert record.topic is not None
        base = slugify(record.topic.summary)
        env_id, n = base, 2
        while env_id in used:
            env_id, n = f"{base}_{n}", n + 1
        used.add(env_id)
        selected.append(SelectedTopic(
            env_id=env_id, task_id=key, task=record.task, summary=record.topic.summary,
            introduction=record.topic.introduction, usefulness=record.topic.usefulness,
            modelability=record.topic.modelability, merged=[m["key"] for m in result.merged.get(key, [])],
        ))
    report = {
        "judged": len(records),
        "rejected_by_judge": sum(r.status == "rejected" for r in records),
        "failed": sum(r.status == "failed" for r in records),
        "topics": len(scored),
        "below_threshold": len(scored) - len(passing),
        "selected": len(selected),
        "backend": result.backend,
        "threshold": result.threshold,
        "merged": result.merged,
    }
    return selected, report


async def run_mine(tasks_file: Path, out: Path, provider: Provider, options: MineOptions) -> list[SelectedTopic]:
    """Run the mine stage, skipping tasks already judged in an earlier run."""
    folder = out / "mine"
    tasks, stats = collect_tasks(tasks_file, limit=options.limit)
    if not tasks:  # before anything is written
        found = ", ".join(f"{k} {v}" for k, v in stats.items() if k != "kept") or "no records"
        raise UsageError(f"{tasks_file}: no usable task in the corpus ({found}); it needs records with a "
                         "user query (JSONL or a JSON list)")
    write_jsonl_atomic(folder / "tasks.jsonl", [t.model_dump() for t in tasks])
    atomic_write_json(folder / "filter_report.json", stats)
    ledger = JsonlLedger(folder / "judged.jsonl", "task_id")

    async def work(task: CorpusTask) -> None:
        with item_scope(task.task_id):
            record = await judge_and_describe(provider, task, options.retries)
        ledger.add(record.model_dump(mode="json"))
        if options.on_item:
            options.on_item("mine", task.task_id, record.status)

    todo = [t for t in tasks if t.task_id not in ledger]
    if options.on_start:
        options.on_start("mine", len(todo))
    await run_bounded(todo, work, concurrency=options.concurrency)
    records = [MineRecord.model_validate(ledger.records[t.task_id]) for t in tasks if t.task_id in ledger]
    selected, report = select_topics(records, options)
    write_jsonl_atomic(folder / "topics.jsonl", [s.model_dump() for s in selected])
    atomic_write_json(folder / "dedupe.json", report)
    return selected

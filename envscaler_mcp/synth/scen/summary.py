"""Totals of a `synth scenarios` run, read back from OUT/_work (so resumed runs count earlier work too)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pydantic import BaseModel, Field
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from envscaler_mcp._usage import Usage
from envscaler_mcp.synth._common_usage import YieldRow, cost_text, stage_usage_table, yield_table
from envscaler_mcp.synth.scen.records import STAGES, DroppedRecord, ItemRecord, StateRecord
from envscaler_mcp.synth.scen.store import EnvWork, MergeResult


class EnvTotals(BaseModel):
    """One environment's outcome and spend."""

    env_id: str
    states: int = Field(0, description="Initial states that passed stage 1.")
    kept: int = Field(0, description="Scenarios that passed the gate and were not duplicates.")
    added: int = Field(0, description="Scenarios this run added to OUT/<env>.jsonl.")
    in_file: int = Field(0, description="Scenarios in OUT/<env>.jsonl after the merge.")
    dropped: dict[str, int] = Field(default_factory=dict, description="Dropped items per step.")
    reasons: list[str] = Field(default_factory=list, description="'<item> <step>: <reason>' per dropped item.")
    usage: dict[str, Usage] = Field(default_factory=dict, description="Usage per stage.")


class ScenSummary(BaseModel):
    """OUT/_work/summary.json: totals per environment and per stage."""

    environments: list[EnvTotals] = Field(default_factory=list)
    stages: dict[str, Usage] = Field(default_factory=dict)
    yields: list[YieldRow] = Field(default_factory=list, description="The funnel over every environment: "
                                   "states -> task -> checklist -> validators -> solution -> gate -> kept.")


# Funnel rows and the drop steps each one counts (a read-only item has a question and an answer instead).
FUNNEL = (("states", ("states",)), ("task", ("task", "question")), ("checklist", ("checklist",)),
          ("validators", ("validators",)), ("solution", ("solution", "answer")), ("gate", ("gate",)),
          ("kept (not a duplicate)", ("dedupe",)))


def collect_yields(environments: list[EnvTotals]) -> list[YieldRow]:
    """The step funnel: each step's items are those that came through the one before it."""
    dropped = Counter[str]()
    for env in environments:
        dropped.update(env.dropped)
    rows: list[YieldRow] = []
    entered = sum(env.states for env in environments) + dropped.get("states", 0)
    known = {step for _, steps in FUNNEL for step in steps}
    for name, steps in FUNNEL:
        drops = {step: dropped[step] for step in steps if dropped.get(step)}
        if name == "gate":  # drop steps this table does not know (future ones) count at the gate
            drops.update({step: n for step, n in dropped.items() if step not in known})
        passed = entered - sum(drops.values())
        rows.append(YieldRow(step=name, entered=entered, passed=passed, drops=drops))
        entered = passed
    return rows


def _add(target: dict[str, Usage], usage: dict[str, Usage]) -> None:
    for stage, u in usage.items():
        target[stage] = target.get(stage, Usage()) + u


def env_totals(work: EnvWork, merge: MergeResult | None = None) -> EnvTotals:
    """Count one environment's records on disk."""
    totals = EnvTotals(env_id=work.env_id, usage={s: Usage() for s in STAGES})
    for raw in work.states.all():
        record = StateRecord.model_validate(raw)
        totals.states += 1
        _add(totals.usage, {"states": record.usage})
    items = {r.item_id: r for r in (ItemRecord.model_validate(x) for x in work.items.all())}
    for item in items.values():
        _add(totals.usage, item.usage)
    dropped = Counter[str]()
    for raw in work.dropped.records.values():
        drop = DroppedRecord.model_validate(raw)
        dropped[drop.step] += 1
        totals.reasons.append(f"{drop.item_id} {drop.step}: {drop.reason}")
        if drop.item_id not in items:  # a dedupe drop's usage is already counted with its item
            _add(totals.usage, drop.usage)
    totals.dropped = dict(sorted(dropped.items()))
    totals.kept = len(items) - dropped.get("dedupe", 0)
    if merge is not None:
        totals.added, totals.in_file = len(merge.added), merge.total
    return totals


def collect_summary(out: Path, env_ids: list[str], merges: dict[str, MergeResult] | None = None) -> ScenSummary:
    """Totals of every environment of the run; written to OUT/_work/summary.json."""
    from envscaler_mcp._io import atomic_write_json

    summary = ScenSummary(stages={s: Usage() for s in STAGES})
    for env_id in env_ids:
        totals = env_totals(EnvWork(out, env_id), (merges or {}).get(env_id))
        summary.environments.append(totals)
        _add(summary.stages, totals.usage)
    summary.yields = collect_yields(summary.environments)
    atomic_write_json(Path(out) / "_work" / "summary.json", summary.model_dump(mode="json"))
    return summary


def print_summary(summary: ScenSummary, console: Console | None = None, max_reasons: int = 5) -> None:
    """Print the per-environment and per-stage tables (tokens and cost) and the first drop reasons."""
    console = console or Console()
    table = Table(title="Scenarios per environment")
    for col in ("environment", "states", "kept", "added", "in file", "dropped", "calls", "tokens in",
                "tokens out", "cost"):
        table.add_column(col, justify="left" if col in ("environment", "dropped") else "right")
    for env in summary.environments:
        total = sum(env.usage.values(), Usage())
        dropped = ", ".join(f"{step} {n}" for step, n in env.dropped.items()) or "-"
        table.add_row(env.env_id, str(env.states), str(env.kept), str(env.added), str(env.in_file), dropped,
                      str(total.calls), str(total.input_tokens), str(total.output_tokens), cost_text(total))
    console.print(table)
    console.print(stage_usage_table(summary.stages))
    if summary.yields:
        console.print(yield_table(summary.yields, "Yield per step"))
    for env in summary.environments:
        for line in env.reasons[:max_reasons]:
            console.print(f"[dim]{env.env_id}[/] dropped {escape(line[:200])}", highlight=False)
        if len(env.reasons) > max_reasons:
            console.print(f"[dim]{env.env_id}[/] … {len(env.reasons) - max_reasons} more in "
                          f"_work/{env.env_id}/dropped.jsonl")

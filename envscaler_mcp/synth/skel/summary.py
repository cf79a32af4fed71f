"""Totals of a SkelBuilder run read back from OUT/ (so resumed runs count earlier work too), and the table."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from rich.console import Console
from rich.table import Table

from envscaler_mcp._io import iter_jsonl, read_json
from envscaler_mcp._usage import Usage
from envscaler_mcp.synth._common_store import ItemDir
from envscaler_mcp.synth._common_usage import YieldRow, cost_text, stage_usage_table, yield_table

STAGES = ("mine", "model", "check")


class EnvSummary(BaseModel):
    """One environment's outcome and spend."""

    env_id: str
    status: str = Field(description="'kept', 'below threshold', or 'dropped in <stage>/<step>'.")
    reason: str = ""
    score: float | None = None
    usage: dict[str, Usage] = Field(default_factory=dict, description="Usage per stage.")


class RunSummary(BaseModel):
    """OUT/summary.json: totals per stage and per environment."""

    stages: dict[str, Usage] = Field(default_factory=dict)
    environments: list[EnvSummary] = Field(default_factory=list)
    counts: dict[str, Any] = Field(default_factory=dict)
    yields: list[YieldRow] = Field(default_factory=list, description="The funnel: judged -> selected -> "
                                   "modelled -> kept, with the drops of each step by failing step and kind.")


def _drops(records: list[dict[str, Any]]) -> dict[str, int]:
    counts = Counter(f"{r.get('step')} ({r.get('kind', 'answer')})" for r in records)
    return dict(sorted(counts.items()))


def collect_yields(out: Path, counts: dict[str, Any]) -> list[YieldRow]:
    """The stage funnel of a run, read from its records."""
    judged = counts.get("judged", 0)
    rejected, failed = counts.get("rejected_by_judge", 0), counts.get("failed", 0)
    stateful, selected = judged - rejected - failed, counts.get("selected", 0)
    below = counts.get("below_threshold", 0)
    rows = [
        YieldRow(step="mine: judged stateful", entered=judged, passed=stateful,
                 drops={k: v for k, v in {"judge (not stateful)": rejected, "judge (no usable answer)": failed}.items()
                        if v}),
        YieldRow(step="mine: topic selected", entered=stateful, passed=selected,
                 drops={k: v for k, v in {"scores below threshold": below,
                                          "duplicate or no topic": stateful - selected - below}.items() if v > 0}),
    ]
    modelled = ItemDir(out / "model" / "envs").all()
    model_drops = _jsonl(out / "model" / "dropped.jsonl")
    rows.append(YieldRow(step="model: skeleton built", entered=len(modelled) + len(model_drops),
                         passed=len(modelled), drops=_drops(model_drops)))
    checked = ItemDir(out / "check" / "envs").all()
    check_drops = _jsonl(out / "check" / "dropped.jsonl")
    below_check = sum(not r.get("kept") for r in checked)
    drops = _drops(check_drops)
    if below_check:
        drops["quality below threshold"] = below_check
    rows.append(YieldRow(step="check: kept", entered=len(checked) + len(check_drops),
                         passed=len(checked) - below_check, drops=drops))
    return rows


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [r for _, r in iter_jsonl(path, skip_torn_tail=True)] if path.exists() else []


def collect_summary(out: Path) -> RunSummary:
    """Read every stage's records under `out` and total them."""
    summary = RunSummary(stages={s: Usage() for s in STAGES})
    mine_usage: dict[str, Usage] = {}
    for rec in _jsonl(out / "mine" / "judged.jsonl"):
        u = Usage.model_validate(rec.get("usage", {}))
        mine_usage[rec["task_id"]] = u
        summary.stages["mine"] += u
    envs: dict[str, EnvSummary] = {}
    for topic in _jsonl(out / "mine" / "topics.jsonl"):
        envs[topic["env_id"]] = EnvSummary(env_id=topic["env_id"], status="selected",
                                           usage={"mine": mine_usage.get(topic["task_id"], Usage())})
    for stage in ("model", "check"):
        for rec in ItemDir(out / stage / "envs").all():
            u = Usage.model_validate(rec.get("usage", {}))
            summary.stages[stage] += u
            env = envs.setdefault(rec["env_id"], EnvSummary(env_id=rec["env_id"], status="selected"))
            env.usage[stage] = u
            if stage == "model":
                env.status = "modelled"
            else:
                report = rec.get("final_report") or {}
                env.score = report.get("score")
                env.status = "kept" if rec.get("kept") else "below threshold"
                env.reason = rec.get("reason", "")
        for rec in _jsonl(out / stage / "dropped.jsonl"):
            u = Usage.model_validate(rec.get("usage", {}))
            summary.stages[stage] += u
            env = envs.setdefault(rec["env_id"], EnvSummary(env_id=rec["env_id"], status="selected"))
            env.usage[stage] = u
            env.status, env.reason = f"dropped in {stage} ({rec.get('step')})", rec.get("reason", "")
    summary.environments = sorted(envs.values(), key=lambda e: e.env_id)
    report_path = out / "mine" / "dedupe.json"
    if report_path.exists():
        report = read_json(report_path)
        summary.counts = {k: report[k] for k in ("judged", "rejected_by_judge", "failed", "topics",
                                                 "below_threshold", "selected") if k in report}
    summary.counts["kept"] = sum(e.status == "kept" for e in summary.environments)
    summary.yields = collect_yields(out, summary.counts)
    return summary


def print_summary(summary: RunSummary, console: Console | None = None) -> None:
    """Print the per-environment and per-stage usage tables."""
    console = console or Console()
    table = Table(title="SkelBuilder environments")
    for col in ("environment", "status", "score", "calls", "tokens in", "tokens out", "cost"):
        table.add_column(col, justify="right" if col not in ("environment", "status") else "left")
    for env in summary.environments:
        total = sum(env.usage.values(), Usage())
        table.add_row(env.env_id, env.status, "" if env.score is None else f"{env.score:.2f}", str(total.calls),
                      str(total.input_tokens), str(total.output_tokens), cost_text(total))
    console.print(table)
    console.print(stage_usage_table(summary.stages))
    if summary.yields:
        console.print(yield_table(summary.yields, "Yield per stage"))
    if summary.counts:
        console.print(", ".join(f"{k}: {v}" for k, v in summary.counts.items()))

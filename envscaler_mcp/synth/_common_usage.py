"""Usage and yield tables shared by the synthesis summaries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field
from rich.table import Table

from envscaler_mcp._usage import Usage


def cost_text(usage: Usage) -> str:
    """Cost for a table cell: '?' when any price was unknown."""
    return "?" if usage.cost_usd is None else f"${usage.cost_usd:.4f}"


def stage_usage_table(stages: Mapping[str, Usage]) -> Table:
    """Calls, tokens and cost per stage, with a total row."""
    table = Table(title="Usage per stage")
    for col in ("stage", "calls", "tokens in", "tokens out", "cost"):
        table.add_column(col, justify="left" if col == "stage" else "right")
    grand = Usage()
    for stage, usage in stages.items():
        grand += usage
        table.add_row(stage, str(usage.calls), str(usage.input_tokens), str(usage.output_tokens), cost_text(usage))
    table.add_row("total", str(grand.calls), str(grand.input_tokens), str(grand.output_tokens), cost_text(grand))
    return table


class YieldRow(BaseModel):
    """One step of a pipeline's funnel: how many items reached it, how many came through, and why the
    others were dropped ('<step> (<failure kind>)' -> count)."""

    step: str = Field(description="Pipeline step.")
    entered: int = Field(0, description="Items that reached this step.")
    passed: int = Field(0, description="Items that came through it.")
    drops: dict[str, int] = Field(default_factory=dict, description="Dropped items per failing step and kind.")


def yield_table(rows: Sequence[YieldRow], title: str) -> Table:
    """The funnel as a table: entered, passed, yield and the drops of each step."""
    table = Table(title=title)
    for col in ("step", "entered", "passed", "yield", "dropped (step, kind)"):
        table.add_column(col, justify="left" if col in ("step", "dropped (step, kind)") else "right")
    for row in rows:
        share = f"{row.passed / row.entered:.0%}" if row.entered else "-"
        drops = ", ".join(f"{name} {n}" for name, n in row.drops.items()) or "-"
        table.add_row(row.step, str(row.entered), str(row.passed), share, drops)
    return table

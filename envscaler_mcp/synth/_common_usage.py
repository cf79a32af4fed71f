"""Usage tables shared by the synthesis summaries."""

from __future__ import annotations

from collections.abc import Mapping

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

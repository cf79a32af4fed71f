"""`envscaler-mcp import bfcl`: BFCL's multi-turn categories as a data folder (docs/bfcl.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from envscaler_mcp.errors import UsageError


def import_bfcl_cmd(
    out: Annotated[Path, typer.Option("--out", help="Output data folder (use it with --home).")],
    source: Annotated[
        Path | None,
        typer.Option("--from", help="The bfcl-eval wheel, or a folder holding its bfcl_eval/ package "
                     "(`pip download --no-deps bfcl-eval==2026.3.23`)."),
    ] = None,
    category: Annotated[
        str, typer.Option("--category", help="Comma-separated: base, miss_func, miss_param, long_context; or all.")
    ] = "base",
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="At most N tasks of each category.")] = None,
) -> None:
    """Convert BFCL multi-turn tasks into environments (one per combination of classes) and scenarios.

    Exit 1 when no task could be imported; tasks that could not be converted get one line each."""
    from envscaler_mcp.interop.bfcl.importer import import_bfcl
    from envscaler_mcp.interop.bfcl.source import REQUIREMENTS, parse_categories

    categories = parse_categories(category)
    if source is None:
        raise UsageError("pass --from with the bfcl-eval wheel or its unzipped folder "
                         "(`pip download --no-deps bfcl-eval==2026.3.23` fetches the wheel)")
    if not source.exists():
        raise UsageError(f"{source}: no such file or folder")
    result = import_bfcl(source, out, categories, limit)
    for skeleton in result.skeletons:
        queries = sum(t.kind == "query" for t in skeleton.tools)
        typer.echo(f"{skeleton.provenance.source_id} -> {skeleton.id}: {len(skeleton.tools)} tools ({queries} query, "
                   f"{len(skeleton.tools) - queries} state_change), {result.counts[skeleton.id]} scenarios")
    for name, count in sorted(result.unsupported.items()):
        needs = " ".join(REQUIREMENTS[name])
        typer.echo(f"left out {count} task(s) involving {name}: it needs {needs}, not installed in this Python "
                   f"(pip install '{needs}'; docs/bfcl.md)")
    typer.echo(f"imported {len(result.skeletons)} environment(s) and {sum(result.counts.values())} scenario(s) "
               f"of {', '.join(categories)} into {out}")
    for line in result.widened:
        typer.echo(f"note: {line}")
    for line in result.left_out:
        typer.echo(f"left out: {line}")
    if result.left_out:
        typer.echo(f"{len(result.left_out)} task(s) could not be converted (above).")
    if not result.skeletons:
        typer.secho("error: no task could be imported", fg=typer.colors.RED, err=True)
        raise typer.Exit(1)

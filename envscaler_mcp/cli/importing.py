"""`import envscaler`: convert EnvScaler's files into a data folder (interop/stream_import.py) and, given
trajectories, attach the reference solutions that replay verifies (qa/solutions.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

Transport = Literal["pipe", "http", "stdio", "memory"]  # launch.Transport, without importing the MCP SDK to run `import`

import_app = typer.Typer(help="Import environments and scenarios from other formats.", no_args_is_help=True)


@import_app.command("envscaler")
def import_envscaler_cmd(
    envs: Annotated[
        Path, typer.Option("--envs", help="EnvScaler env metadata JSON (object keyed by env_id, or list).")
    ],
    scenarios: Annotated[
        Path | None,
        typer.Option("--scenarios", help="EnvScaler scenario metadata JSON (a list of task items)."),
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="Output data folder.")] = Path("."),
    skip_checks: Annotated[
        bool,
        typer.Option(
            "--skip-checks", help="Import environments that fail the static checks (problems become notes)."
        ),
    ] = False,
    trajectories: Annotated[
        Path | None,
        typer.Option("--trajectories", help="EnvScaler trajectories (SFT items or rollout records, a JSON list "
                     "or JSONL): each matching scenario gets the tool calls as its reference solution once a "
                     "replay reproduces them."),
    ] = None,
    transport: Annotated[Transport, typer.Option(help="How to run the servers that replay trajectories.")] = "http",
) -> None:
    """Convert EnvScaler metadata into <out>/environments/<id>/skeleton.json and <out>/scenarios/<id>.jsonl.

    The scenario file is read one scenario at a time, so memory holds one scenario, not the file."""
    from envscaler_mcp.errors import InputFileError
    from envscaler_mcp.interop.stream_import import stream_import

    if trajectories is not None and not trajectories.is_file():  # found out before anything is written
        raise InputFileError(trajectories, "file not found" if not trajectories.exists() else "not a file")
    result = stream_import(envs, scenarios, out, skip_checks=skip_checks)
    for skeleton in result.skeletons:
        queries = sum(t.kind == "query" for t in skeleton.tools)
        typer.echo(
            f"{skeleton.provenance.source_id} -> {skeleton.id}: {len(skeleton.tools)} tools "
            f"({queries} query, {len(skeleton.tools) - queries} state_change), "
            f"{result.counts.get(skeleton.id, 0)} scenarios"
        )
    if result.duplicates:
        typer.echo(f"{result.duplicates} scenario(s) with identical content were imported once.")
    typer.echo(
        f"imported {len(result.skeletons)} environment(s) and "
        f"{sum(result.counts.values())} scenario(s) into {out}"
    )
    errors = list(result.errors)
    if trajectories is not None:
        errors += _attach(out, [s.id for s in result.skeletons if s.id in result.counts], trajectories, transport)
    if errors:
        for err in errors:
            typer.secho(f"error: {err}", fg=typer.colors.RED, err=True)
        typer.secho(f"{len(errors)} item(s) were not imported.", fg=typer.colors.RED, err=True)
        raise typer.Exit(1)


def _attach(out: Path, env_ids: list[str], trajectories: Path, transport: Transport) -> list[str]:
    """Attach verified solutions; print what was attached and what was not; return the lines that are errors
    (items of the trajectory file that are not trajectories)."""
    from envscaler_mcp import _interrupt
    from envscaler_mcp.qa.solutions import attach_solutions

    report = _interrupt.run(lambda: attach_solutions(out, env_ids, trajectories, transport=transport))
    typer.echo(f"reference solutions from {trajectories}: {len(report.attached)} attached (replay reproduced "
               f"every call), {len(report.unverified)} not verified, {report.unmatched} trajectory(ies) of no "
               "imported scenario")
    for line in report.unverified:
        typer.echo(f"  not attached: {line}")
    return report.unusable


def register(app: typer.Typer) -> None:
    """Add the `import` group to the main app."""
    from envscaler_mcp.interop.bfcl.cli import import_bfcl_cmd

    import_app.command("bfcl")(import_bfcl_cmd)
    app.add_typer(import_app, name="import")

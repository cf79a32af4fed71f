"""`import envscaler`: convert EnvScaler's files into a data folder (interop/stream_import.py) and, given
trajectories, attach the reference solutions that replay verifies (qa/solutions.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from envscaler_mcp._choices import Transport
from envscaler_mcp._command import typed_command
from envscaler_mcp.cli.import_options import ImportOptions

if TYPE_CHECKING:
    from envscaler_mcp.qa.solutions import SolutionReport

import_app = typer.Typer(help="Import environments and scenarios from other formats.", no_args_is_help=True)


def import_envscaler_cmd(options: ImportOptions) -> None:
    """Convert EnvScaler metadata into <out>/environments/<id>/skeleton.json and <out>/scenarios/<id>.jsonl.

    The scenario file is read one scenario at a time, so memory holds one scenario, not the file."""
    from envscaler_mcp.catalog.findings import findings_lines
    from envscaler_mcp.interop.skips import summary_lines
    from envscaler_mcp.interop.stream_import import stream_import

    options.check()
    out, trajectories = options.out, options.trajectories
    result = stream_import(options.envs, options.scenarios, out, skip_checks=options.skip_checks,
                           convention=options.success_convention, contained=_os_layers_on())
    for env in result.envs:
        typer.echo(
            f"{env.source_id} -> {env.id}: {env.queries + env.state_changes} tools "
            f"({env.queries} query, {env.state_changes} state_change), "
            f"{result.counts.get(env.id, 0)} scenarios"
        )
        for line in findings_lines(env.provenance, verbose=options.verbose):
            typer.echo(line)
    if result.duplicates:
        typer.echo(f"{result.duplicates} scenario(s) with identical content were imported once.")
    typer.echo(
        f"imported {len(result.envs)} environment(s) and "
        f"{sum(result.counts.values())} scenario(s) into {out}"
    )
    skipped = list(result.skipped)
    if trajectories is not None:
        report = _attach(out, [e.id for e in result.envs if e.id in result.counts], trajectories, options.transport,
                         options.coerce_arguments)
        skipped += report.skipped
        for line in report.unusable:
            typer.secho(f"skipped: {line}", fg=typer.colors.YELLOW, err=True)
    for line in result.errors:
        typer.secho(f"skipped: {line}", fg=typer.colors.YELLOW, err=True)
    for line in summary_lines(skipped) or ["skipped 0 item(s)"]:
        typer.echo(line)
    if not result.envs:  # one bad item never fails the import; nothing usable at all does
        typer.secho("error: nothing usable was imported (no environment)", fg=typer.colors.RED, err=True)
        raise typer.Exit(1)


import_app.command("envscaler")(typed_command(ImportOptions, import_envscaler_cmd))


def _os_layers_on() -> bool:
    """Do the OS layers contain a server here? Say how the static checks treat third-party code either way."""
    from envscaler_mcp.isolation.probe import server_layers

    layers = server_layers()
    if layers.level == "full":
        typer.echo("static checks: the OS layers are on, so problems they contain (files, network, programs, "
                   "import-time work, dynamic attribute names) are warnings; the rest refuse an environment")
        return True
    typer.echo(f"static checks: the OS layers are not all in force here ({layers.level}: "
               f"{', '.join(layers.refused)}), so every problem refuses an environment")
    return False


def _attach(out: Path, env_ids: list[str], trajectories: Path, transport: Transport, coerce: bool
            ) -> SolutionReport:
    """Attach verified solutions; print what was attached and what was not."""
    from envscaler_mcp import _interrupt
    from envscaler_mcp.qa.solutions import attach_solutions

    report = _interrupt.run(lambda: attach_solutions(out, env_ids, trajectories, transport=transport,
                                                     coerce=coerce))
    typer.echo(f"reference solutions from {trajectories}: {len(report.attached)} attached (replay reproduced "
               f"every call), {len(report.unverified)} not verified, {report.unmatched} trajectory(ies) of no "
               "imported scenario")
    for line in report.unverified:
        typer.echo(f"  not attached: {line}")
    for line in report.coerced:
        typer.echo(f"  converted: {line}")
    return report


def register(app: typer.Typer) -> None:
    """Add the `import` group to the main app."""
    from envscaler_mcp.interop.bfcl.cli import import_bfcl_cmd

    import_app.command("bfcl")(import_bfcl_cmd)
    app.add_typer(import_app, name="import")

"""CLI commands of the interop stage: `import envscaler` and `export envscaler` (EnvScaler's metadata files)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from envscaler_mcp.catalog.options import HomeOption
from envscaler_mcp.errors import UsageError

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
) -> None:
    """Convert EnvScaler metadata into <out>/environments/<id>/skeleton.json and <out>/scenarios/<id>.jsonl.

    The scenario file is read one scenario at a time, so memory holds one scenario, not the file."""
    from envscaler_mcp.interop.stream_import import stream_import

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
    if result.errors:
        for err in result.errors:
            typer.secho(f"error: {err}", fg=typer.colors.RED, err=True)
        typer.secho(f"{len(result.errors)} item(s) were not imported.", fg=typer.colors.RED, err=True)
        raise typer.Exit(1)


def export_envscaler_cmd(
    envs: Annotated[
        list[str] | None,
        typer.Argument(help="Environment ids or skeleton paths (default: every one in --home)."),
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="Output folder.")] = Path("."),
    home: HomeOption = None,
) -> None:
    """Write env_metadata.json and scenario_metadata.json in EnvScaler's formats."""
    from envscaler_mcp._io import atomic_write_json
    from envscaler_mcp.catalog.paths import environments_dir, scenarios_dir
    from envscaler_mcp.catalog.store import get_skeleton, list_env_ids, scenarios_of
    from envscaler_mcp.interop.to_envscaler import export_envscaler

    env_root = home / "environments" if home else environments_dir()
    scen_root = home / "scenarios" if home else scenarios_dir()
    ids = envs or list_env_ids(env_root)
    if not ids:
        raise UsageError(f"no environments to export in {env_root}; pass ids or --home.")
    items = []
    for env in ids:
        skeleton = get_skeleton(env, env_root)
        items.append((skeleton, scenarios_of(env, skeleton.id, scen_root)))
    env_items, scenarios = export_envscaler(items)
    atomic_write_json(out / "env_metadata.json", env_items)
    atomic_write_json(out / "scenario_metadata.json", scenarios)
    typer.echo(
        f"wrote {len(env_items)} environment(s) to {out / 'env_metadata.json'} and "
        f"{len(scenarios)} scenario(s) to {out / 'scenario_metadata.json'}"
    )


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the main app."""
    app.add_typer(import_app, name="import")


def register_export(export_app: typer.Typer) -> None:
    """Add `export envscaler` to the `export` group."""
    export_app.command("envscaler")(export_envscaler_cmd)

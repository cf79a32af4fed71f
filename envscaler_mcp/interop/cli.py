"""CLI command of the interop stage: `export envscaler` (EnvScaler's metadata files). `import envscaler`, which
also verifies solutions by replay, is in cli/importing.py."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from envscaler_mcp.catalog.options import HomeOption
from envscaler_mcp.errors import UsageError


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


def register_export(export_app: typer.Typer) -> None:
    """Add `export envscaler` to the `export` group."""
    export_app.command("envscaler")(export_envscaler_cmd)

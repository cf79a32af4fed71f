"""CLI commands of the render stage: `envscaler-mcp render` and `envscaler-mcp cache` (servers rendered on
demand)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Protocol

import typer

from envscaler_mcp.catalog.options import HomeOption
from envscaler_mcp.errors import UsageError


class RemoteRender(Protocol):
    """Where `render --ray` renders (adapters/ray_render.py RayRender, wired by cli/render.py)."""

    def connect(self) -> None: ...

    def run(self, envs: list[str], root: Path, report: Callable[[str, str], None]) -> None:
        """Render each environment into root/<its folder>; `report(folder, counts)` as each is in place."""


RemoteFactory = Callable[[str, int | None], RemoteRender]  # (--ray address, --ray-workers) -> the renderer
_remote_factory: list[RemoteFactory] = []  # set by register(app, remote=...)


def render_command(
    envs: Annotated[list[str] | None, typer.Argument(help="Environment ids (bundled) or skeleton.json paths.")
                    ] = None,
    all_envs: Annotated[bool, typer.Option("--all", help="Render every bundled environment.")] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Output folder (default: generated_servers/).")] = None,
    check: Annotated[bool, typer.Option("--check", help="Only check that the servers in the output folder are "
                                        "current; exit 1 when one is not.")] = False,
    ray: Annotated[str | None, typer.Option("--ray", metavar="auto|local|ADDR", help="Render on Ray workers: 'auto' "
                                            "joins the running cluster, 'local' starts a private one, or a head's "
                                            "address (docs/ray.md).")] = None,
    ray_workers: Annotated[int | None, typer.Option("--ray-workers", min=1,
                                                    help="Ray workers (default: the cluster's CPUs).")] = None,
    home: HomeOption = None,
) -> None:
    """Render environments into standalone MCP servers (deterministic; one folder per environment)."""
    from envscaler_mcp.catalog.paths import data_root, generated_servers_dir
    from envscaler_mcp.catalog.store import (
        StoredScenarios,
        list_env_ids,
        load_skeleton,
        scenarios_path,
        skeleton_path,
    )
    from envscaler_mcp.render.engine import fingerprint, is_current, render_server
    from envscaler_mcp.render.naming import safe_env_id

    ids = list(envs or [])
    if all_envs:
        ids += [e for e in list_env_ids() if e not in ids]
    if not ids:
        raise UsageError("name at least one environment, or pass --all (see `envscaler-mcp list`)")
    root = out or generated_servers_dir()
    if out is None and not root.resolve().is_relative_to(data_root()):
        raise UsageError(f"{root} leads out of the data home (to {root.resolve()}); rendering there would replace "
                         "folders outside it. Remove the link, or pass --out")
    if ray_workers is not None and ray is None:
        raise UsageError("--ray-workers needs --ray")
    if ray is not None and (check or not _remote_factory):
        raise UsageError("--check reads the servers on this machine: drop --ray" if check
                         else "--ray is not available here")
    remote = _remote_factory[0](ray, ray_workers) if ray is not None else None
    if remote is not None:
        remote.connect()
    stale, on_workers = [], []
    paths = [(env, skeleton_path(env)) for env in ids]  # every name checked before anything is written
    for env, path in paths:  # each skeleton read when its turn comes: 1,000 held at once took 0.7 GB
        skeleton = load_skeleton(path)
        scenarios = StoredScenarios(scenarios_path(env, skeleton.id))  # each read from its line when reached
        target = root / safe_env_id(skeleton.id)
        expected = fingerprint(skeleton, scenarios)  # one pass over the scenarios, for the check and the manifest
        if check:
            ok = is_current(target, skeleton, scenarios, expected=expected)
            typer.echo(f"{'current' if ok else 'STALE  '} {target}")
            if not ok:
                stale.append(skeleton.id)
            continue
        if is_current(target, skeleton, scenarios, expected=expected):
            typer.echo(f"up to date  {target}")
            continue
        if target.is_symlink():  # replace the link itself, never the folder it points to
            target.unlink()
        if remote is not None:
            on_workers.append(env)
            continue
        render_server(skeleton, scenarios, target, expected=expected)
        typer.echo(f"rendered    {target}  ({len(skeleton.tools)} tools, {len(scenarios)} scenarios)")
    if remote is not None and on_workers:
        remote.run(on_workers, root, lambda folder, counts: typer.echo(f"rendered    {root / folder}  ({counts})"))
    if stale:
        typer.secho(f"{len(stale)} server(s) are not current: run `envscaler-mcp render {' '.join(stale)}"
                    + (f" --out {out}" if out is not None else "") + "`",
                    fg=typer.colors.RED, err=True)
        raise typer.Exit(1)


cache_app = typer.Typer(help="Show or clean the cache of servers rendered on demand (eval, serve).",
                        no_args_is_help=True)


@cache_app.command("list")
def cache_list_command() -> None:
    """List the cached servers, least recently used first, with their sizes and the cache's cap."""
    from envscaler_mcp.render.cache import cache_root, cached_servers, max_cache_bytes

    servers = cached_servers()
    for cached in servers:
        used = time.strftime("%Y-%m-%d %H:%M", time.localtime(cached.used))
        typer.echo(f"{cached.size / 1e6:8.1f} MB  {used}  {cached.path.name}")
    total = sum(c.size for c in servers)
    typer.echo(f"{len(servers)} server(s), {total / 1e6:.1f} MB in {cache_root()} "
               f"(cap {max_cache_bytes() / 1e6:.0f} MB, ENVSCALER_MCP_CACHE_MAX_MB)")


@cache_app.command("clean")
def cache_clean_command(
    max_mb: Annotated[float, typer.Option("--max-mb", min=0.0, help="Keep at most this many MB (the most "
                                          "recently used servers).")] = 0.0,
    force: Annotated[bool, typer.Option("--force", help="Also remove servers used in the last 10 minutes "
                                        "(a running eval or serve may still need them).")] = False,
) -> None:
    """Remove cached servers, least recently used first, down to --max-mb (default: all of them)."""
    from envscaler_mcp.render.cache import IN_USE_S, cache_root, prune_cache

    pruned = prune_cache(int(max_mb * 1_000_000), in_use_s=0.0 if force else IN_USE_S)
    left = sum(c.size for c in pruned.kept)
    typer.echo(f"removed {len(pruned.removed)} server(s) ({pruned.freed / 1e6:.1f} MB) from {cache_root()}; "
               f"{len(pruned.kept)} left ({left / 1e6:.1f} MB)")
    if left > max_mb * 1_000_000 and not force:
        typer.echo("some were used in the last 10 minutes and were kept (--force removes them too)")


def register(app: typer.Typer, remote: RemoteFactory | None = None) -> None:
    """Add this stage's commands to the main app (`remote`: the renderer of --ray, from a layer above)."""
    if remote is not None and not _remote_factory:
        _remote_factory.append(remote)
    app.command("render")(render_command)
    app.add_typer(cache_app, name="cache")

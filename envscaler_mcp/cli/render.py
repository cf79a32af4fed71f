"""`render`: the render stage's command, with `--ray` wired to adapters/ray_render.py (Ray is imported only
when a run asks for it: `ray` is an optional extra)."""

from __future__ import annotations

import typer

from envscaler_mcp.render import cli as render_cli


def _ray_render(address: str, workers: int | None) -> render_cli.RemoteRender:
    from envscaler_mcp.adapters.ray_render import RayRender

    return RayRender(address, workers)


def register(app: typer.Typer) -> None:
    """Add `render` (and `cache`) to the main app."""
    render_cli.register(app, remote=_ray_render)

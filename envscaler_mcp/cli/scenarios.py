"""`scenarios check`: the qa stage's command, with `--ray` wired to adapters/ray_gate.py (Ray is imported only
when a run asks for it: `ray` is an optional extra)."""

from __future__ import annotations

import typer

from envscaler_mcp.qa import cli as qa_cli


def _ray_gate(address: str, workers: int | None) -> qa_cli.RemoteGate:
    from envscaler_mcp.adapters.ray_gate import RayGate

    return RayGate(address, workers)


def register(app: typer.Typer) -> None:
    """Add `scenarios` (check) to the main app."""
    qa_cli.register(app, remote=_ray_gate)

"""`scenarios check`: the qa stage's command, with `--ray` wired to adapters/ray_gate.py (Ray is imported only
when a run asks for it: `ray` is an optional extra) and `--workers` to adapters/local_run.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from envscaler_mcp.qa import cli as qa_cli
from envscaler_mcp.qa.batch import GateSettings, Item


def _ray_gate(address: str, workers: int | None) -> qa_cli.RemoteGate:
    from envscaler_mcp.adapters.ray_gate import RayGate

    return RayGate(address, workers)


def _local_gate(workers: str, items: Callable[[], list[tuple[Any, Item]]], settings: GateSettings
                ) -> qa_cli.RemoteGate | None:
    """Worker processes for a gate, or None for one process; the scenarios' headers are listed (all at once, for
    the driver) only when this machine and `--workers` allow more than one worker."""
    from envscaler_mcp.adapters.local_run import LocalGate, gate_workers, most_gate_workers

    if most_gate_workers(workers, settings) <= 1:
        return None
    count = gate_workers(workers, items(), settings)
    return LocalGate(count) if count > 1 else None


def register(app: typer.Typer) -> None:
    """Add `scenarios` (check) to the main app."""
    qa_cli.register(app, remote=_ray_gate, local=_local_gate)

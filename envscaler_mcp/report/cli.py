"""CLI commands of the report stage: `report` (the `export` command is registered by interop)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from envscaler_mcp.report.html import load_run, write_report
from envscaler_mcp.report.summary import summary_table


def report_command(
    run_dir: Annotated[Path, typer.Argument(help="Run folder written by `envscaler-mcp eval`.")],
    out: Annotated[
        Path | None, typer.Option("--out", help="HTML file (default RUN_DIR/report.html).")
    ] = None,
) -> None:
    """Print a run's summary table and write its self-contained HTML report."""
    _, _, _, summary = load_run(run_dir)
    console = Console()
    console.print(summary_table(summary))
    console.print(f"report: {write_report(run_dir, out)}")


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the main app."""
    app.command("report")(report_command)

"""CLI commands of the report stage: `report` and `export run` (a run's trajectories as training data)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from envscaler_mcp.errors import UsageError
from envscaler_mcp.report.export import (
    ChecklistFilter,
    ExportFormat,
    ObservationFilter,
    StateCheckFilter,
    export_run,
)
from envscaler_mcp.report.html import load_run, write_report
from envscaler_mcp.report.table import summary_notes, summary_table


def report_command(
    run_dir: Annotated[Path, typer.Argument(help="Run folder written by `envscaler-mcp eval`.")],
    out: Annotated[
        Path | None, typer.Option("--out", help="HTML file (default RUN_DIR/report.html).")
    ] = None,
) -> None:
    """Print a run's summary table and write its self-contained HTML report."""
    run = load_run(run_dir)
    console = Console()
    console.print(summary_table(run.summary, console.width))
    for note in summary_notes(run.summary, run_dir):
        console.print(note, highlight=False)
    console.print(f"report: {write_report(run_dir, out, run)}")


def export_run_command(
    run_dir: Annotated[Path, typer.Argument(help="Run folder written by `envscaler-mcp eval`.")],
    fmt: Annotated[ExportFormat, typer.Option("--format", help="Trajectory format.")],
    min_score: Annotated[
        float | None,
        typer.Option("--min-score", min=0.0, max=1.0, help="Only episodes with at least this checklist score (0-1)."),
    ] = None,
    checklist: Annotated[
        ChecklistFilter, typer.Option("--checklist", help="pass: only episodes whose every checklist item passed.")
    ] = "any",
    state_check: Annotated[
        StateCheckFilter,
        typer.Option(
            "--state-check",
            help="pass: only episodes whose final state passed the state check; not-fail: also those without one.",
        ),
    ] = "any",
    observation: Annotated[
        ObservationFilter,
        typer.Option(
            "--observation",
            help="pass: only episodes whose calls returned what the reference solution's read-only calls did; "
            "not-fail: also those the observation check did not apply to.",
        ),
    ] = "any",
    out: Annotated[
        Path | None, typer.Option("--out", help="Output file (default RUN_DIR/export-<format>.jsonl).")
    ] = None,
    keep_reasoning: Annotated[
        bool,
        typer.Option("--keep-reasoning", help="Keep the models' reasoning (openai: reasoning_content, which "
                     "OpenAI's chat fine-tuning format does not define; sharegpt: a <think> block)."),
    ] = False,
) -> None:
    """Export a run's trajectories for fine-tuning (OpenAI chat or ShareGPT JSONL)."""
    if not run_dir.is_dir():
        raise UsageError(f"'{run_dir}' is not a run directory; pass the folder `envscaler-mcp eval` wrote.")
    done = export_run(run_dir, fmt, min_score, out, checklist=checklist, state_check=state_check,
                      observation=observation, keep_reasoning=keep_reasoning)
    typer.echo(f"wrote {done.records} of {done.episodes} episode(s) to {done.path}")


def register(app: typer.Typer) -> None:
    """Add this stage's commands to the main app."""
    app.command("report")(report_command)


def register_export(export_app: typer.Typer) -> None:
    """Add `export run` to the `export` group."""
    export_app.command("run")(export_run_command)

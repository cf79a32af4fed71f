"""The `eval` command: the harness runs the episodes into a run folder, then the report stage summarizes
it (summary.json, the table) and writes the HTML report. It sits above both, so neither imports the other."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from envscaler_mcp._command import typed_command
from envscaler_mcp._io import check_writable_folder
from envscaler_mcp.cli.eval_options import EvalOptions
from envscaler_mcp.errors import EnvScalerError

if TYPE_CHECKING:
    from rich.console import Console

    from envscaler_mcp.harness.config import EnvPlan, RunConfig
    from envscaler_mcp.harness.run import RemoteEpisodes
    from envscaler_mcp.report.live import LiveReport


def eval_command(options: EvalOptions) -> None:
    """Evaluate an agent on environments' scenarios; results, summary and HTML report go to the run folder."""
    run_and_report(options)


def run_and_report(options: EvalOptions) -> None:
    """Run the episodes into the run folder, then summarize it (the table, summary.json) and write the HTML
    report; an interrupted or failed run keeps the summary of what finished."""
    from rich.console import Console

    from envscaler_mcp.harness.run import new_run_id
    from envscaler_mcp.report.html import finish_and_load, write_report
    from envscaler_mcp.report.live import LiveReport
    from envscaler_mcp.report.summary import write_summary
    from envscaler_mcp.report.table import summary_notes, summary_table

    config = options.run_config()
    run_path = options.out or Path("runs") / new_run_id()
    check_writable_folder(run_path, what="the run folder")
    config, plans, remote = _runner(options, config)
    console = Console()
    with LiveReport(run_path, config.agent) as live:
        _run(options, config, run_path, plans, remote, live, console)
        # The page's summary, rows and sections were made as the run went; a resumed run reads results.jsonl.
        finished = live.finish(run_path)
        if finished is not None:
            write_summary(run_path, finished.summary)
        else:
            finished = finish_and_load(run_path)  # one pass over results.jsonl for the summary and the index
        summary = finished.summary
        console.print(summary_table(summary, console.width))
        for note in summary_notes(summary, run_path):
            console.print(note, highlight=False)
        overall = summary.overall
        report = write_report(run_path, run=finished)
        del finished
    console.print(f"results: {run_path / 'results.jsonl'}\nreport:  {report}")
    if (overall.infra_share or 0) > options.max_infra:
        console.print(
            f"[red]infrastructure errors in {100 * (overall.infra_share or 0):.1f}% of the episodes exceed "
            f"--max-infra {100 * options.max_infra:g}%[/]: these scores do not cover the run."
        )
        raise typer.Exit(3)


def _run(options: EvalOptions, config: RunConfig, run_path: Path, plans: list[EnvPlan] | None,
         remote: RemoteEpisodes | None, live: LiveReport, console: Console) -> None:
    """The episodes into the run folder, each record handed to `live` as it is appended; an interrupted or
    failed run keeps the summary of what finished."""
    from rich.console import Console

    from envscaler_mcp import _interrupt
    from envscaler_mcp.harness.run import run_eval
    from envscaler_mcp.harness.rundir import RunDir
    from envscaler_mcp.report.summary import finish_run

    try:
        _interrupt.run(
            lambda: run_eval(config, run_path, resume=options.resume, retry_infra=options.retry_infra,
                             plans=plans, console=Console(stderr=True), remote=remote, on_result=live.add)
        )
    except KeyboardInterrupt:
        if RunDir(run_path).manifest_path.exists():
            summary = finish_run(run_path)
            console.print(
                f"[yellow]interrupted[/]: {summary.overall.episodes} of {summary.planned} episodes are "
                f"kept in {run_path}. Continue with the same command plus --resume --out {run_path}"
            )
        raise typer.Exit(130) from None
    except EnvScalerError:  # the run stopped (a usage error, a harness bug): summarize what finished
        if RunDir(run_path).manifest_path.exists():
            finish_run(run_path)
        raise


def register(app: typer.Typer) -> None:
    """Add the `eval` command to the main app."""
    app.command("eval")(typed_command(EvalOptions, eval_command))


def _runner(options: EvalOptions, config: RunConfig) -> tuple[RunConfig, list[EnvPlan], RemoteEpisodes | None]:
    """The run's plan and where its episodes run: Ray (--ray), local worker processes (--workers, decided on the
    plan for auto: adapters/local_run.py), or this process (None)."""
    from envscaler_mcp.adapters.local_run import LocalEpisodes, eval_workers
    from envscaler_mcp.harness.config import build_plan

    plans = build_plan(config)
    if options.ray:
        return config, plans, _ray_episodes()
    workers = eval_workers(options.workers, config, plans)
    config = config.model_copy(update={"workers": workers})
    return config, plans, LocalEpisodes(workers) if workers > 1 else None


def _ray_episodes() -> RemoteEpisodes:
    """The Ray runner of `--ray` (imported only then: `ray` is an optional extra)."""
    from envscaler_mcp.adapters.ray_run import RayEpisodes

    return RayEpisodes()

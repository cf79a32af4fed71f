"""`envscaler-mcp synth scenarios`: generate gated scenario sets for environments."""

from __future__ import annotations

import importlib
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from envscaler_mcp import _interrupt
from envscaler_mcp._command import typed_command
from envscaler_mcp._io import check_writable_folder
from envscaler_mcp.synth._common_progress import ReportingProvider, RunLog
from envscaler_mcp.synth._common_report import existing, fail_empty, read_drops, resume_command
from envscaler_mcp.synth.scen.cli_options import ScenariosOptions

if TYPE_CHECKING:
    from envscaler_mcp.synth.scen.pipeline import Providers


def make_providers(model: str, solver_model: str | None, cache_dir: Path | None = None) -> Providers:
    """Generator and solver from their specs (on the driver, and again on each Ray worker)."""
    get_provider = importlib.import_module("envscaler_mcp.providers").get_provider  # the provider registry
    return (get_provider(model, cache_dir=cache_dir),
            get_provider(solver_model, cache_dir=cache_dir) if solver_model else None)


def scenarios(options: ScenariosOptions) -> None:
    """Generate scenarios (state, task, checklist, validators, reference solution) that pass the QA gate."""
    from envscaler_mcp.catalog.store import get_skeleton
    from envscaler_mcp.synth.scen.pipeline import run_scenarios
    from envscaler_mcp.synth.scen.store import EnvWork
    from envscaler_mcp.synth.scen.summary import ScenSummary, print_summary

    skeletons = [get_skeleton(name) for name in options.env_names()]
    out, n = options.out, options.n
    check_writable_folder(out)  # before any model starts
    log = RunLog(out / "_work" / "synth.log")
    scen_options = options.scen_options(
        on_item=lambda env_id, item_id, outcome: log.item("scenarios", f"{env_id}/{item_id}", outcome))
    model, solver_model, cache_dir = options.model, options.solver_model, options.cache_dir
    generator, solver = make_providers(model, solver_model, cache_dir)
    generator = ReportingProvider(generator, log)
    solver = ReportingProvider(solver, log) if solver is not None else None

    async def main() -> ScenSummary:
        try:
            return await run_scenarios(skeletons, generator, solver, scen_options,
                                       make_providers=partial(make_providers, model, solver_model, cache_dir),
                                       on_start=lambda todo: log.expect("scenarios", todo))
        finally:
            await generator.aclose()
            if solver is not None:
                await solver.aclose()

    try:
        summary = _interrupt.run(main)
    except KeyboardInterrupt:
        say_interrupted(out, [sk.id for sk in skeletons], n, log)
        raise typer.Exit(130) from None
    print_summary(summary)
    works = [EnvWork(out, sk.id) for sk in skeletons]
    added = [f"{w.scenario_file} (+{env.added})" for w, env in zip(works, summary.environments, strict=True)
             if env.added and w.scenario_file.exists()]
    dropped = existing(w.dropped.path for w in works)
    if added:
        typer.echo(f"scenarios added to: {', '.join(added)}")
    if dropped:
        typer.echo(f"dropped items: {', '.join(map(str, dropped))}")
    typer.echo(f"log: {log.path}")
    if not any(env.kept for env in summary.environments):
        fail_empty("no scenario kept", [d for w in works for d in read_drops(w.dropped.path)], log)


def say_interrupted(out: Path, env_ids: list[str], n: int, log: RunLog) -> None:
    """Two lines: what the interrupted run kept (on disk in OUT/_work) and the command that continues it."""
    from envscaler_mcp.synth.scen.store import EnvWork

    works = [EnvWork(out, env_id) for env_id in env_ids]
    kept = sum(len(w.kept()) for w in works)
    dropped = sum(len(w.dropped.records) for w in works)
    log.line(f"interrupted: {kept} scenario(s) passed the gate and {dropped} item(s) were dropped, of "
             f"{n * len(works)}; kept in {out / '_work'} (a resumed run adds them to the sets)")
    log.line(f"resume: {resume_command()}")


def register(app: typer.Typer) -> None:
    """Add `scenarios` to the synth command group."""
    app.command("scenarios")(typed_command(ScenariosOptions, scenarios))

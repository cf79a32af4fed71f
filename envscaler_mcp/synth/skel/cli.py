"""`envscaler-mcp synth envs`: run SkelBuilder (mine -> model -> check) over a task corpus."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from envscaler_mcp import _interrupt
from envscaler_mcp._command import typed_command
from envscaler_mcp._io import check_writable_folder, iter_jsonl, read_json
from envscaler_mcp.synth._common_progress import ReportingProvider, RunLog
from envscaler_mcp.synth._common_report import fail_empty, read_drops, resume_command
from envscaler_mcp.synth._common_store import ItemDir
from envscaler_mcp.synth.skel.cli_options import EnvsOptions

if TYPE_CHECKING:
    from envscaler_mcp.synth.skel.pipeline import Seats


def make_seats(model: str, checker_model: str | None, cache_dir: Path | None) -> Seats:
    """The seats from their provider specs (on the driver, and again on each Ray worker)."""
    from envscaler_mcp.providers import get_provider
    from envscaler_mcp.synth.skel.pipeline import Seats

    generator = get_provider(model, cache_dir=cache_dir)
    judge = get_provider(checker_model, cache_dir=cache_dir) if checker_model else generator
    return Seats(generator=generator, tester=judge, checker=judge)


def envs(options: EnvsOptions) -> None:
    """Synthesize environment skeletons from a task corpus and check each as a live MCP server."""
    from envscaler_mcp.synth.skel.pipeline import Seats, run_skel
    from envscaler_mcp.synth.skel.summary import RunSummary, print_summary

    out, stage = options.out, options.stage
    check_writable_folder(out)  # before any model starts
    log = RunLog(out / "synth.log")
    specs = (options.model, options.checker_model, options.cache_dir)
    seats = make_seats(*specs)
    reporting = {id(p): ReportingProvider(p, log) for p in (seats.generator, seats.tester, seats.checker)}
    seats = Seats(generator=reporting[id(seats.generator)], tester=reporting[id(seats.tester)],
                  checker=reporting[id(seats.checker)])
    config = options.skel_config(partial(make_seats, *specs), log)

    async def main() -> RunSummary:
        try:
            return await run_skel(config, seats)
        finally:
            await seats.aclose()

    try:
        summary = _interrupt.run(main)
    except KeyboardInterrupt:
        say_interrupted(out, log)
        raise typer.Exit(130) from None
    print_summary(summary)
    kept_envs = out / "environments"
    if kept_envs.exists() and any(kept_envs.iterdir()):
        typer.echo(f"environments: {kept_envs}")
    typer.echo(f"log: {log.path}")
    last = "check" if stage == "all" else stage
    if not stage_result(out, last, summary.counts):
        fail_empty(f"the {last} stage kept nothing", stage_drops(out, last), log)


def stage_result(out: Path, stage: str, counts: dict[str, Any]) -> int:
    """What a stage kept: topics selected (mine), skeletons built (model), environments kept (check)."""
    if stage == "mine":
        return int(counts.get("selected", 0))
    if stage == "model":
        return len(ItemDir(out / "model" / "envs").all())
    return int(counts.get("kept", 0))


def stage_drops(out: Path, stage: str) -> list[tuple[str, str]]:
    """(step, reason) of a stage's drops: judged tasks not kept (mine), dropped.jsonl (model, check), and the
    environments the check scored below the threshold."""
    if stage == "mine":
        judged = out / "mine" / "judged.jsonl"
        drops = [(f"mine ({r.get('status')})", str(r.get("reason") or r.get("status")))
                 for _, r in iter_jsonl(judged, skip_torn_tail=True) if r.get("status") != "topic"] \
            if judged.exists() else []
        report = read_json(out / "mine" / "dedupe.json") if (out / "mine" / "dedupe.json").exists() else {}
        below = int(report.get("below_threshold", 0))
        merged = int(report.get("topics", 0)) - below - int(report.get("selected", 0))
        drops += [("mine (selection)", "usefulness or modelability below --min-usefulness/--min-modelability")] * below
        return drops + [("mine (selection)", "a duplicate of another topic")] * max(0, merged)
    drops = read_drops(out / stage / "dropped.jsonl")
    if stage == "check":
        drops += [("check", f"quality below the threshold: {r.get('reason', '')}")
                  for r in ItemDir(out / "check" / "envs").all() if not r.get("kept")]
    return drops


def say_interrupted(out: Path, log: RunLog) -> None:
    """Two lines: what the interrupted run has on disk and the command that continues it."""
    judged = out / "mine" / "judged.jsonl"
    parts = [f"{sum(1 for _ in iter_jsonl(judged, skip_torn_tail=True)) if judged.exists() else 0} task(s) judged",
             f"{len(ItemDir(out / 'model' / 'envs').all())} environment(s) modelled",
             f"{sum(bool(r.get('kept')) for r in ItemDir(out / 'check' / 'envs').all())} kept by the check"]
    log.line(f"interrupted: {', '.join(parts)}; kept in {out}")
    log.line(f"resume: {resume_command()}")


def register(app: typer.Typer) -> None:
    """Add `envs` to the synth command group."""
    app.command("envs")(typed_command(EnvsOptions, envs))

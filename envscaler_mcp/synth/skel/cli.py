"""`envscaler-mcp synth envs`: run SkelBuilder (mine -> model -> check) over a task corpus."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from envscaler_mcp import _interrupt
from envscaler_mcp._choices import SkelStage
from envscaler_mcp._io import check_writable_folder, iter_jsonl, read_json
from envscaler_mcp.synth._common_progress import ReportingProvider, RunLog
from envscaler_mcp.synth._common_report import fail_empty, read_drops, resume_command
from envscaler_mcp.synth._common_store import ItemDir

if TYPE_CHECKING:
    from envscaler_mcp.synth.skel.pipeline import Seats


RAY_HELP = ("Run the per-item work on a Ray cluster: auto (the running one), local (a private one here) or an "
            "address; --concurrency is then per worker. Needs the package's [ray] extra (docs/ray.md).")


def make_seats(model: str, checker_model: str | None, cache_dir: Path | None) -> Seats:
    """The seats from their provider specs (on the driver, and again on each Ray worker)."""
    from envscaler_mcp.providers import get_provider
    from envscaler_mcp.synth.skel.pipeline import Seats

    generator = get_provider(model, cache_dir=cache_dir)
    judge = get_provider(checker_model, cache_dir=cache_dir) if checker_model else generator
    return Seats(generator=generator, tester=judge, checker=judge)


def envs(
    model: Annotated[str, typer.Option("--model", help="Generator model, provider/model (e.g. openai/gpt-4.1).")],
    tasks: Annotated[Path | None, typer.Option(
        "--tasks", help="Task corpus: API-Bank / ToolACE records or {\"task\": ...} lines (JSONL or a JSON list). "
        "Needed by the mine stage.")] = None,
    checker_model: Annotated[str | None, typer.Option(
        "--checker-model", help="Tester and checker model for the quality check (default: --model).")] = None,
    out: Annotated[Path, typer.Option("--out", help="Output folder (one subfolder per stage).")] = Path("synth_out"),
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Use at most N tasks after the cheap filters.")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue a run in --out, skipping finished items.")] = False,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Items processed at the same time.")] = 4,
    stage: Annotated[SkelStage, typer.Option("--stage", help="The stage(s) to run.")] = "all",
    retries: Annotated[int, typer.Option(
        "--retries", min=0, help="Re-asks after a parse or check failure, per step.")] = 2,
    min_usefulness: Annotated[int, typer.Option(
        "--min-usefulness", min=1, max=10, help="Keep topics with at least this usefulness.")] = 7,
    min_modelability: Annotated[int, typer.Option(
        "--min-modelability", min=1, max=10, help="Keep topics with at least this modelability.")] = 7,
    similarity: Annotated[float | None, typer.Option(
        "--similarity", min=0.0, max=1.0, help="Cosine similarity at which two topics are duplicates "
        "(default 0.35 lexical, 0.85 embeddings).")] = None,
    check_calls: Annotated[int | None, typer.Option(
        "--check-calls", min=1, help="Tester calls per environment (default: two per tool).")] = None,
    per_tool_cap: Annotated[int, typer.Option("--per-tool-cap", min=1, help="At most this many tests per tool.")] = 10,
    threshold: Annotated[float, typer.Option(
        "--threshold", min=0.0, max=1.0, help="Keep environments with (pass + warning) / total at least this.")] = 0.85,
    no_repair: Annotated[bool, typer.Option("--no-repair", help="Skip the repair round of failing methods.")] = False,
    min_tools: Annotated[int, typer.Option(
        "--min-tools", min=1, help="Keep environments with at least this many tools proven to work.")] = 5,
    max_failed_methods: Annotated[int, typer.Option(
        "--max-failed-methods", min=0, help="Leave out up to N operations whose method still fails after the "
        "retries instead of dropping the environment.")] = 0,
    cache_dir: Annotated[Path | None, typer.Option(
        "--cache-dir", help="Cache model responses here (a rerun with the same prompts costs nothing).")] = None,
    ray: Annotated[str | None, typer.Option("--ray", help=RAY_HELP + " The model and check stages (per "
                                            "topic) run there; mine runs here.")] = None,
    ray_workers: Annotated[int | None, typer.Option(
        "--ray-workers", min=1, help="Ray workers (default: the cluster's CPUs).")] = None,
) -> None:
    """Synthesize environment skeletons from a task corpus and check each as a live MCP server."""
    from envscaler_mcp.synth.skel.checkstage import CheckOptions
    from envscaler_mcp.synth.skel.mine import MineOptions
    from envscaler_mcp.synth.skel.modeling import ModelOptions
    from envscaler_mcp.synth.skel.pipeline import Seats, SkelConfig, run_skel
    from envscaler_mcp.synth.skel.quality import QualityOptions
    from envscaler_mcp.synth.skel.summary import RunSummary, print_summary

    check_writable_folder(out)  # before any model starts
    log = RunLog(out / "synth.log")
    seats = make_seats(model, checker_model, cache_dir)
    reporting = {id(p): ReportingProvider(p, log) for p in (seats.generator, seats.tester, seats.checker)}
    seats = Seats(generator=reporting[id(seats.generator)], tester=reporting[id(seats.tester)],
                  checker=reporting[id(seats.checker)])
    config = SkelConfig(
        out=out, tasks=tasks, stage=stage, resume=resume, ray=ray, ray_workers=ray_workers,
        make_seats=partial(make_seats, model, checker_model, cache_dir),
        mine=MineOptions(limit=limit, min_usefulness=min_usefulness, min_modelability=min_modelability,
                         similarity=similarity, retries=retries, concurrency=concurrency, on_start=log.expect),
        model=ModelOptions(retries=retries, concurrency=concurrency, max_failed_methods=max_failed_methods),
        check=CheckOptions(quality=QualityOptions(calls=check_calls, per_tool_cap=per_tool_cap, threshold=threshold,
                                                  retries=retries),
                           repair=not no_repair, retries=retries, concurrency=concurrency, min_tools=min_tools),
        on_start=log.expect,
    )
    config.mine.on_item = config.model.on_item = config.check.on_item = log.item

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
    app.command("envs")(envs)

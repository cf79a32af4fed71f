"""The options of `synth envs`, declared once: a typed dataclass whose fields are the command's options (typer
reads them through envscaler_mcp/_command.py), and the one place they are turned into the pipeline's SkelConfig.

Typing and typer only at import time: `synth envs --help` and a bad choice load no pipeline (the stage choices
are envscaler_mcp/_choices.py's SkelStage, which the pipeline uses too)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from envscaler_mcp._choices import SkelStage

if TYPE_CHECKING:
    from envscaler_mcp.synth._common_progress import RunLog
    from envscaler_mcp.synth.skel.pipeline import Seats, SkelConfig

RAY_HELP = ("Run the per-item work on a Ray cluster: auto (the running one), local (a private one here) or an "
            "address; --concurrency is then per worker. Needs the package's [ray] extra (docs/ray.md).")


@dataclasses.dataclass(frozen=True)
class EnvsOptions:
    """What `synth envs` was given: one field per option, in the order `--help` lists them."""

    model: Annotated[str, typer.Option("--model", help="Generator model, provider/model (e.g. openai/gpt-4.1).")]
    tasks: Annotated[Path | None, typer.Option(
        "--tasks", help="Task corpus: API-Bank / ToolACE records or {\"task\": ...} lines (JSONL or a JSON list). "
        "Needed by the mine stage.")] = None
    checker_model: Annotated[str | None, typer.Option(
        "--checker-model", help="Tester and checker model for the quality check (default: --model).")] = None
    out: Annotated[Path, typer.Option("--out", help="Output folder (one subfolder per stage).")] = Path("synth_out")
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="Use at most N tasks after the cheap filters.")] = None
    resume: Annotated[bool, typer.Option("--resume", help="Continue a run in --out, skipping finished items.")] = False
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Items processed at the same time.")] = 4
    stage: Annotated[SkelStage, typer.Option("--stage", help="The stage(s) to run.")] = "all"
    retries: Annotated[int, typer.Option(
        "--retries", min=0, help="Re-asks after a parse or check failure, per step.")] = 2
    min_usefulness: Annotated[int, typer.Option(
        "--min-usefulness", min=1, max=10, help="Keep topics with at least this usefulness.")] = 7
    min_modelability: Annotated[int, typer.Option(
        "--min-modelability", min=1, max=10, help="Keep topics with at least this modelability.")] = 7
    similarity: Annotated[float | None, typer.Option(
        "--similarity", min=0.0, max=1.0, help="Cosine similarity at which two topics are duplicates "
        "(default 0.35 lexical, 0.85 embeddings).")] = None
    check_calls: Annotated[int | None, typer.Option(
        "--check-calls", min=1, help="Tester calls per environment (default: two per tool).")] = None
    per_tool_cap: Annotated[int, typer.Option("--per-tool-cap", min=1, help="At most this many tests per tool.")] = 10
    threshold: Annotated[float, typer.Option(
        "--threshold", min=0.0, max=1.0, help="Keep environments with (pass + warning) / total at least this.")] = 0.85
    no_repair: Annotated[bool, typer.Option("--no-repair", help="Skip the repair round of failing methods.")] = False
    min_tools: Annotated[int, typer.Option(
        "--min-tools", min=1, help="Keep environments with at least this many tools proven to work.")] = 5
    max_failed_methods: Annotated[int, typer.Option(
        "--max-failed-methods", min=0, help="Leave out up to N operations whose method still fails after the "
        "retries instead of dropping the environment.")] = 0
    cache_dir: Annotated[Path | None, typer.Option(
        "--cache-dir", help="Cache model responses here (a rerun with the same prompts costs nothing).")] = None
    ray: Annotated[str | None, typer.Option("--ray", help=RAY_HELP + " The model and check stages (per "
                                            "topic) run there; mine runs here.")] = None
    ray_workers: Annotated[int | None, typer.Option(
        "--ray-workers", min=1, help="Ray workers (default: the cluster's CPUs).")] = None

    def skel_config(self, make_seats: Callable[[], Seats], log: RunLog) -> SkelConfig:
        """The pipeline's configuration: `make_seats` builds the seats on each Ray worker, `log` hears of each
        stage's start and each item kept or dropped."""
        from envscaler_mcp.synth.skel.checkstage import CheckOptions
        from envscaler_mcp.synth.skel.mine import MineOptions
        from envscaler_mcp.synth.skel.modeling import ModelOptions
        from envscaler_mcp.synth.skel.pipeline import SkelConfig
        from envscaler_mcp.synth.skel.quality import QualityOptions

        retries, concurrency = self.retries, self.concurrency
        return SkelConfig(
            out=self.out, tasks=self.tasks, stage=self.stage, resume=self.resume, ray=self.ray,
            ray_workers=self.ray_workers, make_seats=make_seats,
            mine=MineOptions(limit=self.limit, min_usefulness=self.min_usefulness,
                             min_modelability=self.min_modelability, similarity=self.similarity, retries=retries,
                             concurrency=concurrency, on_start=log.expect, on_item=log.item),
            model=ModelOptions(retries=retries, concurrency=concurrency, max_failed_methods=self.max_failed_methods,
                               on_item=log.item),
            check=CheckOptions(quality=QualityOptions(calls=self.check_calls, per_tool_cap=self.per_tool_cap,
                                                      threshold=self.threshold, retries=retries),
                               repair=not self.no_repair, retries=retries, concurrency=concurrency,
                               min_tools=self.min_tools, on_item=log.item),
            on_start=log.expect,
        )

"""Run SkelBuilder's stages in order over one output folder; every stage resumes from what is on disk."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from envscaler_mcp._choices import SkelStage
from envscaler_mcp._io import atomic_write_json, iter_jsonl
from envscaler_mcp.errors import UsageError
from envscaler_mcp.providers.base import Provider
from envscaler_mcp.synth._common_store import ItemCallback, ItemDir
from envscaler_mcp.synth.skel.checkstage import CheckOptions, check_todo, run_check
from envscaler_mcp.synth.skel.mine import MineOptions, run_mine
from envscaler_mcp.synth.skel.modeling import ModelOptions, model_todo, run_model
from envscaler_mcp.synth.skel.quality import EpisodeFactory, mcp_episode
from envscaler_mcp.synth.skel.records import ModelRecord, SelectedTopic
from envscaler_mcp.synth.skel.summary import RunSummary, collect_summary


@dataclass
class Seats:
    """The model behind each seat; tester and checker default to the same provider."""

    generator: Provider
    tester: Provider
    checker: Provider

    def specs(self) -> dict[str, str]:
        """provider/model per seat, for provenance."""
        return {"generator": self.generator.spec, "tester": self.tester.spec, "checker": self.checker.spec}

    async def aclose(self) -> None:
        """Close each distinct provider once."""
        for provider in {id(p): p for p in (self.generator, self.tester, self.checker)}.values():
            await provider.aclose()


@dataclass
class SkelConfig:
    """Everything one `synth envs` run needs (read once by the CLI)."""

    out: Path
    tasks: Path | None = None
    stage: SkelStage = "all"
    resume: bool = False
    mine: MineOptions = field(default_factory=MineOptions)
    model: ModelOptions = field(default_factory=ModelOptions)
    check: CheckOptions = field(default_factory=CheckOptions)
    ray: str | None = None  # run the model and check stages on this Ray cluster ('auto', 'local', HOST:PORT)
    ray_workers: int | None = None  # Ray actors (default: the cluster's CPUs)
    make_seats: Callable[[], Seats] | None = None  # builds the seats on each Ray worker
    on_start: Callable[[str, int], None] | None = None  # (stage, items to make) before the model and check stages


@dataclass
class ModelJob:
    """The model stage's items (topics) on a Ray worker (adapters.ray_items)."""

    make_seats: Callable[[], Seats]
    options: ModelOptions
    seats: Seats | None = None

    async def open(self, resources: Any) -> None:
        self.seats = self.make_seats()

    async def run(self, out: Path, on_item: ItemCallback, item: dict[str, Any]) -> None:
        assert self.seats is not None
        await run_model([SelectedTopic.model_validate(item)], out, self.seats.generator,
                        replace(self.options, on_item=on_item))

    async def close(self) -> None:
        if self.seats is not None:
            await self.seats.aclose()


@dataclass
class CheckJob:
    """The check stage's items (modelled environments) on a Ray worker (adapters.ray_items)."""

    make_seats: Callable[[], Seats]
    options: CheckOptions
    episode_factory: EpisodeFactory = mcp_episode
    seats: Seats | None = None

    async def open(self, resources: Any) -> None:
        self.seats = self.make_seats()

    async def run(self, out: Path, on_item: ItemCallback, item: dict[str, Any]) -> None:
        assert self.seats is not None
        await run_check([ModelRecord.model_validate(item)], out, self.seats.generator, self.seats.tester,
                        self.seats.checker, replace(self.options, on_item=on_item), self.episode_factory)

    async def close(self) -> None:
        if self.seats is not None:
            await self.seats.aclose()


def _has_output(folder: Path) -> bool:
    return folder.exists() and any(folder.iterdir())


def load_topics(out: Path) -> list[SelectedTopic]:
    """The mine stage's selection; a usage error when the stage has not run."""
    path = out / "mine" / "topics.jsonl"
    if not path.exists():
        raise UsageError(f"{path} not found: run `synth envs --stage mine` (or --stage all) first")
    return [SelectedTopic.model_validate(r) for _, r in iter_jsonl(path)]


def load_models(out: Path) -> list[ModelRecord]:
    """The model stage's environments; a usage error when the stage has not run."""
    folder = out / "model" / "envs"
    if not folder.exists() and not (out / "model" / "dropped.jsonl").exists():
        raise UsageError(f"{folder} not found: run `synth envs --stage model` (or --stage all) first")
    return [ModelRecord.model_validate(r) for r in ItemDir(folder).all()]


async def run_skel(config: SkelConfig, seats: Seats, episode_factory: EpisodeFactory = mcp_episode) -> RunSummary:
    """Run the selected stages and return the run's totals (also written to OUT/summary.json)."""
    stages = ["mine", "model", "check"] if config.stage == "all" else [config.stage]
    if not config.resume:
        busy = [s for s in stages if _has_output(config.out / s)]
        if busy:
            raise UsageError(f"{config.out} already holds {', '.join(busy)} results; pass --resume to continue "
                             "that run (finished items are skipped) or choose another --out")
    if config.ray:
        if config.make_seats is None:
            raise UsageError("a Ray run needs make_seats: the worker builds its own providers")
        from envscaler_mcp.adapters.ray_run import connect

        connect(config.ray)  # before any work: an address nobody answers on is one line, nothing spent
    config.model.models = {"generator": seats.generator.spec}
    config.check.models = seats.specs()
    if "mine" in stages:
        if config.tasks is None:
            raise UsageError("the mine stage needs --tasks FILE (a task corpus: JSONL or a JSON list)")
        await run_mine(config.tasks, config.out, seats.generator, config.mine)
    if "model" in stages:
        if config.on_start:
            config.on_start("model", len(model_todo(load_topics(config.out), config.out)))
        if config.ray and config.make_seats is not None:
            from envscaler_mcp.adapters.ray_items import run_items

            todo = [t.model_dump(mode="json") for t in model_todo(load_topics(config.out), config.out)]
            await run_items(ModelJob(config.make_seats, replace(config.model, on_item=None)), todo, config.out,
                            config.ray, workers=config.ray_workers, per_worker=config.model.concurrency,
                            on_item=config.model.on_item)
        else:
            await run_model(load_topics(config.out), config.out, seats.generator, config.model)
    if "check" in stages:
        if config.on_start:
            config.on_start("check", len(check_todo(load_models(config.out), config.out)))
        if config.ray and config.make_seats is not None:
            from envscaler_mcp.adapters.ray_items import run_items

            todo = [r.model_dump(mode="json") for r in check_todo(load_models(config.out), config.out)]
            await run_items(CheckJob(config.make_seats, replace(config.check, on_item=None), episode_factory),
                            todo, config.out, config.ray, workers=config.ray_workers,
                            per_worker=config.check.concurrency, on_item=config.check.on_item)
        else:
            await run_check(load_models(config.out), config.out, seats.generator, seats.tester, seats.checker,
                            config.check, episode_factory)
    summary = collect_summary(config.out)
    atomic_write_json(config.out / "summary.json", summary.model_dump(mode="json"))
    return summary

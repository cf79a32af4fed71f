"""Run SkelBuilder's stages in order over one output folder; every stage resumes from what is on disk."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from envscaler_mcp._io import atomic_write_json, iter_jsonl
from envscaler_mcp.errors import UsageError
from envscaler_mcp.providers.base import Provider
from envscaler_mcp.synth._common_store import ItemDir
from envscaler_mcp.synth.skel.checkstage import CheckOptions, run_check
from envscaler_mcp.synth.skel.mine import MineOptions, run_mine
from envscaler_mcp.synth.skel.modeling import ModelOptions, run_model
from envscaler_mcp.synth.skel.quality import EpisodeFactory, mcp_episode
from envscaler_mcp.synth.skel.records import ModelRecord, SelectedTopic
from envscaler_mcp.synth.skel.summary import RunSummary, collect_summary

Stage = Literal["mine", "model", "check", "all"]


@dataclass
class Seats:
    """The model behind each seat; tester and checker default to the same provider."""

    generator: Provider
    tester: Provider
    checker: Provider

    def specs(self) -> dict[str, str]:
        """provider/model per seat, for provenance."""
        return {"generator": self.generator.spec, "tester": self.tester.spec, "checker": self.checker.spec}


@dataclass
class SkelConfig:
    """Everything one `synth envs` run needs (read once by the CLI)."""

    out: Path
    tasks: Path | None = None
    stage: Stage = "all"
    resume: bool = False
    mine: MineOptions = field(default_factory=MineOptions)
    model: ModelOptions = field(default_factory=ModelOptions)
    check: CheckOptions = field(default_factory=CheckOptions)


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
    config.model.models = {"generator": seats.generator.spec}
    config.check.models = seats.specs()
    if "mine" in stages:
        if config.tasks is None:
            raise UsageError("the mine stage needs --tasks FILE (a task corpus: JSONL or a JSON list)")
        await run_mine(config.tasks, config.out, seats.generator, config.mine)
    if "model" in stages:
        await run_model(load_topics(config.out), config.out, seats.generator, config.model)
    if "check" in stages:
        await run_check(load_models(config.out), config.out, seats.generator, seats.tester, seats.checker,
                        config.check, episode_factory)
    summary = collect_summary(config.out)
    atomic_write_json(config.out / "summary.json", summary.model_dump(mode="json"))
    return summary

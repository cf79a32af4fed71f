"""`synth envs`' options are one typed dataclass: every option reaches the pipeline's SkelConfig and the stage
choice is the pipeline's own type."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import get_args, get_type_hints

from envscaler_mcp._choices import SkelStage
from envscaler_mcp.cli import load_command
from envscaler_mcp.synth._common_progress import RunLog
from envscaler_mcp.synth.skel.cli_options import EnvsOptions
from envscaler_mcp.synth.skel.pipeline import Seats, SkelConfig


def test_the_command_declares_exactly_the_dataclass_fields() -> None:
    command = load_command("synth").commands["envs"]  # type: ignore[attr-defined]
    assert [p.name for p in command.params] == [f.name for f in dataclasses.fields(EnvsOptions)]
    assert [p.name for p in command.params if p.required] == ["model"]


def test_the_stage_choice_is_the_pipeline_own_type() -> None:
    given = get_args(get_type_hints(EnvsOptions, include_extras=True)["stage"])[0]
    assert given is SkelStage is get_type_hints(SkelConfig)["stage"]


def test_every_option_reaches_the_pipeline_config(tmp_path: Path) -> None:
    def seats() -> Seats:
        raise AssertionError("built only on a Ray worker")

    log = RunLog(tmp_path / "synth.log", echo=lambda line: None)
    config = EnvsOptions(model="mock", tasks=tmp_path / "t.jsonl", out=tmp_path, limit=9, resume=True, concurrency=3,
                         stage="model", retries=5, min_usefulness=4, min_modelability=6, similarity=0.5,
                         check_calls=11, per_tool_cap=12, threshold=0.5, no_repair=True, min_tools=2,
                         max_failed_methods=1, ray="local", ray_workers=2).skel_config(seats, log)
    assert (config.out, config.tasks, config.stage, config.resume) == (tmp_path, tmp_path / "t.jsonl", "model", True)
    assert (config.ray, config.ray_workers, config.make_seats, config.on_start) == ("local", 2, seats, log.expect)
    mine = config.mine
    assert (mine.limit, mine.min_usefulness, mine.min_modelability, mine.similarity) == (9, 4, 6, 0.5)
    assert (mine.retries, mine.concurrency, mine.on_start, mine.on_item) == (5, 3, log.expect, log.item)
    model = config.model
    assert (model.retries, model.concurrency, model.max_failed_methods, model.on_item) == (5, 3, 1, log.item)
    check = config.check
    assert (check.repair, check.retries, check.concurrency, check.min_tools, check.on_item) == (
        False, 5, 3, 2, log.item)
    quality = check.quality
    assert (quality.calls, quality.per_tool_cap, quality.threshold, quality.retries) == (11, 12, 0.5, 5)
    assert EnvsOptions(model="mock").skel_config(seats, log).check.repair is True

"""`synth scenarios`' options are one typed dataclass: every option reaches the pipeline's ScenOptions, the
guard's choices are the pipeline's own type, and the checks the types cannot make are usage errors."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import get_args, get_type_hints

import pytest

from envscaler_mcp._choices import MutationGuard
from envscaler_mcp.catalog.store import list_env_ids
from envscaler_mcp.cli import load_command
from envscaler_mcp.errors import UsageError
from envscaler_mcp.synth.scen.cli_options import ScenariosOptions
from envscaler_mcp.synth.scen.pipeline import ScenOptions


def test_the_command_declares_exactly_the_dataclass_fields() -> None:
    command = load_command("synth").commands["scenarios"]  # type: ignore[attr-defined]
    assert [p.name for p in command.params] == [f.name for f in dataclasses.fields(ScenariosOptions)]
    assert (command.help or "").startswith("Generate scenarios (state, task, checklist")


def test_the_guard_choice_is_the_pipeline_own_type() -> None:
    given = get_args(get_type_hints(ScenariosOptions, include_extras=True)["guard"])[0]
    assert given is MutationGuard is get_type_hints(ScenOptions)["guard"]


def test_every_option_reaches_the_pipeline_options(tmp_path: Path) -> None:
    def heard(env_id: str, item_id: str, outcome: str) -> None:
        pass

    options = ScenariosOptions(n=3, out=tmp_path, resume=True, concurrency=5, retries=4, similarity=0.25,
                               mutation=False, guard="state", temperature=0.2, questions=0.5, judge=True,
                               ray="local", ray_workers=3, steer=False).scen_options(on_item=heard)
    assert (options.n, options.out, options.resume, options.concurrency, options.retries) == (3, tmp_path, True, 5, 4)
    assert (options.similarity, options.require_mutation, options.guard, options.temperature) == (
        0.25, False, "state", 0.2)
    assert (options.questions, options.judge, options.ray, options.ray_workers) == (0.5, True, "local", 3)
    assert options.validator_workers == 2 and options.on_item is heard  # at most two validator workers
    assert options.steer is False and ScenariosOptions().scen_options().steer is True
    assert ScenariosOptions(concurrency=1).scen_options().validator_workers == 1


def test_the_environments_are_the_named_ones_then_the_catalog() -> None:
    catalog = list_env_ids()
    named = ScenariosOptions(model="mock", envs=[catalog[1]], all_envs=True).env_names()
    assert named[0] == catalog[1] and sorted(named) == sorted(catalog)
    assert ScenariosOptions(model="mock", envs=["a", "b"]).env_names() == ["a", "b"]


@pytest.mark.parametrize(("options", "message"), [
    (ScenariosOptions(envs=["mini_shop"]), "--model is required"),
    (ScenariosOptions(model="mock"), "or pass --all"),
])
def test_missing_choices_are_usage_errors(options: ScenariosOptions, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        options.env_names()


@pytest.mark.parametrize(("model", "given", "mode"), [
    ("local/qwen2.5-coder-1.5b", "auto", "first"), ("openai/gpt-4.1", "auto", "fallback"),
    ("local/qwen2.5-coder-1.5b", "fallback", "fallback"), ("openai/gpt-4.1", "first", "first"),
    ("openai/gpt-4.1", "off", "off")])
def test_plan_first_auto_is_first_on_the_embedded_model_and_fallback_elsewhere(model: str, given: str,
                                                                                mode: str) -> None:
    options = ScenariosOptions(model=model, plan_first=given).scen_options()  # type: ignore[arg-type]
    assert options.plan_first == mode

"""ScenGenerator's prompts fit the model's context: every bundled environment's step prompts leave room for the
answer in the embedded model's 8,192 tokens, keep what the item needs (the state schema, the records the task
names and those they point at), and a prompt that cannot fit is refused before any call."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from envscaler_mcp.catalog.store import get_skeleton, list_env_ids, scenarios_for
from envscaler_mcp.errors import ProviderError
from envscaler_mcp.providers.base import GenerationSettings, Message
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.qa.grounding import named_records
from envscaler_mcp.skeleton.schema import state_schema
from envscaler_mcp.synth._common_fit import estimate_text, estimate_tokens
from envscaler_mcp.synth.llm import StepFailed, UsageMeter
from envscaler_mcp.synth.scen.excerpt import outline, sample_state, state_view
from envscaler_mcp.synth.scen.state_step import gen_state
from envscaler_mcp.synth.scen.steps import (
    StepContext,
    gen_solution,
    gen_task,
    gen_validators,
)

WINDOW = 8192  # the embedded model's context (providers/local: LocalOptions.ctx)
ENVS = list_env_ids()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def first_request(env_id: str, step: str, window: int | None) -> tuple[list[Message], GenerationSettings]:
    """The step's first request for the environment's default state and first bundled task (the scripted
    provider records it, then has no answer)."""
    provider = MockProvider([], spec="mock/fit", context_tokens=window)
    skeleton = get_skeleton(env_id)
    ctx = StepContext(skeleton=skeleton, generator=provider, solver=provider)
    state, scenario = skeleton.default_state or {}, scenarios_for(env_id)[0]
    calls: dict[str, Any] = {
        "states": lambda: gen_state(ctx, 0, 2, UsageMeter()),
        "task": lambda: gen_task(ctx, state, UsageMeter()),
        "validators": lambda: gen_validators(ctx, state, scenario.task, scenario.checklist, UsageMeter()),
        "solution": lambda: gen_solution(ctx, state, scenario.task, UsageMeter())}
    with pytest.raises(ProviderError):
        await calls[step]()
    messages, _, settings = provider.requests[0]
    return messages, settings


@pytest.mark.anyio
@pytest.mark.parametrize("env_id", ENVS)
async def test_the_first_step_fits_the_embedded_model(env_id: str) -> None:
    messages, settings = await first_request(env_id, "states", WINDOW)
    assert settings.max_tokens is not None and settings.max_tokens >= 3072  # room for a rich state
    assert estimate_tokens(messages) + settings.max_tokens <= WINDOW
    text = messages[-1].content
    skeleton = get_skeleton(env_id)
    assert all(f'"{attr}"' in text for attr in state_schema(skeleton)["properties"])  # every attribute's schema


@pytest.mark.anyio
@pytest.mark.parametrize("step", ["task", "validators", "solution"])
@pytest.mark.parametrize("env_id", ENVS)
async def test_the_later_steps_fit_with_the_records_the_task_names(env_id: str, step: str) -> None:
    messages, settings = await first_request(env_id, step, WINDOW)
    assert settings.max_tokens is not None and settings.max_tokens >= 1024
    assert estimate_tokens(messages) + settings.max_tokens <= WINDOW
    if step != "task":
        skeleton, scenario = get_skeleton(env_id), scenarios_for(env_id)[0]
        state = skeleton.default_state or {}
        for collection, key in named_records(state, scenario.task):
            assert f'"{key}": ' in messages[-1].content, (collection, key)


@pytest.mark.anyio
async def test_a_model_without_a_known_window_gets_the_whole_prompt() -> None:
    skeleton = get_skeleton("ecommerce_orders")
    messages, settings = await first_request("ecommerce_orders", "states", None)
    assert skeleton.class_source in messages[-1].content and settings.max_tokens == 8192
    shortened, _ = await first_request("ecommerce_orders", "states", WINDOW)
    assert skeleton.class_source not in shortened[-1].content


@pytest.mark.anyio
async def test_a_prompt_that_fits_at_no_rung_is_refused_before_any_call() -> None:
    provider = MockProvider(["{}"], spec="mock/tiny", context_tokens=1500)
    ctx = StepContext(skeleton=get_skeleton("ecommerce_orders"), generator=provider, solver=provider)
    with pytest.raises(StepFailed) as failed:
        await gen_state(ctx, 0, 1, UsageMeter())
    assert failed.value.kind == "context_overflow" and "mock/tiny's context is 1500 tokens" in failed.value.reason
    assert provider.requests == []


def test_an_excerpt_keeps_the_named_records_and_those_they_point_at() -> None:
    state = {"customers": {"C1": {"name": "Ada Moreno"}, "C2": {"name": "Bo Lund"}, "C3": {"name": "Cy Ng"}},
             "orders": {f"O{i}": {"customer_id": "C3" if i == 7 else "C1", "total": i} for i in range(1, 10)},
             "log": list(range(20))}
    sample, notes = sample_state(state, 1, task="Please cancel order O7 and refund it.")
    assert set(sample["orders"]) == {"O7"}  # the named order fills the one place
    assert set(sample["customers"]) == {"C3"}  # the order's customer, though not named, not the first one
    assert sample["log"] == [0] and notes == ["customers: 1 of 3 records shown", "orders: 1 of 9 records shown",
                                              "log: 1 of 20 items shown"]
    assert set(sample_state(state, 2, task="")[0]["orders"]) == {"O1", "O2"}  # no task: the first ones
    assert "(an excerpt: customers: 1 of 3 records shown" in state_view(state, 1, "cancel order O7")
    assert state_view(state, None) == state_view(state, None, "cancel order O7")  # whole: nothing left out


def test_an_outline_keeps_signatures_docstrings_and_init() -> None:
    source = get_skeleton("library_loans").class_source
    brief = outline(source)
    tree = ast.parse(brief)
    methods = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    original = {n.name: n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)}
    assert set(methods) == set(original) and len(brief) < len(source) / 2
    assert ast.unparse(methods["__init__"]) == ast.unparse(original["__init__"])  # the state attributes, whole
    other = next(m for name, m in methods.items() if name != "__init__")
    assert isinstance(other.body[-1], ast.Expr) and other.body[-1].value.value is Ellipsis


def test_the_estimate_counts_digits_and_marks_as_tokens() -> None:
    assert estimate_text("2036-04-15") == 8 + 2 * 1  # ceil(8 + 0.8 * 2)
    assert estimate_text("hello world") == 3  # ceil(0.2 * 11)

"""Prompt templates and the ask/retry loop."""

from __future__ import annotations

import pytest

from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.skeleton.models import Attribute, Entity
from envscaler_mcp.synth.llm import PROMPTS_DIR, StepFailed, UsageMeter, ask, render_prompt, templates_digest
from envscaler_mcp.synth.skel.parsers import parse_judge
from envscaler_mcp.synth.skel.records import Operation
from envscaler_mcp.synth.skel.structured import EntitiesAnswer, accept_entities, answer_schema

CONTEXT = {
    "task": "t", "summary": "s", "introduction": "i", "rules": ["r"], "class_source": "class A: pass",
    "entities": [Entity(name="E", attributes=[Attribute(name="a")])], "helpers": "",
    "operation": Operation(name="op", description="d", kind="query"), "operation_names": ["op"],
    "state_schema": "{}", "tools": [], "must_cover": [], "blocked": [], "state": "{}", "round": 1, "rounds": 2,
    "per_tool_cap": 10, "tool": "op", "case": "positive", "method_source": "def op(self): pass",
    "arguments": "{}", "result": "{}", "is_error": False, "state_before": "{}", "facts": "f",
    "diff": "", "failures": [], "entity": Entity(name="E", description="e"), "entity_names": ["E"],
}


@pytest.mark.parametrize("name", sorted(p.stem for p in (PROMPTS_DIR / "skel").glob("*.md")))
def test_every_template_renders_into_system_and_user(name):
    messages = render_prompt(f"skel/{name}", **CONTEXT)
    assert [m.role for m in messages] == ["system", "user"]
    assert all(m.content.strip() for m in messages)


def test_missing_context_is_an_error():
    with pytest.raises(Exception, match="task"):
        render_prompt("skel/judge")


def test_digest_is_stable():
    assert templates_digest("skel") == templates_digest("skel") and len(templates_digest("skel")) == 10


@pytest.mark.anyio
async def test_ask_retries_with_the_error_then_succeeds():
    provider = MockProvider(["no idea", "# Answer\nYES"])
    meter = UsageMeter()
    answer = await ask(provider, "skel/judge", {"task": "x"}, parse_judge, meter=meter, retries=2)
    assert answer.stateful and meter.total.calls == 2
    retry_messages = provider.requests[1][0]
    assert retry_messages[-2].role == "assistant" and "could not be used" in retry_messages[-1].content
    assert "Answer" in retry_messages[-1].content


@pytest.mark.anyio
async def test_ask_gives_up_after_bounded_retries():
    provider = MockProvider(["bad"], repeat_last=True)
    meter = UsageMeter()
    with pytest.raises(StepFailed) as info:
        await ask(provider, "skel/judge", {"task": "x"}, parse_judge, meter=meter, retries=2, seat="judge")
    assert info.value.attempts == 3 and len(provider.requests) == 3 and meter.by_seat["judge"].calls == 3


@pytest.mark.anyio
async def test_a_retry_shows_only_the_last_refused_answer():
    provider = MockProvider(["bad one", "bad two", "# Answer\nYES"])
    await ask(provider, "skel/judge", {"task": "x"}, parse_judge, meter=UsageMeter(), retries=2)
    second, third = provider.requests[1][0], provider.requests[2][0]
    assert len(second) == len(third) == 4
    assert third[2].content == "bad two" and all(m.content != "bad one" for m in third)


@pytest.mark.anyio
async def test_a_model_fault_ends_the_step_with_its_kind():
    from envscaler_mcp.errors import ModelFault

    def overflow(messages, tools):
        raise ModelFault("local/x: the conversation no longer fits the model's context", "context_overflow")

    provider = MockProvider(["bad", overflow])
    with pytest.raises(StepFailed) as info:
        await ask(provider, "skel/operations", CONTEXT, parse_judge, meter=UsageMeter(), retries=2)
    assert info.value.kind == "context_overflow" and info.value.attempts == 2 and len(provider.requests) == 2


@pytest.mark.anyio
async def test_a_schema_is_sent_as_the_structured_output_constraint_of_every_attempt():
    schema = answer_schema(EntitiesAnswer)
    provider = MockProvider(["not json", '{"class_name": "Shop", "entities": [{"name": "Order", "description": "x"}], '
                                         '"rules": []}', "# Answer\nYES"])
    answer = await ask(provider, "skel/entities", CONTEXT, accept_entities, meter=UsageMeter(), schema=schema)
    assert answer.class_name == "Shop"
    assert [settings.json_schema for _, _, settings in provider.requests] == [schema, schema]
    assert "no JSON" in provider.requests[1][0][-1].content  # the concrete error fed back
    await ask(provider, "skel/judge", {"task": "x"}, lambda text: text, meter=UsageMeter())
    assert provider.requests[-1][2].json_schema is None  # free-text steps ask for no schema

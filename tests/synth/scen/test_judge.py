"""The checker model's judgement after the gate (synth scenarios --judge): a yes is noted in the scenario's
provenance notes, a no drops it; the model is shown the task, the reference calls and their changes."""

from __future__ import annotations

import json

import pytest

from envscaler_mcp.catalog.store import get_skeleton
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.scenario.models import ToolCall
from envscaler_mcp.synth.llm import UsageMeter
from envscaler_mcp.synth.scen.build import Dropped, ScenarioBuilder
from envscaler_mcp.synth.scen.records import Draft
from envscaler_mcp.synth.scen.steps import StepContext

pytestmark = pytest.mark.anyio
TASK = "Please cancel my appointment A-5001 because I am travelling that week."


def builder(verdict: str, judge: bool = True) -> tuple[ScenarioBuilder, MockProvider]:
    answer = json.dumps({"analysis": "the task names A-5001; the solution cancels A-5002", "verdict": verdict,
                         "reason": "it cancels A-5002, not the appointment the task names"})
    provider = MockProvider([answer], repeat_last=True, spec="mock/checker")
    ctx = StepContext(skeleton=get_skeleton("clinic_appointments"), generator=provider, solver=provider)
    return ScenarioBuilder(ctx, None, None, judge=judge), provider  # type: ignore[arg-type]


def draft() -> Draft:
    return Draft(title="Cancel", task=TASK, solution=[ToolCall(tool="cancel_appointment", arguments={
        "appointment_id": "A-5002", "reason": "travel"})])


async def test_a_yes_is_noted_in_the_provenance_notes() -> None:
    scenario_builder, provider = builder("yes")
    judged = await scenario_builder.judged({"x": 1}, draft(), None, UsageMeter())
    assert judged.notes[-1].startswith("checker judgement (mock/checker): the solution does exactly what")
    prompt = "\n".join(m.content for m in provider.requests[0][0])  # (messages, tools, settings)
    assert TASK in prompt and 'cancel_appointment({"appointment_id": "A-5002"' in prompt
    assert "does this solution do exactly what the task asks, and nothing else?" in prompt


async def test_a_no_drops_the_scenario_with_the_models_reason() -> None:
    scenario_builder, _ = builder("no")
    with pytest.raises(Dropped) as caught:
        await scenario_builder.judged({"x": 1}, draft(), None, UsageMeter())
    assert caught.value.step == "judge" and "cancels A-5002, not the appointment the task names" in caught.value.reason


async def test_without_judge_no_model_is_asked() -> None:
    scenario_builder, provider = builder("no", judge=False)
    assert await scenario_builder.judged({"x": 1}, draft(), None, UsageMeter()) == draft()
    assert provider.requests == []

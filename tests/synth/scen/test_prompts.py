"""Every scenario prompt renders for every bundled environment, and shows what its step needs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp.errors import ProviderError
from envscaler_mcp.providers.base import AssistantTurn, GenerationSettings, Message, ToolDef
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.scenario.models import ChecklistItem, ToolCall
from envscaler_mcp.skeleton.build import build_skeleton_from_dir
from envscaler_mcp.skeleton.models import EnvSkeleton
from envscaler_mcp.synth.llm import UsageMeter
from envscaler_mcp.synth.scen.state_step import gen_state
from envscaler_mcp.synth.scen.steps import (
    StepContext,
    gen_checklist,
    gen_solution,
    gen_task,
    gen_validators,
    prompt_version,
)

pytestmark = pytest.mark.anyio
ENVIRONMENTS = sorted(p for p in (Path(__file__).resolve().parents[3] / "environments").iterdir()
                      if (p / "environment.py").is_file())


class Capture:
    """A provider that records the prompt and stops there."""

    spec = "capture"

    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def complete(self, messages: list[Message], tools: list[ToolDef] | None = None,
                       settings: GenerationSettings | None = None) -> AssistantTurn:
        self.messages = list(messages)
        raise ProviderError("captured")

    async def aclose(self) -> None:
        pass


@pytest.fixture(scope="module", params=ENVIRONMENTS, ids=lambda p: p.name)
def skeleton(request: pytest.FixtureRequest) -> EnvSkeleton:
    # without a dual-agent report (a synthesized environment has one): every tool is offered, as the tests expect
    return build_skeleton_from_dir(request.param).model_copy(update={"quality": None})


async def prompt_of(skeleton: EnvSkeleton, step: Any, *args: Any, **kwargs: Any) -> tuple[str, str]:
    capture = Capture()
    ctx = StepContext(skeleton=skeleton, generator=capture, solver=capture)
    with pytest.raises(ProviderError, match="captured"):
        await step(ctx, *args, UsageMeter(), **kwargs)
    system, user = capture.messages
    assert system.role == "system" and user.role == "user"
    return system.content, user.content


async def test_every_prompt_renders(skeleton: EnvSkeleton) -> None:
    state = skeleton.default_state
    tool = skeleton.tools[0].name
    checklist = [ChecklistItem(id="c1", description="Has X?", validator="def check_func(final_state):\n"
                               "    return True\n", claims_change=True)]
    _, user = await prompt_of(skeleton, gen_state, 0, 5)
    assert skeleton.class_name in user and all(a.name in user for a in skeleton.state)
    _, user = await prompt_of(skeleton, gen_task, state, feedback="- the task changed nothing")
    assert all(f"- {t.name} ({t.kind})" in user for t in skeleton.tools) and "changed nothing" in user
    _, user = await prompt_of(skeleton, gen_checklist, "Do things.")
    assert "Do things." in user
    _, user = await prompt_of(skeleton, gen_validators, state, "Do things.", checklist, feedback="- c1 crashed")
    assert "- c1 [change]: Has X?" in user and "# c1\n```python\ndef check_func" in user
    _, user = await prompt_of(skeleton, gen_solution, state, "Do things.", feedback="- call 1 failed",
                              previous=[ToolCall(tool=tool)])
    assert f'"tool": "{tool}"' in user and "call 1 failed" in user
    assert prompt_version().startswith("scen-1+")


async def test_the_default_state_passes_the_state_step(skeleton: EnvSkeleton) -> None:
    answer = f"# Initial State\n```json\n{json.dumps(skeleton.default_state)}\n```"
    ctx = StepContext(skeleton=skeleton, generator=MockProvider([answer]), solver=MockProvider())
    assert await gen_state(ctx, 2, 5, UsageMeter()) == skeleton.default_state


async def test_calls_the_environment_check_saw_succeed_are_shown_to_the_task_and_the_solver(
        skeleton: EnvSkeleton) -> None:
    from envscaler_mcp.skeleton.models import QualityCheck, QualityReport

    tool = skeleton.tools[0].name
    assert "Calls seen to succeed" not in (await prompt_of(skeleton, gen_task, skeleton.default_state))[1]
    checks = [QualityCheck(tool=tool, arguments={"x": "ok"}, verdict="pass", outcome="succeeded"),
              QualityCheck(tool=tool, arguments={"x": "refused"}, verdict="pass", outcome="refused"),
              QualityCheck(tool=tool, arguments={"x": "wrong"}, verdict="fail", outcome="succeeded")]
    checked = skeleton.model_copy(update={"quality": QualityReport(method="dual-agent", checks=checks)})
    for step, args in ((gen_task, (checked.default_state,)), (gen_solution, (checked.default_state, "Do it."))):
        _, user = await prompt_of(checked, step, *args)
        assert f'- {tool}({{"x": "ok"}})' in user and '"refused"' not in user and '"wrong"' not in user


async def test_tasks_and_plans_use_only_the_tools_seen_to_work(skeleton: EnvSkeleton) -> None:
    """With a dual-agent report, a tool never seen to succeed is not offered to the task writer nor admitted in
    a reference plan; while no state change is proven, every tool is offered."""
    from envscaler_mcp.skeleton.models import QualityCheck, QualityReport
    from envscaler_mcp.synth._common_parse import AnswerFormatError
    from envscaler_mcp.synth.scen.parsers import parse_solution

    change = next(t.name for t in skeleton.tools if t.kind == "state_change")
    query = next(t.name for t in skeleton.tools if t.kind == "query")
    unproven = next(t.name for t in skeleton.tools if t.name not in (change, query))
    checks = [QualityCheck(tool=change, verdict="pass", outcome="succeeded"),
              QualityCheck(tool=query, verdict="warning", outcome="succeeded"),
              QualityCheck(tool=unproven, verdict="pass", outcome="refused")]
    checked = skeleton.model_copy(update={"quality": QualityReport(method="dual-agent", checks=checks)})
    ctx = StepContext(skeleton=checked, generator=Capture(), solver=Capture())
    assert ctx.proven() == [t.name for t in skeleton.tools if t.name in (change, query)]
    _, user = await prompt_of(checked, gen_task, checked.default_state)
    assert f"- {change} (" in user and f"- {unproven} (" not in user
    assert f"Only {change} can change this system's state" in user  # the task's changes are the proven tool's
    assert "can change this system's state" not in (await prompt_of(skeleton, gen_task, skeleton.default_state))[1]
    with pytest.raises(AnswerFormatError):
        parse_solution(json.dumps({"calls": [{"tool": unproven, "arguments": {}}]}), ctx.planning_skeleton())
    only_queries = [QualityCheck(tool=query, verdict="pass", outcome="succeeded")]
    weak = skeleton.model_copy(update={"quality": QualityReport(method="dual-agent", checks=only_queries)})
    assert StepContext(skeleton=weak, generator=Capture(), solver=Capture()).proven() is None

"""A task under the task step's 20 words is kept when it names a record of its state and asks for two kinds of
change (synth/scen/task_length.py): the 1.5B model's `it_helpdesk` task "Assign ticket 'INC-3001' to 'AG03' and
resolve it …" (14 words) was refused for its length alone, three times (docs/synth-scenarios.md, code H)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envscaler_mcp.catalog.store import get_skeleton, load_scenarios
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth.llm import StepFailed, UsageMeter
from envscaler_mcp.synth.scen.parsers import MIN_TASK_WORDS, parse_task
from envscaler_mcp.synth.scen.steps import StepContext, gen_task
from envscaler_mcp.synth.scen.task_length import change_verbs, changes_asked, short_task_ok

ROOT = Path(__file__).resolve().parents[3]
TASK = "Assign ticket 'INC-3001' to 'AG03' and resolve it with the comment 'Fixed battery issue.'"
SKELETON = get_skeleton("it_helpdesk")
STATE = SKELETON.default_state or {}
VERBS = change_verbs(t.name for t in SKELETON.tools if t.kind == "state_change")


def answer(task: str) -> str:
    return json.dumps({"analysis": "", "title": "Fix the laptop ticket", "task": task})


def test_the_recorded_short_task_is_kept_for_naming_its_records_and_asking_two_changes() -> None:
    assert len(TASK.split()) == 14 < MIN_TASK_WORDS and "INC-3001" in STATE["tickets"]
    assert changes_asked(TASK, VERBS) == {"assign", "resolve"}
    assert parse_task(answer(TASK), lambda task: short_task_ok(STATE, VERBS, task))[1] == TASK
    with pytest.raises(AnswerFormatError, match="the task has 14 words; write at least 20"):
        parse_task(answer(TASK))  # without the rule, as before


@pytest.mark.parametrize("task", [
    "Please assign ticket 'INC-3001' to agent 'AG03' today so that somebody picks it up.",  # one change
    "Assign the laptop ticket to an agent and resolve it with a comment, please.",  # names no record
    "Assign ticket 'INC-3001' to 'AG03' and resolve it.",  # 9 words
    "Ticket 'INC-3001' was assigned to 'AG03' and resolved last week by the night shift.",  # what happened
    "Do not assign ticket 'INC-3001' to 'AG03' or resolve it; only tell me who has it.",  # no change asked
    "Please don't assign 'INC-3001' to 'AG03', and never resolve it without a comment from me.",
])
def test_short_tasks_that_are_not_grounded_and_compositional_are_still_refused(task: str) -> None:
    assert len(task.split()) < MIN_TASK_WORDS and not short_task_ok(STATE, VERBS, task)


def test_a_change_asked_beside_one_declined_is_still_asked() -> None:
    task = "Assign ticket 'INC-3001' to 'AG03' and resolve it, but do not close it yet."
    assert changes_asked(task, VERBS) == {"assign", "resolve"}


def test_no_short_bundled_task_asks_for_two_kinds_of_change() -> None:
    """What the rule's reason says of the hand-written scenarios: 10 tasks under 20 words, each one change."""
    short = []
    for path in sorted((ROOT / "scenarios").glob("*.jsonl")):
        for scenario in load_scenarios(path):
            if len(scenario.task.split()) < MIN_TASK_WORDS and scenario.reference_answer is None:
                skeleton = get_skeleton(scenario.env_id)
                verbs = change_verbs(t.name for t in skeleton.tools if t.kind == "state_change")
                short.append(short_task_ok(scenario.initial_state, verbs, scenario.task))
    assert len(short) == 10 and not any(short)


@pytest.mark.anyio
@pytest.mark.parametrize("steer", [True, False])
async def test_the_task_step_keeps_it_when_steered(steer: bool) -> None:
    provider = MockProvider([answer(TASK)], repeat_last=True)
    ctx = StepContext(skeleton=SKELETON, generator=provider, solver=provider, steer=steer)
    if steer:
        assert await gen_task(ctx, STATE, UsageMeter()) == ("Fix the laptop ticket", TASK)
        assert len(provider.requests) == 1
    else:  # the recorded runs replay unsteered: as they were
        with pytest.raises(StepFailed, match="14 words"):
            await gen_task(ctx, STATE, UsageMeter())

"""What the embedded model's answers on the bundled environments needed: a validator answer that stops early
keeps what it gave and the retry asks only for the rest; a retry whose refused answer is too long for the
context shows its head and tail; a checklist of the system's tools is refused before any validator is written;
a task that names no record is rewritten before the checklist is asked for. A scripted model plays the answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest

from envscaler_mcp._usage import Usage
from envscaler_mcp.catalog.store import get_skeleton, load_skeleton
from envscaler_mcp.errors import ProviderError
from envscaler_mcp.providers.base import AssistantTurn, Message
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.scenario.models import ChecklistItem
from envscaler_mcp.synth._common_fit import cut_to_fit, estimate_text, estimate_tokens
from envscaler_mcp.synth.llm import StepFailed, UsageMeter
from envscaler_mcp.synth.scen.build import REPAIR_ROUNDS, Dropped, ScenarioBuilder
from envscaler_mcp.synth.scen.state_step import gen_state
from envscaler_mcp.synth.scen.steps import StepContext, gen_checklist, gen_validators

pytestmark = pytest.mark.anyio
MINI_SHOP = load_skeleton(Path(__file__).resolve().parents[2] / "fixtures" / "mini_shop" / "skeleton.json")
STATE = MINI_SHOP.default_state or {}
TASK = "Cancel order O-1002 for bob and add the note 'Customer changed mind' to it."
ITEMS = [ChecklistItem(id="c1", description="Has order O-1002 been cancelled?"),
         ChecklistItem(id="c2", description="Has order O-1002 got the note 'Customer changed mind'?"),
         ChecklistItem(id="c3", description="Has order O-1001 stayed pending?", claims_change=False)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def section(item_id: str, expr: str) -> str:
    return f"# {item_id}\n```python\ndef check_func(final_state):\n    return {expr}\n```\n"


C1 = section("c1", 'final_state.get("orders", {}).get("O-1002", {}).get("status") == "cancelled"')
C2 = section("c2", '"Customer changed mind" in final_state.get("orders", {}).get("O-1002", {}).get("notes", [])')
C3 = section("c3", 'final_state.get("orders", {}).get("O-1001", {}).get("status") == "pending"')
WRONG_KEY = section("c2", 'final_state.get("history") == []')  # the state has no 'history'


def context(provider: MockProvider, retries: int = 2) -> StepContext:
    return StepContext(skeleton=MINI_SHOP, generator=provider, solver=provider, retries=retries)


def checklist_lines(messages: list[Message]) -> list[str]:
    return [line for line in messages[-1].content.splitlines() if line.startswith("- c")]


async def test_a_validator_answer_that_stops_early_keeps_its_sections_and_asks_for_the_rest() -> None:
    provider = MockProvider([C1, C2 + C3])  # the model writes one section, then the other two
    items = await gen_validators(context(provider), STATE, TASK, ITEMS, UsageMeter())
    assert [i.validator for i in items] == [s.split("```python\n")[1].split("```")[0] for s in (C1, C2, C3)]
    first, second = (r[0] for r in provider.requests)
    assert [line[:4] for line in checklist_lines(first)] == ["- c1", "- c2", "- c3"]
    assert [line[:4] for line in checklist_lines(second)] == ["- c2", "- c3"]  # only the missing ones
    assert "The validators of c1 are written already" in second[-1].content and len(second) == 2
    # no answer carried back: shorter than a retry showing the first answer (what was sent before)
    assert estimate_tokens(second) < estimate_tokens(first) + estimate_text(C1)


async def test_a_refused_validator_is_asked_for_alone_with_the_reason() -> None:
    provider = MockProvider([C1 + WRONG_KEY + C3, C2])
    items = await gen_validators(context(provider), STATE, TASK, ITEMS, UsageMeter())
    assert "Customer changed mind" in (items[1].validator or "") and "O-1001" in (items[2].validator or "")
    second = provider.requests[1][0]
    assert [line[:4] for line in checklist_lines(second)] == ["- c2"]
    assert "c2: it reads 'history' from the state, which has no such key" in second[-1].content


async def test_retries_count_only_the_answers_that_gave_nothing() -> None:
    # one section per answer (as ecommerce_orders' answers came): three answers, none of them a failure
    provider = MockProvider([C1, C2, C3])
    items = await gen_validators(context(provider, retries=1), STATE, TASK, ITEMS, UsageMeter())
    assert all(i.validator for i in items) and len(provider.requests) == 3


async def test_a_model_that_never_gives_a_section_is_dropped_with_the_reason() -> None:
    provider = MockProvider(["I would check the order's status."], repeat_last=True)
    with pytest.raises(StepFailed) as failed:
        await gen_validators(context(provider), STATE, TASK, ITEMS, UsageMeter())
    assert failed.value.reason.startswith("missing validator section(s): '# c1', '# c2', '# c3'")
    assert len(provider.requests) == 3  # the first answer and two retries, as before


async def test_a_validator_refused_every_time_still_drops_the_item() -> None:
    provider = MockProvider([C1 + WRONG_KEY + C3, WRONG_KEY], repeat_last=True)
    with pytest.raises(StepFailed) as failed:
        await gen_validators(context(provider), STATE, TASK, ITEMS, UsageMeter())
    assert failed.value.reason == ("validator(s) refused: c2: it reads 'history' from the state, which has no "
                                   "such key (its keys: orders)")
    assert len(provider.requests) == 1 + 3  # the partial answer costs no retry; then three for c2 alone


def test_a_cut_answer_keeps_its_head_and_tail_and_says_so() -> None:
    text = "HEAD" + "1234567890" * 500 + "TAIL"
    cut = cut_to_fit(text, 300)
    assert estimate_text(cut) <= 300 and cut.startswith("HEAD") and cut.endswith("TAIL")
    assert "characters of this answer left out here, to fit the model's context" in cut
    assert cut_to_fit("short", 300) == "short"


async def test_a_retry_with_a_long_refused_answer_fits_the_context() -> None:
    """clinic_appointments' first state answer stopped at its 4,096 tokens; the retry showing it back needed
    about 6,829 tokens of the 4,096 left for a prompt, so the item was dropped without a second answer."""
    skeleton = get_skeleton("clinic_appointments")
    window = 8192
    cut_off = '{"patients": {' + ", ".join(f'"PT-{n}": {{"patient_id": "PT-{n}"}}' for n in range(1000, 1300))
    good = json.dumps(skeleton.default_state)
    provider = MockProvider([AssistantTurn(message=Message(role="assistant", content=cut_off), finish_reason="length",
                                           usage=Usage(output_tokens=4096)), good], context_tokens=window)
    ctx = StepContext(skeleton=skeleton, generator=provider, solver=provider)
    state = await gen_state(ctx, 0, 1, UsageMeter())
    assert state == skeleton.default_state
    messages, _, settings = provider.requests[1]
    assert estimate_text(cut_off) > window // 2  # whole, it cannot be shown beside any prompt and the answer room
    assert estimate_tokens(messages) + (settings.max_tokens or 0) <= window
    shown = messages[-2].content
    assert shown.startswith(cut_off[:200]) and shown.endswith(cut_off[-200:]) and "left out here" in shown
    assert "cut off after 4096 tokens, at the length limit" in messages[-1].content


async def test_a_checklist_of_tools_is_refused_before_any_validator() -> None:
    tools = json.dumps({"analysis": "", "items": [
        {"change": True, "fact": "Has cancel_order tool for cancelling orders"},
        {"change": True, "fact": "Has a function to add a note"}]})
    mixed = json.dumps({"analysis": "", "items": [
        {"change": True, "fact": "Has order O-1002 been cancelled?"},
        {"change": True, "fact": "Has add_note tool for adding notes"},
        {"change": True, "fact": "Has order O-1002 got the note 'Customer changed mind'?"}]})
    provider = MockProvider([tools, mixed])
    items = await gen_checklist(context(provider), TASK, UsageMeter())
    assert [i.description for i in items] == ["Has order O-1002 been cancelled?",
                                              "Has order O-1002 got the note 'Customer changed mind'?"]
    assert [i.id for i in items] == ["c1", "c2"]
    retry = provider.requests[1][0][-1].content
    assert "'Has cancel_order tool for cancelling orders' is about a tool or function of the system" in retry


def task_answer(task: str) -> str:
    return json.dumps({"analysis": "", "title": "Orders", "task": task})


UNGROUNDED = ("As a support agent I need to manage the orders of the shop: cancel the ones customers no longer "
              "want and add notes explaining what happened, so that the records stay accurate for everyone.")
GROUNDED = ("Bob asked us to cancel his order O-1002 because he changed his mind; please cancel it and add the "
            "note 'Customer changed mind' so the team knows why it was cancelled.")


def builder(provider: MockProvider) -> ScenarioBuilder:
    # neither a server nor the sandbox is reached before the checklist: a task naming nothing stops there
    return ScenarioBuilder(context(provider), cast(Any, None), cast(Any, None))


async def test_a_task_naming_no_record_is_rewritten_before_the_checklist() -> None:
    provider = MockProvider([task_answer(UNGROUNDED), task_answer(GROUNDED)])
    with pytest.raises(ProviderError, match="script has 2 turns"):  # the third call: the checklist
        await builder(provider).build(STATE, UsageMeter())
    second, third = provider.requests[1][0], provider.requests[2][0]
    assert "the task names no record of the initial state" in second[-1].content
    # steered: told the ids of the records it was offered, the failed task not shown (a small model copies it)
    assert 'write "O-1001" in the task text' in second[-1].content and UNGROUNDED[:60] not in second[-1].content
    assert third[0].content.startswith("You split a task into a checklist") and GROUNDED in third[-1].content


async def test_a_task_that_never_names_a_record_is_dropped_at_the_task_step() -> None:
    provider = MockProvider([task_answer(UNGROUNDED)], repeat_last=True)
    with pytest.raises(Dropped) as dropped:
        await builder(provider).build(STATE, UsageMeter())
    assert dropped.value.step == "task" and "names no record" in dropped.value.reason
    assert len(provider.requests) == 1 + REPAIR_ROUNDS  # no checklist, validators or plan asked for


async def first_state_prompt(env_id: str, window: int | None) -> str:
    provider = MockProvider([], context_tokens=window)
    with pytest.raises(ProviderError):
        await gen_state(StepContext(skeleton=get_skeleton(env_id), generator=provider, solver=provider), 0, 1,
                        UsageMeter())
    return provider.requests[0][0][0].content


async def test_the_state_step_asks_for_as_many_records_as_its_answer_room_holds() -> None:
    """clinic_appointments' first state answer (7 collections, asked for 4-8 records each) stopped at 4,096."""
    assert "several records per entity (3-4)," in await first_state_prompt("clinic_appointments", 8192)
    assert "several records per entity (4-8)," in await first_state_prompt("clinic_appointments", None)
    example = get_skeleton("clinic_appointments").default_state or {}
    most = {name: dict(list(records.items())[:4]) for name, records in example.items() if isinstance(records, dict)}
    assert sum(estimate_text(json.dumps(r, indent=1)) for r in most.values()) <= 4096  # 4 of each fit the answer

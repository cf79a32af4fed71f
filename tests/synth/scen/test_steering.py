"""The steered pipeline (ScenOptions.steer): tasks asked about chosen records, checklist items kept across
retries, refused plans corrected with the records they name. Every model answer here is hand-written
(tests/synth/fixtures/scen_answers/, or written inline); each case is run with steering off too, where the same
answers drop the item."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp._io import iter_jsonl
from envscaler_mcp.catalog.store import load_scenarios
from envscaler_mcp.providers.base import GenerationSettings, Message, ToolDef
from envscaler_mcp.providers.cache import request_key
from envscaler_mcp.providers.mock import MockProvider
from envscaler_mcp.scenario.models import ChecklistItem
from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth.llm import REPEAT_TEMPERATURE, StepFailed, UsageMeter, ask
from envscaler_mcp.synth.scen.anchors import example_items, named_records, records, task_anchors
from envscaler_mcp.synth.scen.build import REPAIR_ROUNDS
from envscaler_mcp.synth.scen.checklist_fix import Collector, already_true
from envscaler_mcp.synth.scen.plan_fix import PLAN_ROUNDS
from envscaler_mcp.synth.skel.parsers import parse_judge

from ..fixtures.scen_router import ANSWERS, ScenRouter

pytestmark = pytest.mark.anyio

STATE = json.loads((ANSWERS / "mini_shop" / "good" / "states.md").read_text().split("```json")[1].split("```")[0])


def dropped(out: Path) -> list[dict[str, Any]]:
    path = out / "_work" / "mini_shop" / "dropped.jsonl"
    return [r for _, r in iter_jsonl(path)] if path.exists() else []


# --- which records a task is asked about -------------------------------------------------------------------

def test_task_anchors_are_open_records_rotating_with_the_item() -> None:
    picked = [task_anchors(STATE, i)[0].record_id for i in range(4)]
    assert picked == ["O-2001", "O-2002", "O-2003", "O-2001"]  # delivered and cancelled orders never offered
    state = {"orders": STATE["orders"], "customers": {"C1": {"name": "Marta"}, "C2": {"name": "Jonas"}},
             "today": "2026-11-28"}
    assert [a.collection for a in task_anchors(state, 0)] == ["orders"]  # the collection whose records have a status
    assert task_anchors({"today": "x", "orders": {"O-1": {"status": "cancelled"}}}, 0) == []


def test_task_anchors_come_first_from_what_the_changing_tools_take() -> None:
    state = {"members": {"M-1": {"member_id": "M-1", "status": "active"}},
             "loans": {"L-1": {"loan_id": "L-1", "member_id": "M-1", "status": "returned"},
                       "L-2": {"loan_id": "L-2", "member_id": "M-1", "status": "active"}},
             "books": {"B-1": {"isbn": "B-1", "title": "Dune"}}}
    renew = {"properties": {"loan_id": {"type": "string"}}}
    checkout = {"properties": {"member_id": {"type": "string"}, "loan_id": {"type": "string"}}}
    assert [a.record_id for a in task_anchors(state, 0, [renew, checkout])] == ["L-2", "M-1"]
    assert [a.record_id for a in task_anchors(state, 0)] == ["M-1", "L-2"]  # no tools known: by status alone
    assert [a.record_id for a in task_anchors(state, 0, [renew], limit=3)] == ["L-2", "M-1"]  # books: no status, no tool


def test_records_of_lists_and_named_records() -> None:
    state = {"tickets": [{"ticket_id": "INC-1", "status": "open"}, {"note": "no id"}], **STATE}
    assert [(a.collection, a.record_id) for a in records(state)][:2] == [("tickets", "INC-1"), ("orders", "O-2001")]
    shown = named_records(state, {"order_id": "O-2003", "items": [{"ticket": "INC-1"}], "flag": True})
    assert [a.record_id for a in shown] == ["INC-1", "O-2003"]
    assert '"status": "shipped"' in shown[1].line()


class GroundingModel(ScenRouter):
    """A hand-written model that names a record only when the prompt tells it which: the `unnamed` task
    otherwise (a task about "my pending order" fits two of the state's orders)."""

    def __call__(self, messages: list[Message], tools: list[ToolDef]) -> str:
        answer = super().__call__(messages, tools)
        if self.prompts[-1][0] == "task" and "- orders O-2001: " not in messages[-1].content:
            return (ANSWERS / "mini_shop" / "unnamed" / "task.0.md").read_text()
        return answer


@pytest.mark.parametrize("steer", [True, False])
async def test_a_task_asked_about_chosen_records_names_one(run: Any, steer: bool) -> None:
    router = GroundingModel("mini_shop")
    _, _, out = await run("mini_shop", router=router, steer=steer)
    task_prompts = [text for step, text in router.prompts if step == "task"]
    if steer:
        [sc] = load_scenarios(out / "mini_shop.jsonl")
        assert "O-2001" in sc.task and len(task_prompts) == 1
        assert "Write the task about this record" in task_prompts[0]
    else:  # the same model, not told which record: every rewrite names none, and the item is dropped
        [record] = dropped(out)
        assert record["step"] == "task" and "names no record" in record["reason"]
        assert len(task_prompts) == 1 + REPAIR_ROUNDS and "Write the task about" not in task_prompts[0]


# --- checklists kept across retries ------------------------------------------------------------------------

@pytest.mark.parametrize("steer", [True, False])
async def test_usable_checklist_items_are_kept_across_retries(run: Any, steer: bool) -> None:
    _, router, out = await run("mini_shop", "tool_items", steer=steer)
    prompts = [text for step, text in router.prompts if step == "checklist"]
    if steer:
        [sc] = load_scenarios(out / "mini_shop.jsonl")
        assert [c.description for c in sc.checklist] == [
            "Has order O-2001 been cancelled?", 'Has the note "Cancelled: wrong size" been recorded on order O-2001?']
        assert router.calls["checklist"] == 2 and "A good item names a record" in prompts[0]
        assert re.search(r"e\.g\.\n\"Has orders \S+ status '", prompts[0]) and "AG-3" not in prompts[0]  # its own
        assert "kept already (do not repeat them): [change] Has order O-2001 been cancelled?" in prompts[1]
        assert "about a tool" in prompts[1] and "give 1 more item(s) only" in prompts[1]
    else:  # each answer alone has one usable item: refused three times, dropped
        [record] = dropped(out)
        assert record["step"] == "checklist" and "has 1 item(s)" in record["reason"]
        assert "A good item names a record" not in prompts[0]


async def test_a_model_that_only_lists_tools_still_drops_with_the_reason(run: Any) -> None:
    _, router, out = await run("mini_shop", "never_items")
    [record] = dropped(out)
    assert record["step"] == "checklist" and router.calls["checklist"] == 3
    assert "refused: 'Has a cancel_order tool" in record["reason"] and "about a tool" in record["reason"]
    assert not (out / "mini_shop.jsonl").exists()


def _answer(*facts: tuple[bool, str]) -> str:
    return json.dumps({"analysis": "", "items": [{"change": c, "fact": f} for c, f in facts]})


def test_an_item_visibly_true_on_the_initial_state_is_refused_before_any_validator() -> None:
    collect = Collector(STATE)
    with pytest.raises(AnswerFormatError) as refused:
        collect(_answer((True, "Has order O-2001 status 'cancelled'?"), (True, "Has order O-2002 status 'pending'?")))
    assert "O-2002 already has status 'pending'" in str(refused.value)
    items = collect(_answer((True, "Has order O-2003 a note 'Leave it at number 12'?")))
    assert [(i.id, i.description) for i in items] == [("c1", "Has order O-2001 status 'cancelled'?"),
                                                      ("c2", "Has order O-2003 a note 'Leave it at number 12'?")]


@pytest.mark.parametrize("fact, change", [
    ("Has order O-2001 status 'cancelled'?", True),  # a value the record does not have yet
    ("Has order O-2002 status 'pending'?", False),  # a [keep] item may hold initially
    ("Has order O-2002 moved from 'pending' to 'cancelled'?", True),  # two values: not read
    ("Has order O-2002 or O-2001 status 'pending'?", True),  # two records: not read
    ("Has order O-2002 a customer 'pending'?", True),  # the field holding the value is not named
])
def test_the_cheap_true_initially_check_reads_only_clear_items(fact: str, change: bool) -> None:
    item = ChecklistItem(id="c1", description=fact, claims_change=change)
    assert already_true(item, records(STATE)) is None


# --- plans corrected with the refusal ---------------------------------------------------------------------

@pytest.mark.parametrize("steer", [True, False])
async def test_a_refused_plan_is_corrected_with_the_records_it_names(run: Any, steer: bool) -> None:
    _, router, out = await run("mini_shop", "repair_solution", steer=steer)
    [sc] = load_scenarios(out / "mini_shop.jsonl")
    assert [c.arguments["order_id"] for c in sc.reference_solution] == ["O-2001", "O-2003"]
    second = [text for step, text in router.prompts if step == "solution"][1]
    assert router.calls["solution"] == 2 and "only pending orders can be cancelled" in second
    if steer:  # corrected before the gate, shown the order as it is: no gate round spent
        assert "The records this call names, as they are just before it (in the initial state):" in second
        assert '- orders O-2003: {"order_id": "O-2003"' in second and '"status": "shipped"' in second
        [note] = [n for n in sc.provenance.notes if n.startswith("reference plan corrected")]
        assert note.startswith("reference plan corrected (round 1 of 2) after a refused call: call 1 cancel_order")
    else:
        assert "The records this call names" not in second
        assert any(note.startswith("solution regenerated after: replay") for note in sc.provenance.notes)


async def test_a_plan_never_allowed_still_drops_after_bounded_rounds(run: Any) -> None:
    _, router, out = await run("mini_shop", "refused_always")
    [record] = dropped(out)
    assert record["step"] == "gate" and "only pending orders can be cancelled" in record["reason"]
    assert router.calls["solution"] == (1 + REPAIR_ROUNDS) * (1 + PLAN_ROUNDS)


# --- a repeated request sampled afresh --------------------------------------------------------------------

@pytest.mark.parametrize("vary", [True, False])
async def test_a_request_repeated_word_for_word_is_sampled_with_its_own_seed(vary: bool) -> None:
    provider = MockProvider(["bad"], repeat_last=True)  # hand-written: the model repeats its refused answer
    meter = UsageMeter()
    with pytest.raises(StepFailed):
        await ask(provider, "skel/judge", {"task": "x"}, parse_judge, meter=meter, retries=3, vary_repeats=vary,
                  settings=GenerationSettings(temperature=0.0, max_tokens=64))
    sent = [(s.temperature, s.seed) for _, _, s in provider.requests]
    keys = {request_key("mock", m, [], s) for m, _, s in provider.requests}
    if vary:  # the first retry is new; once the answer is a copy, the retries go warm, each with a seed of its own
        assert sent == [(0.0, None), (0.0, None), (REPEAT_TEMPERATURE, 1), (REPEAT_TEMPERATURE, 2)]
        assert len(keys) == 4
    else:
        assert provider.requests[1][0] == provider.requests[2][0] == provider.requests[3][0]  # the same messages
        assert sent == [(0.0, None)] * 4 and len(keys) == 2


def copying_model(messages: list[Message], tools: list[ToolDef]) -> str:
    """Hand-written: copies a refused answer it is shown; told of the refusal without it, it writes a new one."""
    if len(messages) > 1 and messages[-2].role == "assistant":
        return messages[-2].content
    return "# Answer\nYES" if "could not be used" in messages[-1].content else "# Answer\nmaybe"


@pytest.mark.parametrize("vary", [True, False])
async def test_a_copied_refused_answer_is_not_shown_again(vary: bool) -> None:
    provider = MockProvider([copying_model], repeat_last=True)
    meter = UsageMeter()
    call = ask(provider, "skel/judge", {"task": "x"}, parse_judge, meter=meter, retries=2, vary_repeats=vary,
               settings=GenerationSettings(temperature=0.7, max_tokens=64))
    if not vary:  # the refused answer shown in every retry: copied each time, and the step fails
        with pytest.raises(StepFailed):
            await call
        assert [m[-2].content for m, _, _ in provider.requests[1:]] == ["# Answer\nmaybe"] * 2
        return
    assert (await call).stateful
    third = provider.requests[2][0]
    assert [m.role for m in third] == [m.role for m in provider.requests[0][0]]  # no assistant turn to copy
    assert "# Answer" not in third[-1].content.split("could not be used")[1]  # the answer itself not shown
    with pytest.raises(AnswerFormatError) as refused:
        parse_judge("# Answer\nmaybe")
    error = str(refused.value)
    assert f"could not be used: {error}" in third[-1].content and "given 2 times word for word" in third[-1].content
    assert (provider.requests[2][2].temperature, provider.requests[2][2].seed) == (REPEAT_TEMPERATURE, 1)


async def test_a_repeat_across_calls_of_one_item_is_varied_too() -> None:
    provider = MockProvider(["# Answer\nYES"], repeat_last=True)
    meter = UsageMeter()
    for _ in range(2):  # e.g. a repair round asking word for word what the round before asked
        await ask(provider, "skel/judge", {"task": "x"}, parse_judge, meter=meter, vary_repeats=True,
                  settings=GenerationSettings(temperature=0.9, max_tokens=64))
    await ask(provider, "skel/judge", {"task": "x"}, parse_judge, meter=UsageMeter(), vary_repeats=True,
              settings=GenerationSettings(temperature=0.9, max_tokens=64))  # another item: its first request
    assert [(s.temperature, s.seed) for _, _, s in provider.requests] == [(0.9, None), (0.9, 1), (0.9, None)]


# --- items already true on the initial state: a checklist repair -------------------------------------------

VALIDATORS = {  # a hand-written model that writes the right validator for each item's text
    "Has order O-2001 been cancelled?": 'final_state["orders"]["O-2001"]["status"] == "cancelled"',
    "Has order O-2002 kept its delivery note?": '"Call before delivery" in final_state["orders"]["O-2002"]["notes"]',
    "Has order O-2004 stayed delivered?": 'final_state["orders"]["O-2004"]["status"] == "delivered"',
    "Has order O-2005 stayed cancelled?": 'final_state["orders"]["O-2005"]["status"] == "cancelled"',
    'Has the note "Cancelled: wrong size" been recorded on order O-2001?':
        '"Cancelled: wrong size" in final_state["orders"]["O-2001"]["notes"]',
    'Has the note "Leave the parcel with the neighbour at number 12" been added to order O-2003?':
        '"Leave the parcel with the neighbour at number 12" in final_state["orders"]["O-2003"]["notes"]',
}


class ItemWriter(ScenRouter):
    """Answers the validators step from the items listed in its prompt (`- c2 [change]: text`)."""

    def __init__(self, env: str, case: str = "good", table: dict[str, str] | None = None) -> None:
        super().__init__(env, case)
        self.table = VALIDATORS if table is None else table

    def __call__(self, messages: list[Message], tools: list[ToolDef]) -> str:
        answer = super().__call__(messages, tools)
        if self.prompts[-1][0] != "validators":
            return answer
        listed = [line[2:].split(": ", 1) for line in messages[-1].content.splitlines()
                  if line.startswith("- c") and "]: " in line]
        return "\n\n".join(f"# {head.split()[0]}\n```python\ndef check_func(final_state):\n"
                           f"    return {self.table[text]}\n```" for head, text in listed if text in self.table)


@pytest.mark.parametrize("steer", [True, False])
async def test_held_items_of_a_refused_plan_are_replaced_by_a_checklist_repair(run: Any, steer: bool) -> None:
    router = ItemWriter("mini_shop", "held_items")  # and three plans in a row cancel the shipped order
    _, _, out = await run("mini_shop", router=router, steer=steer)
    if steer:  # the gate saw the plan refused and three items held: items replaced, plan rewritten, kept
        [sc] = load_scenarios(out / "mini_shop.jsonl")
        assert [c.description for c in sc.checklist] == ["Has order O-2001 been cancelled?", *list(VALIDATORS)[4:]]
        assert all(c.claims_change for c in sc.checklist)
        assert [c.arguments["order_id"] for c in sc.reference_solution] == ["O-2001", "O-2003"]
        assert router.calls["checklist"] == 2 and router.calls["validators"] == 2
        assert router.calls["solution"] == 1 + PLAN_ROUNDS + 1
        repair = [text for step, text in router.prompts if step == "checklist"][1]
        assert "kept already (do not repeat them): [change] Has order O-2001 been cancelled?" in repair
        assert "'Has order O-2004 stayed delivered?': its check already holds on the initial state" in repair
        validators = [text for step, text in router.prompts if step == "validators"][1]
        assert "- c2 [change]" in validators and "- c1 " not in validators  # validators only for the new items
        assert any(n.startswith("checklist items c2, c3, c4 (already true initially) regenerated")
                   for n in sc.provenance.notes)
    else:  # with no clean replay nothing can be re-marked or pruned: dropped after the repair rounds
        [record] = dropped(out)
        assert record["step"] == "gate" and "only pending orders can be cancelled" in record["reason"]
        assert "already True on the initial state" in record["reason"] and router.calls["checklist"] == 1


async def test_a_model_that_keeps_listing_held_items_falls_back_to_re_marking_them(run: Any) -> None:
    router = ItemWriter("mini_shop", "held_always")
    _, _, out = await run("mini_shop", router=router)
    [sc] = load_scenarios(out / "mini_shop.jsonl")  # once the plan replays, the last try re-marks them [keep]
    assert [c.claims_change for c in sc.checklist] == [True, False, False, False]
    assert router.calls["checklist"] == 2  # one checklist repair, no more
    assert any("re-marked [keep]" in n for n in sc.provenance.notes)


def test_the_example_items_are_made_of_the_state_s_own_records() -> None:
    state = {"tickets": {"T1": {"ticket_id": "T1", "status": "open", "title": "VPN"},
                         "T2": {"ticket_id": "T2", "status": "closed", "title": "Mail"}},
             "agents": [{"id": "A1", "status": "active"}, {"id": "A2", "status": "active"}]}
    # a value another record has, so the item is not true already; agents all alike give none
    assert example_items(state) == ["Has tickets T1 status 'closed'?"]
    no_status = {"users": {"U1": {"email": "a@x.example"}, "U2": {"email": "b@x.example"}}}
    assert example_items(no_status) == ["Has users U1 email 'b@x.example'?"]  # other text fields where no status
    assert example_items({}) == [] and example_items({"tickets": {"T1": state["tickets"]["T1"]}}) == []

"""A task asked again, told what to name: a task about a record the rules no longer let change is asked about a
record that can take the change (synth/scen/retarget.py), and a task that names no record is told the ids of the
records it was offered. Every model answer here is hand-written (tests/synth/fixtures/scen_answers/mini_shop/
retarget/: a task cancelling Marta's shipped order O-2003, while O-2001 and O-2002 are still pending; unnamed/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp._io import iter_jsonl
from envscaler_mcp.catalog.store import load_scenarios
from envscaler_mcp.launch import LaunchedServer
from envscaler_mcp.providers.base import Message, ToolDef
from envscaler_mcp.scenario.models import ToolCall
from envscaler_mcp.synth.scen.anchors import records
from envscaler_mcp.synth.scen.build import REPAIR_ROUNDS
from envscaler_mcp.synth.scen.retarget import misnamed, names_id, swapped

from ..fixtures.scen_router import ANSWERS, STEPS, ScenRouter
from .test_steering import STATE

pytestmark = pytest.mark.anyio

BAD_TASK = "please cancel my order O-2003"
CHANGERS = {"cancel_order", "add_note"}


def dropped(out: Path) -> list[dict[str, Any]]:
    path = out / "_work" / "mini_shop" / "dropped.jsonl"
    return [r for _, r in iter_jsonl(path)] if path.exists() else []


class MisnamingModel(ScenRouter):
    """A hand-written model whose task cancels shipped order O-2003 (and whose checklist, validators and plan
    follow that task) until a task prompt says the rules do not let that record change; `corrects=False`: it
    never writes another task."""

    def __init__(self, corrects: bool) -> None:
        super().__init__("mini_shop", "retarget")
        self.corrects = corrects

    def __call__(self, messages: list[Message], tools: list[ToolDef]) -> str:
        text = "\n".join(m.content for m in messages)
        step = next((s for phrase, s in STEPS.items() if phrase in messages[0].content), None)
        if step == "task":
            bad = not (self.corrects and "which the rules do not let change" in text)
        else:
            bad = BAD_TASK in text
        self.case = "retarget" if bad else "good"
        return super().__call__(messages, tools)


def task_prompts(router: ScenRouter) -> list[str]:
    return [text for step, text in router.prompts if step == "task"]


@pytest.fixture
def no_recast(monkeypatch: pytest.MonkeyPatch) -> None:
    """The path a task takes when no peer fits a recast by code (test_recast.py): it is asked again."""
    monkeypatch.setattr("envscaler_mcp.synth.scen.build.recast", lambda *args: None)


@pytest.mark.parametrize("steer", [True, False])
@pytest.mark.usefixtures("no_recast")
async def test_a_task_about_a_record_the_rules_lock_is_asked_again_about_one_they_allow(run: Any, steer: bool
                                                                                      ) -> None:
    router = MisnamingModel(corrects=True)
    _, _, out = await run("mini_shop", router=router, steer=steer)
    prompts = task_prompts(router)
    if steer:
        [sc] = load_scenarios(out / "mini_shop.jsonl")
        assert "O-2001" in sc.task and BAD_TASK not in sc.task  # the task asked again
        assert any(c.tool == "cancel_order" and c.arguments["order_id"] == "O-2001" for c in sc.reference_solution)
        assert len(prompts) == 2
        assert "orders O-2003, which the rules do not let change" in prompts[1]
        assert "only pending orders can be cancelled" in prompts[1]  # the refusal, as the reason
        assert "- orders O-2001: " in prompts[1] and "  - orders O-2002: " in prompts[1]  # the takers
        assert '{"order_id": "O-2003"' not in prompts[1]  # the refused call is not shown to be copied
        assert "the task that failed" not in prompts[1] and BAD_TASK not in prompts[1]  # nor the task
        assert router.calls["solution"] == 2  # the misnamed task's plan was not corrected: its task was
        assert any("task rewritten after: task: the task names orders O-2003" in n for n in sc.provenance.notes)
    else:  # never asked again: every plan cancels O-2003, refused, and the item is dropped at the gate
        [record] = dropped(out)
        assert record["step"] == "gate" and "only pending orders can be cancelled" in record["reason"]
        assert len(prompts) == 1


@pytest.mark.usefixtures("no_recast")
async def test_a_model_that_keeps_naming_the_locked_record_drops_with_that_reason(run: Any) -> None:
    router = MisnamingModel(corrects=False)
    _, _, out = await run("mini_shop", router=router)
    [record] = dropped(out)
    assert record["step"] == "task"
    assert record["reason"].startswith("the task names orders O-2003, which the rules do not let change")
    assert "accepted on orders O-2001, O-2002" in record["reason"]
    assert f"after {REPAIR_ROUNDS} repair round(s)" in record["reason"]
    assert len(task_prompts(router)) == 1 + REPAIR_ROUNDS


async def test_misnamed_probes_peers_on_the_real_server(servers: dict[str, LaunchedServer]) -> None:
    episodes = servers["mini_shop"].episode
    task = "Please cancel my order O-2003 and record the reason."
    plan = [ToolCall(tool="get_order", arguments={"order_id": "O-2003"}),
            ToolCall(tool="cancel_order", arguments={"order_id": "O-2003", "reason": "wrong size"})]
    wrong = await misnamed(task, plan, STATE, episodes, CHANGERS, by_id_only=True)
    assert wrong is not None and wrong.record.record_id == "O-2003"
    assert [a.record_id for a in wrong.takers] == ["O-2001", "O-2002"]  # the pending ones; delivered O-2004 not
    assert wrong.call.startswith("call 2 cancel_order(") and "only pending" in wrong.refusal
    # a task that does not name the record by id: only once its plan's corrections are refused too
    assert await misnamed("Cancel my latest order.", plan, STATE, episodes, CHANGERS, by_id_only=True) is None
    assert await misnamed("Cancel my latest order.", plan, STATE, episodes, CHANGERS, by_id_only=False) is not None
    # the task names a record the call is accepted on: the plan changed the wrong one of its records
    both = "Please cancel my order O-2001 and add a note to O-2003."
    assert await misnamed(both, plan, STATE, episodes, CHANGERS, by_id_only=False) is None
    # an accepted plan, a refused query, and a record no peer can stand in for: nothing to retarget
    assert await misnamed(task, plan[:1], STATE, episodes, CHANGERS, by_id_only=False) is None
    missing = [ToolCall(tool="get_order", arguments={"order_id": "O-9999"})]
    assert await misnamed(task, missing, STATE, episodes, CHANGERS, by_id_only=False) is None
    alone = {"orders": {k: v for k, v in STATE["orders"].items() if v["status"] != "pending"}}
    # no order of that state can be cancelled: the task is asked for another kind of change, at once when the
    # task and the refusal both name the order by id, else once the plan's corrections failed
    unnamed = "Please cancel my latest order and record the reason."
    assert await misnamed(unnamed, plan, alone, episodes, CHANGERS, by_id_only=True) is None
    assert await misnamed(unnamed, plan, alone, episodes, CHANGERS, by_id_only=False) is not None
    assert await misnamed(task, plan, alone, episodes, CHANGERS, by_id_only=True) is not None
    locked = await misnamed(task, plan, alone, episodes, CHANGERS, by_id_only=False)
    assert locked is not None and locked.takers == [] and sorted(locked.tried) == ["O-2004", "O-2005"]
    assert locked.reason().startswith("the task asks for a change no record of this state allows: call 2 "
                                      "cancel_order(") and locked.anchors() is None
    assert "a change of another kind, made with another tool than cancel_order" in locked.feedback()
    assert "orders O-2003 refused it" in locked.feedback() and "cancel_order(" not in locked.feedback()
    bigger = {"orders": {**alone["orders"], **{f"O-3{i:03d}": {**STATE["orders"]["O-2004"], "order_id": f"O-3{i:03d}"}
                                               for i in range(6)}}}
    assert await misnamed(task, plan, bigger, episodes, CHANGERS, by_id_only=False) is None  # not every peer tried


def test_ids_named_as_words_and_swapped_in_arguments() -> None:
    assert names_id("cancel O-2003 today", "O-2003") and not names_id("cancel O-20031", "O-2003")
    assert not names_id("cancel XO-2003", "O-2003")
    assert swapped({"a": "O-1", "b": ["O-1", "O-12"], "c": {"d": "O-1"}, "n": 1}, "O-1", "O-2") == \
        {"a": "O-2", "b": ["O-2", "O-12"], "c": {"d": "O-2"}, "n": 1}
    assert len(records(STATE)) >= 5


class IdsOnRequestModel(ScenRouter):
    """A hand-written model whose task names no record until its prompt spells out the id to write."""

    def __call__(self, messages: list[Message], tools: list[ToolDef]) -> str:
        answer = super().__call__(messages, tools)
        if self.prompts[-1][0] == "task" and 'write "O-2001" in the task text' not in messages[-1].content:
            return (ANSWERS / "mini_shop" / "unnamed" / "task.0.md").read_text()
        return answer


async def test_a_task_naming_no_record_is_told_the_ids_it_was_offered(run: Any) -> None:
    router = IdsOnRequestModel("mini_shop")
    _, _, out = await run("mini_shop", router=router)
    [sc] = load_scenarios(out / "mini_shop.jsonl")
    prompts = task_prompts(router)
    assert "O-2001" in sc.task and len(prompts) == 2
    assert "the task names no record" in prompts[1]
    assert 'name orders O-2001 by id: write "O-2001" in the task text, and ask for a change to it' in prompts[1]
    assert "the task that failed" not in prompts[1]  # not shown to be copied

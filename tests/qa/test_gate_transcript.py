"""The QA gate on transcript items: False on the empty transcript, True on the reference transcript, and
mutated answers caught."""

from __future__ import annotations

from typing import Any

import pytest

from envscaler_mcp.scenario.models import ChecklistItem, Scenario, ToolCall
from envscaler_mcp.skeleton.models import Provenance
from tests.qa.test_gate import INITIAL, gate, statuses

pytestmark = pytest.mark.anyio

SAYS = ("from transcript_checks import says\n"
        "def check_func(transcript):\n    return says(transcript, {facts})\n")
LOOKED_UP = ("from transcript_checks import called\n"
             "def check_func(transcript):\n    return called(transcript, 'get_order', order_id='O1')\n")
NO_CANCEL = ("from transcript_checks import not_called\n"
             "def check_func(transcript):\n    return not_called(transcript, 'cancel_order')\n")
UNCHANGED = "def check_func(final_state):\n    return final_state == initial_state\n"


def read_only(checks: list[tuple[str, str]], answer: str | None = "Order O1 is pending; its total is $30.00.",
              ) -> Scenario:
    """A question about order O1 answered from get_order; checks are (kind, validator source)."""
    return Scenario(
        env_id="fake_shop", title="Order status", task="What is the status and total of order O1?",
        initial_state=INITIAL,
        checklist=[ChecklistItem(id=f"c{i}", description=f"Has item {i}?", validator=src, kind=kind,  # type: ignore[arg-type]
                                 claims_change=kind == "transcript")
                   for i, (kind, src) in enumerate(checks, start=1)],
        reference_solution=[ToolCall(tool="get_order", arguments={"order_id": "O1"})],
        reference_answer=answer,
        provenance=Provenance(source="hand-authored"),
    ).with_id()


GOOD = [("transcript", SAYS.format(facts="'O1', 'pending', 30")), ("transcript", LOOKED_UP), ("state", UNCHANGED)]


async def test_read_only_scenario_passes_with_the_reference_transcript() -> None:
    report = await gate(read_only(GOOD))
    assert report.passed, report.reasons()
    assert statuses(report) == {"validators": "pass", "initial_false": "pass", "replay": "pass",
                                "final_true": "pass", "consistency": "pass", "answer_probes": "pass"}
    assert [r.passed for r in report.initial_results] == [False, False, True]  # empty transcript, initial state
    assert [r.passed for r in report.final_results] == [True, True, True]
    assert report.transcript is not None and report.transcript["answer"] == "Order O1 is pending; its total is $30.00."
    assert report.transcript["calls"][0]["result"]["data"] == {"status": "pending", "total": 30}
    assert report.final_results[0].evidence[1].startswith("stated 'pending'")
    assert {p.mutation: p.caught_by for p in report.answer_probes} == {
        "'O1' changed to 'O2'": ["c1"], "'30.00' changed to '31.00'": ["c1"]}  # one sentence: no drop probe


async def test_an_item_true_on_the_empty_transcript_is_rejected() -> None:
    report = await gate(read_only([("transcript", SAYS.format(facts="30")), ("transcript", NO_CANCEL)]))
    assert not report.passed
    assert report.step("initial_false").reasons == [
        "c2 is True on the empty transcript (no call, no answer): an agent that does nothing passes it"]


async def test_a_wrong_reference_answer_or_none_fails_final_true() -> None:
    report = await gate(read_only(GOOD, answer="Order O1 is pending; its total is $300.00."))
    assert report.step("final_true").reasons == ["c1 is not True after the reference solution"]
    report = await gate(read_only(GOOD, answer=None))
    assert report.step("final_true").reasons == [
        "c1 is not True after the reference solution",
        "the scenario has no reference_answer, so transcript items that read the answer cannot pass"]
    alone = await gate(read_only([GOOD[0], GOOD[2]], answer=None))  # the only transcript item fails: still said
    assert alone.step("final_true").reasons[-1].startswith("the scenario has no reference_answer")
    assert "transcript" not in alone.model_dump()  # the reference transcript is not saved with a report


async def test_unchecked_facts_of_the_reference_answer_fail_the_answer_probes() -> None:
    sc = read_only([("transcript", SAYS.format(facts="'pending'")), ("transcript", LOOKED_UP)],
                   answer="Order O1 is pending. Its total is $30.00.")
    report = await gate(sc)
    assert not report.passed and report.step("answer_probes").status == "fail"
    caught: dict[str, Any] = {p.mutation: p.caught_by for p in report.answer_probes}
    assert caught == {
        "'O1' changed to 'O2'": [],
        "'30.00' changed to '31.00'": [],
        "the sentence \u00abOrder O1 is pending.\u00bb dropped": ["c1"],
        "the sentence \u00abIts total is $30.00.\u00bb dropped": [],
    }
    assert "answer_probes: no transcript item notices when the answer has '30.00' changed to '31.00'" in report.reasons()


async def test_wrong_solutions_are_judged_on_their_calls_and_the_reference_answer() -> None:
    wrong_lookup = read_only(GOOD).model_copy(update={"wrong_solutions": [[ToolCall(tool="get_order",
                                                                                   arguments={"order_id": "O2"})]]})
    report = await gate(wrong_lookup)
    assert report.step("wrong_solutions").status == "pass"
    assert report.wrong_solutions[0].failing == ["c2"]  # said the right thing, never looked O1 up

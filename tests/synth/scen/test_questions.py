"""ScenGenerator's read-only items: a question, the queries that answer it, the reference answer written from
the replayed results, transcript checks from its facts, all through the QA gate."""

from __future__ import annotations

import re
from typing import Any

import pytest

from envscaler_mcp.catalog.store import load_scenarios
from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth.scen.questions import parse_answer

pytestmark = pytest.mark.anyio


async def test_a_question_item_becomes_a_read_only_scenario(run: Any) -> None:
    summary, router, out = await run("mini_shop", "question", questions=1.0)
    [sc] = load_scenarios(out / "mini_shop.jsonl")
    assert sc.reference_answer == ("You have two orders: O-2001 is pending and costs 64.90, and O-2003 has shipped "
                                   "and costs 112.00.")
    assert [c.kind for c in sc.checklist] == ["transcript"] * 4 + ["state"]
    assert "says(transcript, '2')" in (sc.checklist[0].validator or "")
    assert "called(transcript, 'list_orders', customer='Marta Lindqvist')" in (sc.checklist[3].validator or "")
    assert [c.tool for c in sc.reference_solution] == ["list_orders"]
    # The answer step saw the replayed results; its first answer left "two" unchecked and was asked again.
    answer_prompts = [text for step, text in router.prompts if step == "answer"]
    assert len(answer_prompts) == 2 and "64.9" in answer_prompts[0]
    assert router.calls["checklist"] == 0 and router.calls["validators"] == 0
    assert summary.environments[0].kept == 1


async def test_a_question_whose_queries_change_the_state_is_repaired(run: Any) -> None:
    _, router, out = await run("mini_shop", "question_changes", questions=1.0)
    [sc] = load_scenarios(out / "mini_shop.jsonl")
    assert [c.tool for c in sc.reference_solution] == ["list_orders"]
    second = [text for step, text in router.prompts if step == "solution"][1]
    assert "calls state-changing tools (add_note)" in second and "call no state-changing tool" in second


@pytest.mark.parametrize(("checks", "error"), [
    ("- Has the agent given the total? | says: 64.90", "['O-2001'] in your answer are in no check"),
    ("- Has the agent given the total? | says: 64.90; O-2001; 99", "fact(s) ['99'] are not stated"),
    ("- Has the agent given it? | says: 64.90; O-2001\n- Has the agent looked? | called: get_order(order_id=x)",
     "cannot read the call"),
    ("- Has the agent given it? | says: 64.90; O-2001\n- Has the agent looked? | called: cancel_order()",
     "'cancel_order' is not one of the calls made"),
    ("- Total given? | says: 64.90; O-2001", "is not a yes/no question"),
    ("- Has the agent looked? | called: get_order()", "no '| says:' check"),
])
def test_answers_and_checks_are_checked_before_the_gate(checks: str, error: str) -> None:
    text = f"# Answer\nOrder O-2001 costs 64.90.\n\n# Checks\n{checks}\n"
    with pytest.raises(AnswerFormatError, match=re.escape(error)):
        parse_answer(text, {"get_order"})

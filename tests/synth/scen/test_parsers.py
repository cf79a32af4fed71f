"""Parsers of the scenario steps against well-formed and malformed answers (hand-written answer texts)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from envscaler_mcp.synth._common_parse import AnswerFormatError
from envscaler_mcp.synth.scen.parsers import (
    parse_checklist,
    parse_solution,
    parse_task,
    parse_validators,
    validator_problem,
)

TASK = ("Please cancel my pending order O-2001 because I ordered the wrong size, and add a note to order O-2003 "
        "asking the courier to leave the parcel with the neighbour.")
GOOD = "def check_func(final_state):\n    return final_state.get('x') == 1\n"


def test_task_with_title() -> None:
    assert parse_task(f"# Analysis\nfine\n\n## Title:\n**Cancel and note**\n\n# Task\n\"{TASK}\"\n") == (
        "Cancel and note", TASK)


def test_task_without_title_takes_the_first_words() -> None:
    title, task = parse_task(f"# Task\n{TASK}")
    assert task == TASK and title == "Please cancel my pending order O-2001 because I"


@pytest.mark.parametrize("answer, message", [
    ("", "the answer was empty"),
    (f"Here is the task: {TASK}", "missing or empty section(s): '# Task'"),
    ("# Task\nCancel order O-2001.", "write at least 20 words"),
])
def test_bad_tasks(answer: str, message: str) -> None:
    with pytest.raises(AnswerFormatError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_task(answer)


def test_checklist_marks_and_numbering() -> None:
    items = parse_checklist("# Checklist\n1. [change] Has O-1 been cancelled?\n2) **Has a note been added?**\n"
                            "* [keep] Have O-2 and O-3 been left unchanged?\n- Is O-4 open?\nsome prose that is ignored\n")
    assert [(i.id, i.description, i.claims_change) for i in items] == [
        ("c1", "Has O-1 been cancelled?", True), ("c2", "Has a note been added?", True),
        ("c3", "Have O-2 and O-3 been left unchanged?", False), ("c4", "Is O-4 open?", True)]


@pytest.mark.parametrize("answer, message", [
    ("# Checklist\n- [change] Has O-1 been cancelled?", "at least two"),
    ("# Checklist\n- [change] Has O-1 been cancelled?\n- Cancel O-2", "is not a yes/no fact"),
    ("# Checklist\n- [keep] Has O-1 stayed?\n- [keep] Has O-2 stayed?", "no item is marked"),
    ("# Analysis\nonly analysis", "missing or empty section"),
])
def test_bad_checklists(answer: str, message: str) -> None:
    with pytest.raises(AnswerFormatError, match=message):
        parse_checklist(answer)


@pytest.mark.parametrize("source, problem", [
    (GOOD, None),
    ("import re\nfrom collections import Counter\n" + GOOD, None),
    ("def check(final_state):\n    return True\n", "does not define a top-level"),
    ("def check_func(final_state, initial):\n    return True\n", "exactly one parameter"),
    ("def check_func(final_state:\n    return True\n", "syntax error at line 1"),
    ("import os\n" + GOOD, "import of 'os' is not allowed"),
    ("from subprocess import run\n" + GOOD, "import of 'subprocess' is not allowed"),
    ("def check_func(final_state):\n    return open('/etc/passwd') is not None\n", "calling open()"),
    ("def check_func(final_state):\n    return eval('1') == 1\n", "calling eval()"),
    ("def check_func(final_state):\n    return final_state.__class__ is dict\n", "attribute '__class__'"),
])
def test_validator_static_check(source: str, problem: str | None) -> None:
    found = validator_problem(source)
    assert (found is None) if problem is None else (found is not None and problem in found), found


def test_validators_one_section_per_item() -> None:
    text = f"# c1\n```python\n{GOOD}```\n\n## c2:\n```\n{GOOD}```\n"
    assert parse_validators(text, ["c1", "c2"]) == {"c1": GOOD, "c2": GOOD}


def test_a_single_validator_needs_no_heading() -> None:
    assert parse_validators(f"```python\n{GOOD}```", ["c1"]) == {"c1": GOOD}


@pytest.mark.parametrize("text, message", [
    (f"# c1\n```python\n{GOOD}```", "missing validator section(s): '# c2'"),
    ("# c1\n```python\nimport os\n" + GOOD + "```\n# c2\n```python\n" + GOOD + "```", "c1: import of 'os'"),
    ("# c1\nno code here\n# c2\n```python\n" + GOOD + "```", "no validator code for c1"),
])
def test_bad_validators(text: str, message: str) -> None:
    with pytest.raises(AnswerFormatError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_validators(text, ["c1", "c2"])


def test_solution_accepts_aliases(skeletons: dict[str, Any]) -> None:
    text = ('# Solution\n```json\n[{"name": "cancel_order", "args": {"order_id": "O-1", "reason": "x"}},\n'
            ' {"tool": "list_orders"},]\n```')
    calls = parse_solution(text, skeletons["mini_shop"])
    assert [(c.tool, c.arguments) for c in calls] == [
        ("cancel_order", {"order_id": "O-1", "reason": "x"}), ("list_orders", {})]


@pytest.mark.parametrize("text, message", [
    ("# Solution\nnone", "no JSON list of tool calls found"),
    ('# Solution\n```json\n{"tool": "get_order"}\n```', "expected a JSON list of tool calls"),
    ("# Solution\n```json\n[]\n```", "the solution is empty"),
    ('# Solution\n```json\n[{"tool": "refund", "arguments": {}}]\n```', "unknown tool 'refund'"),
    ('# Solution\n```json\n[{"tool": "get_order", "arguments": {}}]\n```', "'order_id' is a required property"),
    ('# Solution\n```json\n[{"tool": "get_order", "arguments": {"order_id": 7}}]\n```', "7 is not of type 'string'"),
    ('# Solution\n```json\n[{"tool": "get_order", "arguments": {"order_id": "O-1", "x": 1}}]\n```',
     "Additional properties are not allowed"),
    ('# Solution\n```json\n["get_order"]\n```', "call 1 is not an object"),
])
def test_bad_solutions(skeletons: dict[str, Any], text: str, message: str) -> None:
    with pytest.raises(AnswerFormatError, match=message):
        parse_solution(text, skeletons["mini_shop"])


def test_validator_headings_may_carry_a_mark() -> None:
    from envscaler_mcp.synth.scen.parsers import parse_validator_answer

    text = f"# c1\n```python\n{GOOD}```\n# c2 [keep]\n```python\n{GOOD}```\n### c3 [change]\n```python\n{GOOD}```"
    sources, marks = parse_validator_answer(text, ["c1", "c2", "c3"])
    assert set(sources) == {"c1", "c2", "c3"} and marks == {"c2": False, "c3": True}


def test_a_validator_reading_a_key_the_state_lacks_is_sent_back_with_the_keys() -> None:
    from envscaler_mcp.synth.scen.parsers import parse_validator_answer

    invented = "def check_func(s):\n    return s['tasks'] and initial_state.get('tools') == []\n"
    nested = "def check_func(final_state):\n    return final_state['orders'].get('tasks') is None\n"
    text = f"# c1\n```python\n{invented}```\n# c2\n```python\n{nested}```"
    with pytest.raises(AnswerFormatError) as refused:
        parse_validator_answer(text, ["c1", "c2"], state_keys=["orders", "customers"])
    assert str(refused.value) == ("validator(s) refused: c1: it reads 'tasks', 'tools' from the state, which has "
                                  "no such key (its keys: customers, orders)")
    sources, _ = parse_validator_answer(text, ["c1", "c2"])  # without the state's keys: not checked
    assert set(sources) == {"c1", "c2"}


def test_structured_answers_are_read_like_the_sectioned_ones(skeletons: dict[str, Any]) -> None:
    import json

    import jsonschema

    from envscaler_mcp.synth.scen.parsers import CHECKLIST_SCHEMA, TASK_SCHEMA, solution_schema

    task = {"analysis": "a", "title": "Cancel and note", "task": TASK}
    jsonschema.validate(task, TASK_SCHEMA)
    assert parse_task(json.dumps(task)) == ("Cancel and note", TASK)
    with pytest.raises(AnswerFormatError, match="at least 20"):
        parse_task(json.dumps({**task, "task": "too short"}))
    checklist = {"analysis": "a", "items": [{"change": True, "fact": "Has O-2001 been cancelled?"},
                                            {"change": False, "fact": "Is O-2003 still pending?"}]}
    jsonschema.validate(checklist, CHECKLIST_SCHEMA)
    items = parse_checklist(json.dumps(checklist))
    assert [(i.id, i.claims_change) for i in items] == [("c1", True), ("c2", False)]
    with pytest.raises(AnswerFormatError, match="'Has'"):
        parse_checklist(json.dumps({"analysis": "", "items": [{"change": True, "fact": "Cancel it"}] * 2}))
    shop = skeletons["mini_shop"]
    solution = {"analysis": "a", "calls": [{"tool": "cancel_order", "arguments": {"order_id": "O-1", "reason": "x"}}]}
    schema = solution_schema(shop)
    jsonschema.validate(solution, schema)
    with pytest.raises(jsonschema.ValidationError):  # the constraint admits only real tools with valid arguments
        jsonschema.validate({"analysis": "", "calls": [{"tool": "refund", "arguments": {}}]}, schema)
    assert [c.tool for c in parse_solution(json.dumps(solution), shop)] == ["cancel_order"]
    with pytest.raises(AnswerFormatError, match="unknown tool"):  # a provider that ignored the schema
        parse_solution(json.dumps({"analysis": "", "calls": [{"tool": "refund", "arguments": {}}]}), shop)


def test_a_fact_listed_twice_is_one_item() -> None:
    from envscaler_mcp.synth.scen.parsers import parse_checklist

    answer = {"analysis": "", "items": [{"change": True, "fact": "Has the order O-1 been cancelled?"},
                                        {"change": True, "fact": "Has  the order O-1 been cancelled?"},
                                        {"change": True, "fact": "Has a note been added to O-1?"}]}
    items = parse_checklist(json.dumps(answer))
    assert [i.id for i in items] == ["c1", "c2"] and items[1].description == "Has a note been added to O-1?"

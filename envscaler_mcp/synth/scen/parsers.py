"""Parse and statically check the model's answers of each scenario step.

Every function raises AnswerFormatError with a message written for the model (it goes back on a retry).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Collection
from typing import Any

import jsonschema

from envscaler_mcp._json import JSON, JSONObject
from envscaler_mcp.qa.consistency import vacuous_items
from envscaler_mcp.sandbox.restrict import ALLOWED_MODULES, FORBIDDEN_CALLS, static_problem
from envscaler_mcp.scenario.models import ChecklistItem, ToolCall
from envscaler_mcp.skeleton.models import EnvSkeleton
from envscaler_mcp.synth._common_parse import (
    AnswerFormatError,
    extract_code,
    extract_json,
    require_sections,
    split_sections,
)
from envscaler_mcp.synth.scen.fields import unknown_state_keys

MIN_TASK_WORDS = 20
# "Has …?" is the convention; the other yes/no openers state a fact just as well.
_QUESTION_WORDS = frozenset("has have is are was were does do did".split())
_ITEM_RE = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.*\S)\s*$")
_MARK_RE = re.compile(r"^\[(change|keep|changes?|unchanged|no change)\]\s*", re.I)


TASK_SCHEMA: JSONObject = {
    "type": "object", "additionalProperties": False,
    "properties": {"analysis": {"type": "string", "maxLength": 600}, "title": {"type": "string", "maxLength": 80},
                   "task": {"type": "string", "maxLength": 1500}},
    "required": ["analysis", "title", "task"]}

CHECKLIST_SCHEMA: JSONObject = {
    "type": "object", "additionalProperties": False,
    "properties": {"analysis": {"type": "string", "maxLength": 600},
                   "items": {"type": "array", "minItems": 2, "maxItems": 6, "items": {
                       "type": "object", "additionalProperties": False,
                       "properties": {"change": {"type": "boolean"}, "fact": {"type": "string", "maxLength": 240}},
                       "required": ["change", "fact"]}}},
    "required": ["analysis", "items"]}


def solution_schema(skeleton: EnvSkeleton) -> JSONObject:
    """Structured-output schema of a solution: calls of the environment's tools, each with its argument schema."""
    variants: list[JSON] = [{"type": "object", "additionalProperties": False,
                 "properties": {"tool": {"const": t.name}, "arguments": t.input_schema or {"type": "object"}},
                 "required": ["tool", "arguments"]} for t in skeleton.tools]
    return {"type": "object", "additionalProperties": False,
            "properties": {"analysis": {"type": "string", "maxLength": 600},
                           "calls": {"type": "array", "minItems": 1, "maxItems": 20, "items": {"anyOf": variants}}},
            "required": ["analysis", "calls"]}


def _json_answer(text: str) -> dict[str, Any] | None:
    """The answer as a JSON object when it is one (structured output); None for a sectioned text answer."""
    if not text.lstrip().startswith("{"):
        return None
    data = extract_json(text, what="JSON object")
    return data if isinstance(data, dict) else None


def parse_task(text: str, short: Callable[[str], bool] | None = None) -> tuple[str, str]:
    """A JSON object {analysis, title, task} (structured output), or the sections '# Title' and '# Task' ->
    (title, task). The task must be a real paragraph: MIN_TASK_WORDS words, or fewer when `short(task)` says
    so (`task_length.short_task_ok`: grounded, and more than one change asked for)."""
    data = _json_answer(text)
    if data is not None:
        sections = {"Task": str(data.get("task") or ""), "Title": str(data.get("title") or "")}
    else:
        sections = require_sections(text, ["Task"], optional=("Title", "Analysis"))
    task = sections["Task"].strip().strip('"').strip()
    if len(task.split()) < MIN_TASK_WORDS and (short is None or not short(task)):
        raise AnswerFormatError(f"the task has {len(task.split())} words; write at least {MIN_TASK_WORDS} words "
                                "with several sub-goals")
    title = sections.get("Title", "").strip().strip("#*\"' ").splitlines()[0] if sections.get("Title") else ""
    if not title:
        title = " ".join(task.split()[:8])
    return title[:100], task


def parse_checklist(text: str) -> list[ChecklistItem]:
    """`checklist_items`, refused when fewer than two items are left or none is marked [change]."""
    items, left_out = checklist_items(text)
    if len(items) < 2:
        why = ("; left out: " + "; ".join(left_out[:4]) + " (an item states a fact about records of the final "
               "state, e.g. an order's new status or a new record's fields; never a tool, a function or a call)"
               if left_out else "")
        raise AnswerFormatError(f"the checklist has {len(items)} item(s); list at least two '- [change] Has …?' "
                                "bullets, one fact each" + why)
    if not any(i.claims_change for i in items):
        raise AnswerFormatError(NO_CHANGE)
    return items


NO_CHANGE = ("no item is marked [change]; the task changes the state, so mark the items that assert a change "
             "with [change]")


def checklist_items(text: str) -> tuple[list[ChecklistItem], list[str]]:
    """A JSON object {analysis, items: [{change, fact}]} (structured output), or '# Checklist' bullets
    '- [change] Has …?' / '- [keep] Has …?' -> (items c1, c2, …, the items left out, each with why). Items that
    assert nothing about the state (`qa.consistency.vacuous_items`: no words, a value changed to itself, the
    system's tools, such as "Has place_order tool for creating new orders") are left out before any validator
    is written for them."""
    data = _json_answer(text)
    if data is not None:
        raw = data.get("items")
        if not isinstance(raw, list) or not all(isinstance(i, dict) for i in raw):
            raise AnswerFormatError("'items' must be a list of {\"change\": true|false, \"fact\": \"Has …?\"}")
        lines = [f"- [{'change' if i.get('change', True) else 'keep'}] {i.get('fact', '')}" for i in raw]
    else:
        lines = require_sections(text, ["Checklist"], optional=("Analysis",))["Checklist"].splitlines()
    items: list[ChecklistItem] = []
    left_out: list[str] = []
    for line in lines:
        match = _ITEM_RE.match(line)
        if not match:
            continue
        body = match.group(1).strip()
        claims_change = True
        mark = _MARK_RE.match(body)
        if mark:
            claims_change = mark.group(1).lower() in ("change", "changes")
            body = body[mark.end():].strip()
        body = body.strip("*` ")
        if body.split(" ", 1)[0].lower() not in _QUESTION_WORDS:
            raise AnswerFormatError(f"checklist item {body[:60]!r} is not a yes/no fact; start every item "
                                    "with 'Has'")
        if any(" ".join(body.lower().split()) == " ".join(i.description.lower().split()) for i in items):
            continue  # the same fact twice (small models repeat items) is one item
        item = ChecklistItem(id=f"c{len(items) + 1}", description=body, claims_change=claims_change)
        vacuous = vacuous_items([item])
        if vacuous:
            left_out.append(f"{body[:80]!r} " + re.sub(r"^c\d+(?:'s)?\s+", "", vacuous[0].rsplit(": ", 1)[0]))
            continue
        items.append(item)
    return items, left_out


def validator_problem(source: str) -> str | None:
    """Why a validator's source is refused before it is run (None when it passes the static check)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return f"syntax error at line {exc.lineno}: {exc.msg}"
    funcs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check_func"]
    if not funcs:
        return "it does not define a top-level `def check_func(final_state):`"
    args = funcs[-1].args
    if len(args.args) != 1 or args.vararg or args.kwonlyargs or args.posonlyargs:
        return "check_func must take exactly one parameter, final_state"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                if name not in ALLOWED_MODULES:
                    return f"import of '{name}' is not allowed (allowed: {', '.join(ALLOWED_MODULES)})"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
            return f"calling {node.func.id}() is not allowed"
    return static_problem(tree)


def parse_validators(text: str, item_ids: list[str]) -> dict[str, str]:
    """One '# c<n>' section with a ```python block per item -> {item id: source}; each passes the static check."""
    return parse_validator_answer(text, item_ids)[0]


def parse_validator_answer(text: str, item_ids: list[str], state_keys: Collection[str] | None = None
                           ) -> tuple[dict[str, str], dict[str, bool]]:
    """Like parse_validators, and also the marks a heading may carry ('# c4 [keep]' / '# c4 [change]'):
    returns ({item id: source}, {item id: claims_change} for the items whose heading has a mark).
    With `state_keys` (the state's top-level keys), a validator reading another top-level key is refused."""
    sources, marks, problems = validator_sections(text, item_ids, state_keys)
    if problems:
        raise AnswerFormatError(problems_text(problems))
    return sources, marks


def problems_text(problems: list[str]) -> str:
    """The problems `validator_sections` found, as one message for the model (missing sections first)."""
    missing = [p for p in problems if p.startswith("#")]
    refused = [p for p in problems if not p.startswith("#")]
    if missing:
        return ("missing validator section(s): " + ", ".join(f"'{m}'" for m in missing)
                + "; give one '# <item id>' heading per item, each followed by a ```python block")
    return "validator(s) refused: " + "; ".join(refused)


def validator_sections(text: str, item_ids: list[str], state_keys: Collection[str] | None = None
                       ) -> tuple[dict[str, str], dict[str, bool], list[str]]:
    """Every usable validator of an answer, whatever became of the others: ({item id: source} of the sections
    that pass the static checks, {item id: claims_change} of their marked headings, [problems]), where a problem
    is '# <id>' for a missing section or '<id>: <why it was refused>'."""
    names = [f"{i} {mark}" for i in item_ids for mark in ("keep", "change")] + list(item_ids)
    sections: dict[str, str] = {}
    marks: dict[str, bool] = {}
    for name, body in split_sections(text, names).items():
        item_id, _, mark = name.partition(" ")
        if item_id not in sections:
            sections[item_id] = body
            if mark:
                marks[item_id] = mark == "change"
    if not sections and len(item_ids) == 1:
        sections = {item_ids[0]: text}
    return _checked(sections, marks, item_ids, state_keys, [f"# {i}" for i in item_ids if not sections.get(i)])


def _checked(sections: dict[str, str], marks: dict[str, bool], item_ids: list[str],
             state_keys: Collection[str] | None, problems: list[str]
             ) -> tuple[dict[str, str], dict[str, bool], list[str]]:
    out: dict[str, str] = {}
    for item_id in item_ids:
        if not sections.get(item_id):
            continue
        try:
            source = extract_code(sections[item_id], what=f"validator code for {item_id}")
        except AnswerFormatError as exc:
            problems.append(str(exc))
            continue
        problem = validator_problem(source)
        unknown = unknown_state_keys(source, state_keys) if state_keys is not None and not problem else []
        if unknown:
            problem = (f"it reads {', '.join(repr(k) for k in unknown)} from the state, which has no such key "
                       f"(its keys: {', '.join(sorted(state_keys or ()))})")
        if problem:
            problems.append(f"{item_id}: {problem}")
            continue
        out[item_id] = source.strip() + "\n"
    return out, {i: m for i, m in marks.items() if i in out}, problems


def parse_solution(text: str, skeleton: EnvSkeleton) -> list[ToolCall]:
    """A JSON object {analysis, calls} (structured output) or a '# Solution' JSON list of {tool, arguments};
    every tool exists and every argument fits its schema."""
    data = _json_answer(text)
    if data is not None:
        raw: Any = data.get("calls")
        if not isinstance(raw, list):
            raise AnswerFormatError("'calls' must be a JSON list of {\"tool\": ..., \"arguments\": {...}}")
    else:
        sections = split_sections(text, ["Solution", "Analysis"])
        raw = extract_json(sections.get("Solution") or text, expect=list, what="JSON list of tool calls")
    if not raw:
        raise AnswerFormatError("the solution is empty; list every tool call the task needs")
    tools = {t.name: t for t in skeleton.tools}
    calls: list[ToolCall] = []
    problems: list[str] = []
    for n, entry in enumerate(raw, start=1):
        if not isinstance(entry, dict) or not isinstance(entry.get("tool", entry.get("name")), str):
            problems.append(f"call {n} is not an object with a 'tool' name")
            continue
        name = entry.get("tool", entry.get("name"))
        arguments = entry.get("arguments", entry.get("args", {}))
        if name not in tools:
            problems.append(f"call {n}: unknown tool '{name}' (tools: {', '.join(tools)})")
            continue
        if not isinstance(arguments, dict):
            problems.append(f"call {n} {name}: 'arguments' must be a JSON object")
            continue
        error = next(iter(jsonschema.Draft202012Validator(tools[name].input_schema).iter_errors(arguments)), None)
        if error is not None:
            where = "".join(f"[{p!r}]" for p in error.absolute_path)
            problems.append(f"call {n} {name}: arguments{where}: {error.message}")
            continue
        calls.append(ToolCall(tool=name, arguments=arguments))
    if problems:
        raise AnswerFormatError("the solution has invalid calls: " + "; ".join(problems[:8]))
    return calls

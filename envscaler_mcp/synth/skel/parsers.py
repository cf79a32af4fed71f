"""Parse every SkelBuilder answer into a Pydantic model. Each parser raises AnswerFormatError with a message
the model can act on; the caller sends it back for a retry."""

from __future__ import annotations

import ast
import keyword
import re
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from envscaler_mcp._json import JSONObject, State
from envscaler_mcp.skeleton.models import Attribute, Entity
from envscaler_mcp.synth._common_parse import (
    AnswerFormatError,
    extract_code,
    extract_json,
    parse_choice,
    parse_score,
    require_sections,
    split_sections,
)
from envscaler_mcp.synth.skel.records import JudgeAnswer, Operation, StateDesign, TopicAnswer

_IDENT_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
MAX_OPERATIONS = 30  # bounds the cost of the method step (one model call per operation)


def parse_judge(text: str) -> JudgeAnswer:
    """'# Analysis' + '# Answer' (YES or NO)."""
    sections = require_sections(text, ["Answer"], optional=("Analysis",))
    answer = parse_choice(sections["Answer"], ("YES", "NO"), what="answer")
    return JudgeAnswer(analysis=sections.get("Analysis", ""), stateful=answer == "YES")


def parse_topic(text: str) -> TopicAnswer:
    """'# Environment Summary', '# Environment Introduction', '# Metrics' (Usefulness, Modelability)."""
    sections = require_sections(
        text, ["Environment Summary", "Environment Introduction", "Metrics"], optional=("Analysis",)
    )
    summary = sections["Environment Summary"].strip().strip("*`#\"' ").splitlines()[0].strip()
    if len(summary) > 120:
        raise AnswerFormatError("the Environment Summary must be a short label (under 120 characters)")
    return TopicAnswer(
        analysis=sections.get("Analysis", ""),
        summary=summary,
        introduction=" ".join(sections["Environment Introduction"].split()),
        usefulness=parse_score(sections["Metrics"], "Usefulness"),
        modelability=parse_score(sections["Metrics"], "Modelability"),
    )


def _attribute(raw: Any) -> Attribute:
    if isinstance(raw, str):
        name, _, description = raw.partition(":")
        return Attribute(name=name.strip(), description=description.strip())
    if isinstance(raw, dict):
        return Attribute(name=str(raw.get("name", "")).strip(), type=str(raw.get("type") or "str"),
                         description=str(raw.get("description") or ""))
    raise AnswerFormatError(f"an attribute must be an object with name/type/description, got {raw!r}")


def parse_state(text: str) -> StateDesign:
    """'# State Space' (JSON: {"entities": [...]}) and '# Rules' (bullets)."""
    sections = require_sections(text, ["State Space"], optional=("Analysis", "Rules"))
    data = extract_json(sections["State Space"], expect=(dict, list), what="JSON object with 'entities'")
    raw_entities = data.get("entities") if isinstance(data, dict) else data
    if not isinstance(raw_entities, list) or not raw_entities:
        raise AnswerFormatError("the State Space JSON needs a non-empty 'entities' list")
    entities = []
    for raw in raw_entities:
        if not isinstance(raw, dict) or not str(raw.get("name", "")).strip():
            raise AnswerFormatError(f"every entity needs a 'name'; got {str(raw)[:80]!r}")
        attrs = [_attribute(a) for a in raw.get("attributes") or []]
        if not attrs or any(not a.name for a in attrs):
            raise AnswerFormatError(f"entity {raw['name']!r} needs a list of named 'attributes'")
        entities.append(Entity(name=str(raw["name"]).strip(), attributes=attrs,
                               description=str(raw.get("description") or "")))
    rules = [re.sub(r"^\s*(?:[-*+]|\d+[.)])\s*", "", line).strip()
             for line in sections.get("Rules", "").splitlines()]
    if isinstance(data, dict) and isinstance(data.get("rules"), list):
        rules += [str(r) for r in data["rules"]]
    return StateDesign(analysis=sections.get("Analysis", ""), entities=entities, rules=[r for r in rules if r])


class ClassAnswer(BaseModel):
    """The class skeleton answer."""

    class_name: str = Field(description="Name of the environment class.")
    source: str = Field(description="Module source: imports, TypedDicts and the class with __init__.")


def _is_typeddict(node: ast.ClassDef) -> bool:
    return any((isinstance(b, ast.Name) and b.id == "TypedDict") or
               (isinstance(b, ast.Attribute) and b.attr == "TypedDict") for b in node.bases)


def parse_class(text: str) -> ClassAnswer:
    """'# Class Definition' with one python block: TypedDicts and exactly one class with an __init__."""
    sections = split_sections(text, ["Class Definition", "Analysis"])
    source = extract_code(sections.get("Class Definition") or text, what="class definition")
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise AnswerFormatError(f"the class definition has a syntax error at line {exc.lineno}: {exc.msg}") from exc
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and not _is_typeddict(n)]
    if len(classes) != 1:
        raise AnswerFormatError(
            f"expected exactly one environment class besides the TypedDicts, found {len(classes)}"
        )
    cls = classes[0]
    if not any(isinstance(n, ast.FunctionDef) and n.name == "__init__" for n in cls.body):
        raise AnswerFormatError(f"class {cls.name} has no __init__ creating the state attributes")
    return ClassAnswer(class_name=cls.name, source=source.strip() + "\n")


_OP_LINE_RES = (
    re.compile(r"^\s*(?:[-*+]|\d+[.)])\s*(?:\*\*)?Operation(?:\*\*)?\s*:\s*`?(?P<name>\w+)`?\s*"
               r"(?:[,;|-]\s*)?(?:\*\*)?Description(?:\*\*)?\s*:\s*(?P<desc>.+)$", re.I),
    re.compile(r"^\s*(?:[-*+]|\d+[.)])\s*(?:\*\*|`)*(?P<name>\w+)(?:\([^)]*\))?(?:\*\*|`)*"
               r"\s*[:\u2013\u2014-]\s*(?P<desc>.+)$"),
)


def _operations(body: str, kind: str) -> list[Operation]:
    ops = []
    for line in body.splitlines():
        for pattern in _OP_LINE_RES:
            m = pattern.match(line)
            if m:
                ops.append(Operation(name=m.group("name"), description=m.group("desc").strip(), kind=kind))
                break
    return ops


class OperationsAnswer(BaseModel):
    """The planned operations."""

    analysis: str = Field("", description="The model's reasoning.")
    operations: list[Operation] = Field(description="Queries first, then state changes.")


def parse_operations(text: str) -> OperationsAnswer:
    """'# Query Operations' and '# State Change Operations', one '- name: description' bullet per operation."""
    sections = require_sections(text, ["Query Operations", "State Change Operations"], optional=("Analysis",))
    ops = _operations(sections["Query Operations"], "query") + _operations(
        sections["State Change Operations"], "state_change"
    )
    if len(ops) > MAX_OPERATIONS:
        raise AnswerFormatError(f"{len(ops)} operations is too many; list at most {MAX_OPERATIONS}, keeping the most useful")
    queries = [o for o in ops if o.kind == "query"]
    if not queries or len(queries) == len(ops):
        raise AnswerFormatError("list at least one operation under each section, as '- name: description' bullets")
    seen: set[str] = set()
    for op in ops:
        if not _IDENT_RE.match(op.name) or keyword.iskeyword(op.name):
            raise AnswerFormatError(f"operation name {op.name!r} must be a public snake_case method name")
        if op.name in seen:
            raise AnswerFormatError(f"operation {op.name!r} is listed twice; every name must be unique")
        seen.add(op.name)
    return OperationsAnswer(analysis=sections.get("Analysis", ""), operations=ops)


class MethodAnswer(BaseModel):
    """A method (or repaired method) answer."""

    analysis: str = Field("", description="The model's reasoning.")
    code: str = Field(description="The method source (validated against the class by the caller).")


def parse_method(text: str) -> MethodAnswer:
    """'# Code' with one python block holding the method (the caller validates it against the class)."""
    sections = split_sections(text, ["Code", "Analysis"])
    code = extract_code(sections.get("Code") or text, what="method code")
    return MethodAnswer(analysis=sections.get("Analysis", ""), code=code)


class InitialStateAnswer(BaseModel):
    """A generated initial state."""

    analysis: str = Field("", description="The model's reasoning.")
    state: State = Field(description="The state, keyed by state attribute name.")


def parse_initial_state(text: str) -> InitialStateAnswer:
    """'# Initial State' with one JSON object keyed by state attribute names."""
    sections = split_sections(text, ["Initial State", "Analysis"])
    state = extract_json(sections.get("Initial State") or text, what="initial state JSON object")
    return InitialStateAnswer(analysis=sections.get("Analysis", ""), state=state)


class TesterAnswer(BaseModel):
    """One test call chosen by the tester."""

    thought: str = Field("", description="Why this call.")
    tool: str = Field(description="Tool to call.")
    arguments: JSONObject = Field(default_factory=dict, description="Arguments of the call.")
    case: str = Field(description="'positive' or 'negative'.")


def parse_tester(text: str) -> TesterAnswer:
    """'# Tool', '# Arguments' (JSON object), '# Case' (positive|negative), optional '# Thought'."""
    sections = require_sections(text, ["Tool", "Arguments", "Case"], optional=("Thought",))
    tool = sections["Tool"].strip().strip("`*\"' ").split()[0].rstrip("()")
    args_text = sections["Arguments"].strip()
    arguments = {} if args_text.strip("` ").lower() in ("{}", "none", "") else extract_json(
        args_text, what="arguments JSON object")
    case = parse_choice(sections["Case"], ("positive", "negative"), what="case type")
    try:
        return TesterAnswer(thought=sections.get("Thought", ""), tool=tool, arguments=arguments, case=case)
    except ValidationError as exc:  # pragma: no cover - fields are already shaped above
        raise AnswerFormatError(str(exc)) from exc


class CheckerAnswer(BaseModel):
    """The checker's verdict on one call."""

    analysis: str = Field("", description="The checker's reasoning.")
    verdict: str = Field(description="'pass', 'warning' or 'fail'.")
    reason: str = Field("", description="Why (required for warning and fail).")


def parse_checker(text: str) -> CheckerAnswer:
    """'# Verdict' (Pass|Warning|Fail), '# Reason', optional '# Analysis'."""
    sections = require_sections(text, ["Verdict"], optional=("Analysis", "Reason"))
    verdict = parse_choice(sections["Verdict"], ("pass", "warning", "fail"), what="verdict")
    reason = sections.get("Reason", "").strip()
    if verdict != "pass" and not reason:
        raise AnswerFormatError("a Warning or Fail verdict needs a '# Reason' section saying what is wrong")
    return CheckerAnswer(analysis=sections.get("Analysis", ""), verdict=verdict, reason=reason)

"""Parse every SkelBuilder answer into a Pydantic model. Each parser raises AnswerFormatError with a message
the model can act on; the caller sends it back for a retry."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, ValidationError

from envscaler_mcp._json import JSONObject, State
from envscaler_mcp.synth._common_parse import (
    AnswerFormatError,
    extract_code,
    extract_json,
    parse_choice,
    parse_score,
    require_sections,
    split_sections,
)
from envscaler_mcp.synth.skel.records import JudgeAnswer, TopicAnswer


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


class ClassAnswer(BaseModel):
    """The class skeleton answer."""

    class_name: str = Field(description="Name of the environment class.")
    source: str = Field(description="Module source: imports, TypedDicts and the class with __init__.")


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


def _json_answer(text: str) -> dict[str, Any] | None:
    """The answer as a JSON object when it is one (structured output); None for a sectioned text answer."""
    if not text.lstrip().startswith("{"):
        return None
    data = extract_json(text, what="JSON object")
    return data if isinstance(data, dict) else None


TESTER_CASES = ("positive", "negative")
VERDICTS = ("Pass", "Warning", "Fail")


def tester_schema(tools: list[str], cases: tuple[str, ...] = TESTER_CASES) -> JSONObject:
    """Structured-output schema of a tester answer choosing among `tools` (and `cases`)."""
    return {"type": "object", "additionalProperties": False,
            "properties": {"thought": {"type": "string", "maxLength": 240}, "tool": {"enum": list(tools)},
                           "arguments": {"type": "object"}, "case": {"enum": list(cases)}},
            "required": ["thought", "tool", "arguments", "case"]}


EXPECTATIONS = ("success", "refusal")
CHECKER_SCHEMA: JSONObject = {
    "type": "object", "additionalProperties": False,
    "properties": {"expected": {"enum": list(EXPECTATIONS)}, "analysis": {"type": "string", "maxLength": 500},
                   "verdict": {"enum": list(VERDICTS)}, "reason": {"type": "string", "maxLength": 300}},
    "required": ["expected", "analysis", "verdict", "reason"]}


def parse_tester(text: str) -> TesterAnswer:
    """A JSON object {thought, tool, arguments, case} (structured output), or the sections '# Tool',
    '# Arguments' (JSON object), '# Case' (positive|negative), optional '# Thought'."""
    data = _json_answer(text)
    if data is not None:
        arguments = data.get("arguments")
        if not isinstance(data.get("tool"), str) or not isinstance(arguments, dict):
            raise AnswerFormatError("the answer needs a 'tool' name and an 'arguments' object")
        case = parse_choice(str(data.get("case", "")), TESTER_CASES, what="case type")
        return TesterAnswer(thought=str(data.get("thought") or ""), tool=data["tool"], arguments=arguments, case=case)
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

    expected: str | None = Field(None, description="'success' or 'refusal': what these arguments should get "
                                 "(None: the answer did not say).")
    analysis: str = Field("", description="The checker's reasoning.")
    verdict: str = Field(description="'pass', 'warning' or 'fail'.")
    reason: str = Field("", description="Why (required for warning and fail).")


def parse_checker(text: str) -> CheckerAnswer:
    """A JSON object {analysis, verdict, reason} (structured output), or the sections '# Verdict'
    (Pass|Warning|Fail), '# Reason', optional '# Analysis'."""
    data = _json_answer(text)
    if data is not None:
        sections = {"Verdict": str(data.get("verdict") or ""), "Reason": str(data.get("reason") or ""),
                    "Analysis": str(data.get("analysis") or ""), "Expected": str(data.get("expected") or "")}
    else:
        sections = require_sections(text, ["Verdict"], optional=("Analysis", "Reason", "Expected"))
    verdict = parse_choice(sections["Verdict"], ("pass", "warning", "fail"), what="verdict")
    expected = sections.get("Expected", "").strip()
    reason = sections.get("Reason", "").strip()
    if verdict != "pass" and not reason:
        raise AnswerFormatError("a Warning or Fail verdict needs a '# Reason' section saying what is wrong")
    return CheckerAnswer(expected=parse_choice(expected, EXPECTATIONS, what="expected") if expected else None,
                         analysis=sections.get("Analysis", ""), verdict=verdict, reason=reason)

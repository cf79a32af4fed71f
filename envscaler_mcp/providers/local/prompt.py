"""What the embedded model is told: the function list (compact or full), the decision rules and the JSON
schema every decision is constrained to.

A small CPU model pays for every prompt token (tens of tokens per second cold), so by default each function
is two short lines: its name with the first sentence of its description, and its typed parameters (`?`
marks an optional one, enums are spelled out). The full JSON Schemas are still enforced: they are the grammar of the answer
(`decision_schema`), and the server validates every call again.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from envscaler_mcp.providers.base import Message, ToolDef
from envscaler_mcp.providers.openai_chat import json_schema_format

ToolStyle = Literal["compact", "full"]

DECISION_RULES = """\
Answer with one JSON object: {"plan": "...", "tool_calls": [{"name": ..., "arguments": {...}}], "reply": "..."}.
"plan" is one short sentence: which function gives the data the user asks about or makes the change, or \
"answer" when the results you have already suffice.
Rules:
1. You know nothing about the user's data (records, ids, statuses, amounts) except what function results \
tell you. To answer a question about it or to change it, call the matching function(s): put the call(s) in \
"tool_calls" and leave "reply" empty.
2. Function results come back inside <tool_response> tags. Read them. Never call a function again with the same \
arguments once you have its response.
3. When the results show the task is done, or they answer the user's question, set "tool_calls" to [] and write \
in "reply" a short final answer to the user, based only on the results.
4. If a result starts with ERROR, fix the arguments or explain the problem in "reply".
5. Only for greetings and thanks, set "tool_calls" to [] and answer in "reply"."""

NATIVE_NUDGE = (
    "Call a function whenever one fits: the user's data is known only through function results. "
    "Once a <tool_response> gives you the information you need, do not call the function again: "
    "reply to the user in one or two plain sentences."
)

_SHORT_TYPES = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "object": "dict",
                "array": "list", "null": "null"}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def type_text(schema: dict[str, Any]) -> str:
    """A short type of a JSON Schema: str, int, list[str], "a"|"b", {x: int, y?: str}; null left out."""
    if "enum" in schema:
        return "|".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            parts = [type_text(s) for s in schema[key] if s.get("type") != "null"]
            return "|".join(dict.fromkeys(parts)) or "null"
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"] or ["null"]
        if len(kinds) > 1:
            return "|".join(_SHORT_TYPES.get(k, str(k)) for k in kinds)
        kind = kinds[0]
    if kind == "array":
        items = schema.get("items")
        return f"list[{type_text(items)}]" if isinstance(items, dict) and items else "list"
    if kind == "object" and schema.get("properties"):
        return "{" + params_text(schema) + "}"
    return _SHORT_TYPES.get(str(kind), "any") if kind else "any"


def params_text(schema: dict[str, Any]) -> str:
    """`name: type, other?: type` for an object schema's properties (required ones without `?`)."""
    required = set(schema.get("required") or [])
    return ", ".join(f"{name}{'' if name in required else '?'}: {type_text(prop if isinstance(prop, dict) else {})}"
                     for name, prop in (schema.get("properties") or {}).items())


def first_sentence(text: str, limit: int = 160) -> str:
    """The first sentence of a description's first paragraph, on one line and at most `limit` characters."""
    paragraph = " ".join(text.strip().split("\n\n", 1)[0].split())
    sentence = _SENTENCE_END.split(paragraph, 1)[0]
    return sentence if len(sentence) <= limit else sentence[: limit - 3].rstrip() + "..."


def compact_tool_line(tool: ToolDef) -> str:
    """A function in two short lines: `- name: First sentence.` and `  parameters: a: str, b?: int`.

    (Written as `name(a: str) - ...`, the 1.5B model copied that shape into its plan and then repeated the
    call it had just made instead of answering.)"""
    summary = first_sentence(tool.description or "")
    params = params_text(tool.input_schema or {})
    return f"- {tool.name}: {summary}".rstrip() + f"\n  parameters: {params or 'none'}"


def full_tool_lines(tool: ToolDef) -> list[str]:
    """The function's whole description and its JSON Schema (the longer, earlier rendering)."""
    return [f"- {tool.name}: {tool.description.strip()}",
            f"  parameters: {json.dumps(tool.input_schema, ensure_ascii=False, separators=(',', ':'))}"]


def decision_system_prompt(system: str, tools: list[ToolDef], style: ToolStyle = "compact") -> str:
    """The caller's system prompt, then the function list and the decision rules."""
    lines = [system.strip() or "You are a helpful agent that completes the user's task with functions.", "",
             "You can call these functions (? marks an optional parameter):"
             if style == "compact" else "You can call these functions:"]
    for tool in tools:
        lines.extend([compact_tool_line(tool)] if style == "compact" else full_tool_lines(tool))
    return "\n".join([*lines, "", DECISION_RULES])


def decision_schema(tools: list[ToolDef], *, answer_only: bool = False) -> dict[str, Any]:
    """JSON Schema of one decision: either calls (at least one, each call's arguments following its own
    tool's input schema) with an empty reply, or no call and a reply that says something (with
    `answer_only`, only the latter). The model cannot spend tokens on a reply nobody reads.

    The answer's empty call list is `{"const": []}`: llama.cpp's schema grammar ignores `maxItems` on an array
    without `items`, so `{"type": "array", "maxItems": 0}` let the answer shape carry any calls with any
    arguments, past every tool's schema (seen on the prebuilt `llama-server`)."""
    plan = {"type": "string", "maxLength": 160}
    answer = {"type": "object",
              "properties": {"plan": plan, "tool_calls": {"const": []},
                             "reply": {"type": "string", "minLength": 1}},
              "required": ["plan", "tool_calls", "reply"]}
    if answer_only:
        return answer
    variants = [
        {"type": "object",
         "properties": {"name": {"const": t.name}, "arguments": t.input_schema or {"type": "object"}},
         "required": ["name", "arguments"]}
        for t in tools
    ]
    act = {"type": "object",
           "properties": {"plan": plan, "tool_calls": {"type": "array", "items": {"anyOf": variants}, "minItems": 1},
                          "reply": {"const": ""}},
           "required": ["plan", "tool_calls", "reply"]}
    return {"anyOf": [act, answer]}


# llguidance's JSON options: one line, one space after ',' and ':' (the schema grammar of llama.cpp lets a
# model indent, and a small model then spends a third of a decision's tokens on newlines and spaces)
COMPACT_JSON = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}


_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_LITERALS = ("const", "enum", "default", "examples", "required")


def llama_cpp_schema(schema: Any) -> Any:
    """`schema` written so that llama.cpp's own schema grammar enforces it: an array whose length is bounded
    (`minItems`/`maxItems`) but whose `items` are not given gets `"items": {}` (the same meaning). Without it
    llama.cpp drops the bound and allows any array (seen on the prebuilt `llama-server`)."""
    if isinstance(schema, list):
        return [llama_cpp_schema(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: ({name: llama_cpp_schema(sub) for name, sub in value.items()}
                 if key in _SCHEMA_MAPS and isinstance(value, dict)
                 else value if key in _LITERALS else llama_cpp_schema(value))
           for key, value in schema.items()}
    if ("minItems" in out or "maxItems" in out) and "items" not in out and "prefixItems" not in out:
        out["items"] = {}
    return out


def answer_constraint(schema: dict[str, Any], *, llguidance: bool) -> dict[str, Any]:
    """The request fields that constrain an answer to `schema`: a compact llguidance grammar where the
    runtime has llguidance, else the chat-completions `response_format`, which llama.cpp turns into its own
    grammar (`llama_cpp_schema`)."""
    if llguidance:
        return {"grammar": "%llguidance {}\nstart: %json " + json.dumps({**schema, "x-guidance": COMPACT_JSON})}
    return {"response_format": json_schema_format(llama_cpp_schema(schema))}


def decision_text(message: Message) -> str:
    """An earlier assistant turn replayed in the decision's JSON form."""
    calls = [{"name": c.name, "arguments": c.arguments} for c in message.tool_calls]
    plan = message.plan or ("call the functions" if calls else "answer")
    return json.dumps({"plan": plan, "tool_calls": calls, "reply": "" if calls else message.content},
                      ensure_ascii=False)

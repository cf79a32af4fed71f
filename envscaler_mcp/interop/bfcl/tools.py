"""BFCL's function docs as tools with JSON Schemas, and its ground-truth call strings as {tool, arguments}."""

from __future__ import annotations

import ast
from typing import Any

from envscaler_mcp.errors import InputFileError
from envscaler_mcp.scenario.models import ToolCall
from envscaler_mcp.skeleton.models import ToolKind, ToolSpec

# BFCL's parameter types -> JSON Schema types (BFCL's own GORILLA_TO_OPENAPI, except that "any" stays untyped)
JSON_TYPES = {
    "integer": "integer", "number": "number", "float": "number", "double": "number", "string": "string",
    "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array", "tuple": "array",
    "dict": "object", "object": "object",
}
KEPT = ("description", "enum", "default")


def json_schema(param: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of one BFCL parameter (types mapped, items and properties converted, docs kept)."""
    schema: dict[str, Any] = {}
    kind = param.get("type")
    if isinstance(kind, str) and kind in JSON_TYPES:
        schema["type"] = JSON_TYPES[kind]
    elif isinstance(kind, str) and kind.lower() != "any":
        raise ValueError(f"unknown BFCL type {kind!r}")
    for key in KEPT:
        if key in param:
            schema[key] = param[key]
    if isinstance(param.get("items"), dict):
        schema["items"] = json_schema(param["items"])
    if isinstance(param.get("properties"), dict):
        schema["properties"] = {k: json_schema(v) for k, v in param["properties"].items()}
        if isinstance(param.get("required"), list):
            schema["required"] = list(param["required"])
    return schema


def tool_spec(doc: dict[str, Any], kind: ToolKind) -> ToolSpec:
    """One BFCL function doc -> a tool: its description as BFCL gives it, arguments as a strict object."""
    params = doc.get("parameters") or {}
    properties = params.get("properties") or {}
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {name: json_schema(p) for name, p in properties.items()},
        "required": [r for r in params.get("required") or [] if r in properties],
        "additionalProperties": False,
    }
    return ToolSpec(name=str(doc["name"]), description=str(doc.get("description") or ""), input_schema=schema,
                    kind=kind)


def signatures(source: str, class_name: str) -> dict[str, list[str]]:
    """Public method name -> its parameter names in order (without self), from a class's source."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            return {item.name: [a.arg for a in [*item.args.posonlyargs, *item.args.args][1:]]
                    for item in node.body
                    if isinstance(item, ast.FunctionDef) and not item.name.startswith("_")}
    raise ValueError(f"class {class_name} not found")


def parse_call(text: str, params: dict[str, list[str]]) -> ToolCall:
    """`mv(source='a', destination='b')` -> ToolCall; positional arguments named by the method's signature.
    ValueError when the text is not one call of a known method with literal arguments."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"not a call: {exc.msg}") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError("not a call of a function by name")
    name = node.func.id
    if name not in params:
        raise ValueError(f"no method '{name}' in the involved classes")
    names = params[name]
    if len(node.args) > len(names):
        raise ValueError(f"{name} takes {len(names)} argument(s), {len(node.args)} given by position")
    arguments: dict[str, Any] = {}
    try:
        for param, arg in zip(names, node.args, strict=False):
            arguments[param] = _literal(arg)
        for keyword in node.keywords:
            if keyword.arg is None:
                raise ValueError("**arguments are not supported")
            arguments[keyword.arg] = _literal(keyword.value)
    except (ValueError, TypeError, SyntaxError) as exc:
        raise ValueError(f"argument of {name} is not a literal: {exc}") from None
    return ToolCall(tool=name, arguments=arguments)


def _literal(node: ast.expr) -> Any:
    """A literal argument as JSON carries it (tuples become lists)."""
    value = ast.literal_eval(node)
    return _jsonable(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ValueError(f"{type(value).__name__} values cannot be passed as JSON")


def parse_turns(task_id: str, turns: list[list[str]], params: dict[str, list[str]]) -> list[list[ToolCall]]:
    """Every turn's ground-truth calls; InputFileError naming the task, turn and call for one that fails."""
    parsed = []
    for n, calls in enumerate(turns, start=1):
        row = []
        for text in calls:
            try:
                row.append(parse_call(text, params))
            except ValueError as exc:
                raise InputFileError("ground truth", f"task {task_id} turn {n}: {text!r}: {exc}") from None
        parsed.append(row)
    return parsed

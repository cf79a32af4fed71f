"""A recorded call's arguments against its tool's input schema: what does not fit, and the lossless fixes.

Reference calls imported from elsewhere (trajectories, a benchmark's ground truth) are data: an argument of
the wrong type (`close_ticket(ticket_id='ticket_001')` for an integer `ticket_id`) is a problem of that data,
reported as which argument, what the schema expects and what was given, before anything is replayed (the
server would refuse the call as an error result). `coerce_arguments` converts a value only when nothing but its
spelling changes:

* a string of decimal digits (optional sign, leading zeros allowed: '001' -> 1) to an integer;
* a decimal string ('2.50') to a number (an integral number such as 3.0 already fits an integer);
* 'true' / 'false' (any case) to a boolean;
* an integer or a finite number to a string ('7'), when the schema wants a string.

Anything else ('ticket_001', '1e3' for an integer, 2.5 for an integer) stays a problem.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from jsonschema import Draft202012Validator

from envscaler_mcp.skeleton.models import ToolSpec

_INTEGER = re.compile(r"[+-]?\d+")
_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)")


def _types(schema: Any) -> list[str]:
    """The JSON types a parameter schema accepts (its `type`, or those of its `anyOf` branches)."""
    if not isinstance(schema, dict):
        return []
    kind = schema.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    return [t for branch in schema.get("anyOf") or [] for t in _types(branch)]


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return (text if len(text) <= 80 else text[:77] + "...") + f" ({type(value).__name__})"


def argument_problems(tool: ToolSpec, arguments: dict[str, Any]) -> list[str]:
    """What in `arguments` does not fit the tool's input schema, one line each ([] = fits):
    `argument 'ticket_id': expected integer, given 'ticket_001' (str)`."""
    problems = []
    validator = Draft202012Validator(tool.input_schema)
    for error in sorted(validator.iter_errors(arguments), key=lambda e: list(e.path)):
        if error.path:
            name = str(error.path[0])
            value: Any = arguments.get(name)
            expected = error.message if len(error.path) > 1 else (
                "|".join(_types(tool.parameters().get(name))) or error.message)
            if error.validator == "enum":
                expected = "one of " + ", ".join(json.dumps(v) for v in error.validator_value)
            problems.append(f"argument '{name}': expected {expected}, given {_shown(value)}")
        elif error.validator == "required":
            problems.append(f"argument missing: {error.message}")
        elif error.validator == "additionalProperties":
            problems.append(f"unknown argument: {error.message}")
        else:
            problems.append(f"arguments: {error.message}")
    return problems


def _coerced_value(value: Any, wanted: list[str]) -> tuple[bool, Any]:
    """(True, the value converted to one of the `wanted` JSON types) when that is lossless, else (False, None)."""
    if isinstance(value, str):
        text = value.strip()
        if text != value:
            return False, None
        if "integer" in wanted and _INTEGER.fullmatch(text):
            return True, int(text)
        if "number" in wanted and _DECIMAL.fullmatch(text):
            number = float(text)
            return (True, int(number) if number.is_integer() and "." not in text else number)
        if "boolean" in wanted and text.lower() in ("true", "false"):
            return True, text.lower() == "true"
        return False, None
    if isinstance(value, bool):
        return False, None
    if isinstance(value, int | float) and "string" in wanted and math.isfinite(value):
        return True, str(value)
    return False, None


def coerce_arguments(tool: ToolSpec, arguments: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`arguments` with each top-level value that does not fit its parameter converted when that is lossless,
    and one line per conversion (`ticket_id: '001' (str) -> 1`)."""
    params = tool.parameters()
    out, changes = dict(arguments), []
    for name, value in arguments.items():
        schema = params.get(name)
        if schema is None or Draft202012Validator(schema).is_valid(value):
            continue
        ok, converted = _coerced_value(value, _types(schema))
        if ok and Draft202012Validator(schema).is_valid(converted):
            out[name] = converted
            changes.append(f"{name}: {_shown(value)} -> {json.dumps(converted)}")
    return out, changes

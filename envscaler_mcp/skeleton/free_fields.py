"""Free fields inferred from a skeleton's state schema, for environments nobody annotated by hand.

The bundled catalog declares its free fields in `environments/<env>/meta.json`. Imported (EnvScaler) and
synthesized environments have no such declaration, so they get this heuristic at build or import time:

* **free text**: a string field (or a list of strings) whose name, or its last `_`-separated word, is one of
  reason, note, notes, comment, comments, message, description, feedback, remark, remarks, text, body,
  resolution (`cancel_reason`, `resolution_note`, `comments`);
* **generated timestamp**: a string or number field named `timestamp`, or ending in `_at` or `_timestamp`
  (`created_at`, `updated_at`).

The heuristic reads names and types only, so it can be wrong both ways: an enum stored in a field called
`reason` ("overdue", "lost") becomes free, and a free-text field with another name does not. The state check
adds an empirical rule at scoring time (fields that differ between two replays of the reference solution are
free), and a scenario can add or remove patterns (`Scenario.state_check`).
"""

from __future__ import annotations

from typing import Any

from envscaler_mcp.skeleton.models import FreeField, StateAttribute

FREE_TEXT_WORDS = frozenset({
    "reason", "note", "notes", "comment", "comments", "message", "description", "feedback", "remark",
    "remarks", "text", "body", "resolution",
})
FREE_TEXT = "free text"
TIMESTAMP = "generated timestamp"


def _types(schema: dict[str, Any]) -> set[str]:
    """The JSON types a schema allows (following anyOf/oneOf branches)."""
    found: set[str] = set()
    kind = schema.get("type")
    if isinstance(kind, str):
        found.add(kind)
    elif isinstance(kind, list):
        found.update(k for k in kind if isinstance(k, str))
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or []:
            if isinstance(branch, dict):
                found |= _types(branch)
    return found


def _string_list(schema: dict[str, Any]) -> bool:
    items = schema.get("items")
    return "array" in _types(schema) and isinstance(items, dict) and "string" in _types(items)


def field_reason(name: str, schema: dict[str, Any]) -> str | None:
    """Why a field named `name` with this JSON schema is free, or None when it is not."""
    lowered = name.lower()
    word = lowered.rsplit("_", 1)[-1]
    types = _types(schema)
    if (lowered in FREE_TEXT_WORDS or word in FREE_TEXT_WORDS) and ("string" in types or _string_list(schema)):
        return FREE_TEXT
    if (lowered == "timestamp" or lowered.endswith(("_at", "_timestamp"))) and types & {"string", "number", "integer"}:
        return TIMESTAMP
    return None


def _walk(schema: dict[str, Any], path: str, out: list[FreeField]) -> None:
    branches = [b for key in ("anyOf", "oneOf") for b in schema.get(key) or [] if isinstance(b, dict)]
    for branch in branches:
        _walk(branch, path, out)
    for name, sub in (schema.get("properties") or {}).items():
        if not isinstance(sub, dict):
            continue
        reason = field_reason(name, sub)
        if reason is not None:
            out.append(FreeField(path=f"{path}.{name}", reason=reason))
        else:
            _walk(sub, f"{path}.{name}", out)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        _walk(extra, f"{path}.*", out)
    items = schema.get("items")
    if isinstance(items, dict):
        _walk(items, f"{path}[*]", out)


def infer_free_fields(state: list[StateAttribute]) -> list[FreeField]:
    """Free-field patterns of a state, by the heuristic in this module's docstring (no repeats, in order)."""
    found: list[FreeField] = []
    for attr in state:
        reason = field_reason(attr.name, attr.json_schema)
        if reason is not None:
            found.append(FreeField(path=attr.name, reason=reason))
        else:
            _walk(attr.json_schema, attr.name, found)
    unique: dict[str, FreeField] = {}
    for field in found:
        unique.setdefault(field.path, field)
    return list(unique.values())

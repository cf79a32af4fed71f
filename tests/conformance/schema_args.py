"""Make schema-valid (and deliberately invalid) arguments for any tool from its JSON Schema."""

from __future__ import annotations

from typing import Any

import jsonschema

MISSING_ID = "zz-does-not-exist"


def _type(schema: dict[str, Any]) -> str | None:
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), None)
    return t


def sample_value(schema: dict[str, Any]) -> Any:
    """A value valid for a simple property schema (strings look like ids that do not exist)."""
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return sample_value(options[0])
    t = _type(schema)
    if t == "integer":
        return max(1, int(schema.get("minimum", 1)))
    if t == "number":
        return max(1.5, float(schema.get("minimum", 1.5)))
    if t == "boolean":
        return True
    if t == "array":
        return []
    if t == "object":
        return {}
    return MISSING_ID


def sample_arguments(schema: dict[str, Any]) -> dict[str, Any] | None:
    """Required arguments with sample values, or None when the sample is not valid for the schema."""
    props = schema.get("properties", {})
    args = {name: sample_value(props.get(name, {})) for name in schema.get("required", [])}
    return args if jsonschema.Draft202012Validator(schema).is_valid(args) else None


def mistyped(schema: dict[str, Any]) -> Any:
    """A value of the wrong JSON type for the property, or None when any type is allowed."""
    t = _type(schema)
    if t is None or "anyOf" in schema or "oneOf" in schema:
        return None
    return 12345 if t == "string" else "not-the-right-type"

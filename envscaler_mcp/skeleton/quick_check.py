"""A fast yes/no check of a JSON value against the JSON Schemas our type converter writes.

jsonschema's validator spends ~20 µs a node building error paths even when a value is valid; a 1.3 MB state
has ~60,000 nodes. This compiles a schema once into closures that only answer "valid?". It is sound, not
complete: True means the value is plain JSON (what check_state_jsonable accepts) and jsonschema (Draft 2020-12,
formats not asserted) finds no error in it; False means "not sure", and the caller asks check_state_jsonable
and jsonschema for the problems. A schema with a keyword not handled here compiles to None.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]

_ANNOTATIONS = {"$schema", "title", "description", "default", "examples", "format", "$comment", "deprecated",
                "readOnly", "writeOnly"}
_HANDLED = _ANNOTATIONS | {"type", "properties", "additionalProperties", "required", "items", "prefixItems",
                           "minItems", "maxItems", "enum", "const", "anyOf", "oneOf"}


def _is_integer(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and value.is_integer())


def _is_number(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and math.isfinite(value))


def plain_json(value: Any) -> bool:
    """Is `value` plain JSON: string keys; str, int, finite float, bool, None, list, dict?"""
    stack = [value]
    while stack:
        item = stack.pop()
        if item is None or isinstance(item, bool | int | str):
            continue
        if isinstance(item, dict):
            for key in item:
                if not isinstance(key, str):
                    return False
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif not (isinstance(item, float) and math.isfinite(item)):
            return False
    return True


_SCALARS = {"string", "boolean", "null", "integer", "number"}
_TYPES: dict[str, Check] = {
    "string": lambda value: isinstance(value, str),
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
    "integer": _is_integer,
    "number": _is_number,
}


def _type_check(kind: Any) -> Check | None:
    names = [kind] if isinstance(kind, str) else kind
    if not isinstance(names, list) or not names or any(n not in _TYPES for n in names):
        return None
    if len(names) == 1:
        return _TYPES[names[0]]
    checks = [_TYPES[n] for n in names]
    return lambda value: any(c(value) for c in checks)


def _equal(a: Any, b: Any) -> bool:
    """JSON equality as jsonschema's enum and const see it (true is not 1)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | dict) or isinstance(b, list | dict):
        return False
    return bool(a == b)


def compile_check(schema: Any) -> Check | None:
    """A function telling whether a value is plain JSON and valid under `schema`, or None when the schema uses
    a keyword this module does not handle."""
    if schema is True or schema == {}:
        return plain_json
    if schema is False:
        return lambda value: False
    if not isinstance(schema, dict) or set(schema) - _HANDLED:
        return None
    parts: list[Check] = []
    if "type" in schema and not (schema["type"] == "object" and {"properties", "additionalProperties",
                                                                  "required"} & set(schema)):
        type_check = _type_check(schema["type"])
        if type_check is None:
            return None
        parts.append(type_check)
    for keyword, build in (("enum", _enum), ("const", _const), ("anyOf", _any_of), ("oneOf", _one_of)):
        if keyword in schema:
            part = build(schema[keyword])
            if part is None:
                return None
            parts.append(part)
    obj = _object(schema)
    arr = _array(schema)
    if obj is None or arr is None:
        return None
    parts += [p for p in (obj, arr) if callable(p)]
    # Does some part already walk the whole value (so it is plain JSON when every part says yes)?
    kind = schema.get("type")
    deep = (
        {"enum", "const", "anyOf", "oneOf"} & set(schema)
        or (isinstance(kind, str) and kind in _SCALARS)
        or (isinstance(kind, list) and set(kind) <= _SCALARS)
        or (kind == "object" and callable(obj))
        or (kind == "array" and callable(arr))
    )
    if not deep:
        parts.append(plain_json)
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 2:
        first, second = parts
        return lambda value: first(value) and second(value)
    return lambda value: all(part(value) for part in parts)


def _enum(options: Any) -> Check | None:
    if not isinstance(options, list):
        return None
    return lambda value: any(_equal(value, o) for o in options)


def _const(expected: Any) -> Check:
    return lambda value: _equal(value, expected)


def _subchecks(schemas: Any) -> list[Check] | None:
    if not isinstance(schemas, list) or not schemas:
        return None
    checks = [compile_check(s) for s in schemas]
    return None if any(c is None for c in checks) else checks  # type: ignore[return-value]


def _any_of(schemas: Any) -> Check | None:
    checks = _subchecks(schemas)
    return None if checks is None else lambda value: any(c(value) for c in checks)


def _one_of(schemas: Any) -> Check | None:
    checks = _subchecks(schemas)
    return None if checks is None else lambda value: sum(1 for c in checks if c(value)) == 1


_EXACT = {"string": str, "boolean": bool}  # types one isinstance decides


def _object(schema: dict[str, Any]) -> Check | bool | None:
    """The object keywords' check, True when there are none, None if unhandled. It passes values that are
    not objects unless the schema's type is exactly "object" (then it also checks the type)."""
    if not {"properties", "additionalProperties", "required"} & set(schema):
        return True
    props: dict[str, tuple[type | None, Check]] = {}  # name -> (the one type that decides, or None; check)
    for name, sub in (schema.get("properties") or {}).items():
        sub_check = compile_check(sub)
        if sub_check is None:
            return None
        plain_type = isinstance(sub, dict) and set(sub) <= {"type", "description", "title"} and isinstance(
            sub.get("type"), str)
        exact = _EXACT.get(sub["type"]) if plain_type else None
        props[name] = (exact, sub_check)
    extra = compile_check(schema.get("additionalProperties", True))
    required = schema.get("required") or []
    if extra is None or not isinstance(required, list):
        return None
    must_be_object = schema.get("type") == "object"

    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return not must_be_object
        for name in required:
            if name not in value:
                return False
        for key, item in value.items():
            if not isinstance(key, str):
                return False
            prop = props.get(key)
            if prop is None:
                if not extra(item):
                    return False
            elif prop[0] is not None:
                if not isinstance(item, prop[0]):
                    return False
            elif not prop[1](item):
                return False
        return True

    return check


def _array(schema: dict[str, Any]) -> Check | bool | None:
    """The array keywords' check (applies to lists only), True when there are none, None if unhandled."""
    if not {"items", "prefixItems", "minItems", "maxItems"} & set(schema):
        return True
    prefix = _subchecks(schema["prefixItems"]) if "prefixItems" in schema else []
    rest = compile_check(schema.get("items", True))
    low, high = schema.get("minItems", 0), schema.get("maxItems")
    if prefix is None or rest is None or not isinstance(low, int) or not (high is None or isinstance(high, int)):
        return None

    def check(value: Any) -> bool:
        if not isinstance(value, list):
            return True
        if len(value) < low or (high is not None and len(value) > high):
            return False
        for i, item in enumerate(value):
            if not (prefix[i](item) if i < len(prefix) else rest(item)):
                return False
        return True

    return check

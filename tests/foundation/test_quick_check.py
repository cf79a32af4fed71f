"""The quick schema check agrees with jsonschema: whatever it accepts, jsonschema and the JSON-ness check accept
(sound), and it accepts the catalog's valid states (so the fast path is taken)."""

from __future__ import annotations

import math
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envscaler_mcp.catalog.store import get_skeleton, list_env_ids, scenarios_for
from envscaler_mcp.skeleton.build import validate_state
from envscaler_mcp.skeleton.checks import check_state_jsonable
from envscaler_mcp.skeleton.quick_check import compile_check
from envscaler_mcp.skeleton.schema import state_schema

SCALAR_TYPES = ["string", "integer", "number", "boolean", "null"]

leaf_schemas = st.one_of(
    st.just({}),
    st.sampled_from([{"type": t} for t in SCALAR_TYPES]),
    st.sampled_from([{"type": "object"}, {"type": "array"}, {"type": ["string", "null"]},
                     {"type": "string", "format": "date-time"}, {"enum": ["a", "b", 1, True, None]},
                     {"const": 1}, {"enum": [[1, 2], {"k": False}]}]),
)


def _extend(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    names = st.sampled_from(["a", "b", "c"])
    return st.one_of(
        st.builds(lambda items: {"type": "array", "items": items}, children),
        st.builds(lambda p, lo, hi: {"type": "array", "prefixItems": p, "minItems": lo, "maxItems": hi},
                  st.lists(children, min_size=1, max_size=3), st.integers(0, 2), st.integers(1, 3)),
        st.builds(lambda props, req, extra: {"type": "object", "properties": props, "required": req,
                                             "additionalProperties": extra},
                  st.dictionaries(names, children, max_size=3), st.lists(names, max_size=2, unique=True),
                  st.one_of(st.booleans(), children)),
        st.builds(lambda extra: {"type": "object", "additionalProperties": extra}, children),
        st.builds(lambda opts: {"anyOf": opts}, st.lists(children, min_size=1, max_size=3)),
        st.builds(lambda opts: {"oneOf": opts}, st.lists(children, min_size=1, max_size=3)),
        st.builds(lambda props: {"properties": props}, st.dictionaries(names, children, max_size=2)),
    )


schemas = st.recursive(leaf_schemas, _extend, max_leaves=8)

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from(["a", "b", "x"]), st.just(1.0), st.just(2.5))
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), children, max_size=4),
        st.dictionaries(st.integers(0, 2), children, min_size=1, max_size=2),  # not JSON: int keys
        st.tuples(children),  # not JSON: a tuple
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=schemas, value=values)
def test_what_it_accepts_jsonschema_accepts(schema: dict[str, Any], value: Any) -> None:
    check = compile_check(schema)
    assert check is not None
    if check(value):
        assert jsonschema.Draft202012Validator(schema).is_valid(value), (schema, value)
        assert not check_state_jsonable({"v": value}), (schema, value)


@settings(max_examples=200, deadline=None)
@given(schema=schemas, value=values)
def test_it_accepts_valid_plain_json(schema: dict[str, Any], value: Any) -> None:
    # not required for soundness, but the fast path should cover the valid plain values it was made for
    check = compile_check(schema)
    assert check is not None
    plain = not check_state_jsonable({"v": value}) and not _has_float_integer(value)
    if plain and jsonschema.Draft202012Validator(schema).is_valid(value):
        assert check(value), (schema, value)


def _has_float_integer(value: Any) -> bool:
    """1.0 is an integer to jsonschema; the quick check agrees, but enum/const equality of 1.0 and 1 is where
    the two may differ, so such values are left out of the completeness test."""
    if isinstance(value, float):
        return math.isfinite(value) and value.is_integer()
    if isinstance(value, list | tuple):
        return any(_has_float_integer(v) for v in value)
    if isinstance(value, dict):
        return any(_has_float_integer(v) for v in value.values())
    return False


def test_unhandled_keywords_compile_to_none() -> None:
    assert compile_check({"type": "string", "pattern": "^a"}) is None
    assert compile_check({"$ref": "#/$defs/x"}) is None
    assert compile_check({"type": "object", "properties": {"a": {"minimum": 1}}}) is None


@pytest.mark.parametrize("env_id", list_env_ids())
def test_catalog_states_take_the_fast_path(env_id: str) -> None:
    skeleton = get_skeleton(env_id)
    check = compile_check(state_schema(skeleton))
    assert check is not None
    for scenario in scenarios_for(env_id):
        assert check(scenario.initial_state), scenario.id
        assert validate_state(skeleton, scenario.initial_state) == []
    broken = dict(skeleton.default_state)
    broken["not_an_attribute"] = 1
    assert not check(broken)
    assert validate_state(skeleton, broken)  # the slow path names the problem

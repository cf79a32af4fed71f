"""Properties of the state check over generated states, and the free-field pattern language."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envscaler_mcp.compare.freefields import FreeFields, literal_pattern, matches, parse_pattern
from envscaler_mcp.compare.statecheck import compare_states
from envscaler_mcp.qa.mutation import perturb

leaves = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text("abc", max_size=3))
values = st.recursive(leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), inner, max_size=3)),
    max_leaves=5)
records = st.fixed_dictionaries({"status": st.sampled_from(["new", "open", "done"]), "qty": st.integers(0, 4),
                                 "tags": st.lists(st.sampled_from(["x", "y", "z"]), max_size=3), "extra": values})
states = st.fixed_dictionaries({"items": st.dictionaries(st.sampled_from([f"I{n}" for n in range(6)]), records,
                                                         max_size=3),
                                "flag": st.booleans(), "log": st.lists(values, max_size=3)})
# a loaded CI machine must not fail these on generation speed; 50 examples each keep them under a second
PROPERTIES = settings(max_examples=50, deadline=None,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def leaf_paths(value: Any, path: list[Any]) -> list[list[Any]]:
    if isinstance(value, dict) and value:
        return [p for k, v in value.items() for p in leaf_paths(v, [*path, k])]
    if isinstance(value, list) and value:
        return [p for n, v in enumerate(value) for p in leaf_paths(v, [*path, n])]
    return [path]


def set_at(state: Any, path: list[Any], value: Any) -> None:
    for part in path[:-1]:
        state = state[part]
    state[path[-1]] = value


@PROPERTIES
@given(states, states)
def test_the_reference_state_always_passes(initial: dict[str, Any], reference: dict[str, Any]) -> None:
    assert compare_states(initial, reference, copy.deepcopy(reference)).passed


@PROPERTIES
@given(states, states, st.randoms(use_true_random=False))
def test_list_order_never_matters(initial: dict[str, Any], reference: dict[str, Any], rnd: random.Random) -> None:
    agent = copy.deepcopy(reference)
    rnd.shuffle(agent["log"])
    for record in agent["items"].values():
        rnd.shuffle(record["tags"])
    assert compare_states(initial, reference, agent).passed


@PROPERTIES
@given(states, states, st.data())
def test_any_changed_leaf_is_reported(initial: dict[str, Any], reference: dict[str, Any], data: st.DataObject) -> None:
    paths = [p for p in leaf_paths(reference, []) if p and not isinstance(p[-1], int)]  # list elements: multisets
    path = data.draw(st.sampled_from(paths))
    agent = copy.deepcopy(reference)
    target = reference
    for part in path:
        target = target[part]
    set_at(agent, path, perturb(target))
    result = compare_states(initial, reference, agent)
    assert not result.passed


@PROPERTIES
@given(st.lists(records, min_size=1, max_size=4), st.randoms(use_true_random=False))
def test_generated_keys_may_come_in_any_order(new: list[dict[str, Any]], rnd: random.Random) -> None:
    initial = {"items": {"I0": {"status": "open", "qty": 1, "tags": [], "extra": None}}, "index": []}
    reference = copy.deepcopy(initial)
    keys = [f"N{n}" for n in range(len(new))]
    for key, record in zip(keys, new, strict=True):
        reference["items"][key] = {**record, "id": key}
        reference["index"].append(key)
    order = list(range(len(new)))
    rnd.shuffle(order)
    agent = copy.deepcopy(initial)
    for slot, n in enumerate(order):  # the agent created the same records in another order
        agent["items"][f"N{slot}"] = {**new[n], "id": f"N{slot}"}
        agent["index"].append(f"N{slot}")
    assert compare_states(initial, reference, agent).passed


@pytest.mark.parametrize(("pattern", "path", "expected"), [
    ("orders.*.cancel_reason", ["orders", "O-1", "cancel_reason"], True),
    ("orders.*.cancel_reason", ["orders", "O-1", "status"], False),
    ("orders.*.cancel_reason", ["orders", "O-1", "cancel_reason", "x"], True),  # a subtree
    ("orders.*", ["orders"], False),
    ("orders.*.*_at", ["orders", "O-1", "created_at"], True),
    ("tickets.*.comments[*].text", ["tickets", "T1", "comments", 3, "text"], True),
    ("tickets.*.comments[*].text", ["tickets", "T1", "comments", "3", "text"], False),
    ("log[2]", ["log", 2], True),
    ("log[2]", ["log", 1], False),
    ("**.note", ["a", "b", 0, "note"], True),
    ("**.note", ["note"], True),
    ("**.note", ["a", "notes"], False),
    ("orders['O-1'].note", ["orders", "O-1", "note"], True),
    ("orders['a.b*'].note", ["orders", "a.b*", "note"], True),
    ("orders['a.b*'].note", ["orders", "a.bc", "note"], False),
])
def test_patterns(pattern: str, path: list[Any], expected: bool) -> None:
    assert matches(parse_pattern(pattern), path) is expected


@pytest.mark.parametrize("bad", ["", "a..b", ".a", "a[", "a[x]", "a.", "a[*"])
def test_malformed_patterns_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="bad free-field pattern"):
        parse_pattern(bad)


@pytest.mark.parametrize(("bad", "why"), [
    ("orders[]", r"\[\] is not \[\*\], \[N\] or \['key'\]"),
    ("orders[x].note", r"\[x\] is not"),
    ("orders['O-1'.note", r"'\[' at position 6 is not closed"),
    ("orders.[0]", "empty key at position 6"),
])
def test_a_malformed_pattern_says_what_is_wrong(bad: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_pattern(bad)


def test_literal_patterns_round_trip() -> None:
    path = ["orders", "O-10057", "items", 0, "note"]
    pattern = literal_pattern(path, wildcard={"O-10057"})
    assert pattern == "orders.*.items[*].note"
    assert matches(parse_pattern(pattern), ["orders", "X", "items", 4, "note"])
    assert literal_pattern(["a b", "c"]) == "['a b'].c"
    assert matches(parse_pattern(literal_pattern(["a b", "c"])), ["a b", "c"])
    # a record stored under the empty key (JSON allows it) round-trips too
    assert literal_pattern(["orders", "", "note"]) == "orders[''].note"
    assert matches(parse_pattern("orders[''].note"), ["orders", "", "note"])
    assert not matches(parse_pattern("orders[''].note"), ["orders", "O-1", "note"])


def test_free_fields_say_why() -> None:
    free = FreeFields([("orders.*.note", "free text")], not_free=["orders.O1.note"])
    assert free.reason(["orders", "O2", "note"]) == "free text"
    assert free.reason(["orders", "O1", "note"]) is None
    assert free.reason(["orders", "O2", "status"]) is None

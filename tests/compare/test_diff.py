"""Structural state diff."""

from __future__ import annotations

import copy
import json

from envscaler_mcp.compare.diff import StateChange, diff_states, format_path, state_diff


def ops(changes: list[StateChange]) -> list[tuple[str, str, object, object]]:
    return [(c.path_str(), c.op, c.old, c.new) for c in changes]


def test_equal_states_have_no_changes() -> None:
    state = {"a": {"b": [1, 2, {"c": None}]}, "d": "x"}
    assert diff_states(state, copy.deepcopy(state)) == []


def test_nested_dict_changes() -> None:
    old = {"orders": {"O1": {"status": "pending", "qty": 1}, "O2": {"status": "new"}}, "today": "d1"}
    new = {"orders": {"O1": {"status": "shipped", "qty": 1}, "O3": {"status": "new"}}, "today": "d1"}
    assert ops(diff_states(old, new)) == [
        ("orders.O1.status", "changed", "pending", "shipped"),
        ("orders.O2", "removed", {"status": "new"}, None),
        ("orders.O3", "added", None, {"status": "new"}),
    ]


def test_lists_are_compared_element_wise() -> None:
    old = {"items": [{"id": 1, "q": 1}, {"id": 2, "q": 1}]}
    new = {"items": [{"id": 1, "q": 5}, {"id": 2, "q": 1}, {"id": 3, "q": 1}]}
    assert ops(diff_states(old, new)) == [
        ("items[0].q", "changed", 1, 5),
        ("items[2]", "added", None, {"id": 3, "q": 1}),
    ]
    assert ops(diff_states({"l": [1, 2, 3]}, {"l": [1, 2]})) == [("l[2]", "removed", 3, None)]


def test_insert_at_the_front_aligns_at_the_end() -> None:
    assert ops(diff_states({"l": ["b", "c", "d"]}, {"l": ["a", "b", "c", "d"]})) == [("l[0]", "added", None, "a")]
    assert ops(diff_states({"l": ["a", "b", "c"]}, {"l": ["b", "c"]})) == [("l[0]", "removed", "a", None)]


def test_a_list_that_matches_as_well_at_both_ends_grew_at_its_end() -> None:
    assert ops(diff_states({"l": ["a", "b"]}, {"l": ["a", "b", "a", "b"]})) == [
        ("l[2]", "added", None, "a"), ("l[3]", "added", None, "b")]
    assert ops(diff_states({"l": ["x", "x", "x"]}, {"l": ["x", "x"]})) == [("l[2]", "removed", "x", None)]


def test_type_changes_and_bool_vs_int() -> None:
    assert ops(diff_states({"x": [1]}, {"x": {"a": 1}})) == [("x", "changed", [1], {"a": 1})]
    # At a leaf, true -> 1 is a change (inside equal-comparing containers Python's == cannot tell).
    assert ops(diff_states(True, 1)) == [("(root)", "changed", True, 1)]


def test_ignore_keys_and_path_format() -> None:
    assert diff_states({"clock": 1, "a": 1}, {"clock": 2, "a": 1}, ignore_keys=["clock"]) == []
    assert format_path(["users", "u 1", "tags", 0]) == "users['u 1'].tags[0]"
    assert format_path([]) == "(root)"


def test_large_state_with_few_changes() -> None:
    old = {"records": {f"R{i}": {"id": f"R{i}", "name": "x" * 40, "tags": ["a", "b"], "n": i} for i in range(8000)}}
    new = copy.deepcopy(old)
    new["records"]["R42"]["n"] = -1
    new["records"]["R7000"]["tags"].append("c")
    assert ops(diff_states(old, new)) == [
        ("records.R42.n", "changed", 42, -1),
        ("records.R7000.tags[2]", "added", None, "c"),
    ]


def test_state_diff_has_envscalers_nested_shape() -> None:
    old = {"orders": {"O1": {"status": "pending"}, "O2": {}}, "notes": ["a"]}
    new = {"orders": {"O1": {"status": "shipped"}, "O3": {"x": 1}}, "notes": ["a", "b"]}
    assert state_diff(old, new) == {
        "orders": {"O1": {"status": {"changed": {"old": "pending", "new": "shipped"}}},
                   "O2": {"removed": {}}, "O3": {"added": {"x": 1}}},
        "notes": {"[1]": {"added": "b"}},
    }
    assert state_diff(old, old) == {}
    assert state_diff(1, 2) == {"changed": {"old": 1, "new": 2}}


def test_a_front_insert_is_found_when_only_the_last_element_still_matches() -> None:
    # a note prepended to a history whose older entry was also edited: the last element alone lines up
    assert ops(diff_states({"l": ["a", "z"]}, {"l": ["x", "y", "z"]})) == [
        ("l[0]", "added", None, "x"),
        ("l[1]", "changed", "a", "y"),
    ]


def test_states_parsed_apart_from_the_same_json_have_no_changes() -> None:
    # snapshots come from separate parses: equal values are distinct objects, not the same one
    text = json.dumps({"orders": {"O-1": {"note": "gift wrap, leave at the door", "total": 1234.5, "n": 10**20,
                                          "lines": [{"sku": "lamp-0042", "qty": 300}, "x" * 40]}}})
    assert diff_states(json.loads(text), json.loads(text)) == []
    assert state_diff(json.loads(text), json.loads(text)) == {}

"""The values a failed state validator read: constant paths of its source, looked up in the final state."""

from __future__ import annotations

from envscaler_mcp.harness.readings import MAX_READINGS, values_read

STATE = {"orders": {"O-1": {"status": "pending", "items": [{"sku": "A"}]}}, "notes": []}


def test_longest_constant_paths_with_their_values() -> None:
    source = (
        "def check_func(final_state):\n"
        "    o = final_state['orders']['O-1']\n"
        "    return final_state['orders']['O-1']['status'] == 'cancelled' and "
        "final_state['orders'].get('O-1')['items'][0]['sku'] == 'B'\n"
    )
    assert values_read(source, STATE) == [
        'final_state["orders"]["O-1"]["status"] = "pending"',
        'final_state["orders"]["O-1"]["items"][0]["sku"] = "A"',
    ]


def test_missing_paths_other_argument_names_and_long_values() -> None:
    source = "def check_func(s):\n    return s['orders']['O-9']['status'] == 'x' or len(s['orders']) > 99\n"
    read = values_read(source, STATE)
    assert read[0] == 'final_state["orders"]["O-9"]["status"] is missing'
    big = {"orders": {f"O-{i}": {"status": "pending"} for i in range(50)}}
    assert values_read("def check_func(s):\n    return len(s['orders']) > 99\n", big)[0].endswith("…")


def test_nothing_to_show() -> None:
    assert values_read("def check_func(s):\n    return all(v for v in s.values())\n", STATE) == []
    assert values_read("def check_func(:\n", STATE) == []
    assert values_read("x = 1\n", STATE) == []
    many = "def check_func(s):\n    return " + " and ".join(f"s['k{i}'] == 1" for i in range(9)) + "\n"
    assert len(values_read(many, STATE)) == MAX_READINGS

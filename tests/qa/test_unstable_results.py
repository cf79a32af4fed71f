"""Which reference calls answer differently on two replays (references/reference.py unstable_results)."""

from __future__ import annotations

from envscaler_mcp.references.reference import unstable_results
from envscaler_mcp.references.replay import ReplayCall


def _call(text: str) -> ReplayCall:
    return ReplayCall(tool="t", ok=True, result_text=text)


def test_only_the_calls_whose_results_differ_are_unstable() -> None:
    first = [_call('{"id": 1}'), _call('{"at": "07:00"}'), _call('{"x": 2}')]
    second = [_call('{"id": 1}'), _call('{"at": "07:01"}'), _call('{"x": 2}')]
    assert unstable_results(first, second) == [1]
    assert unstable_results(first, first) == []
    assert unstable_results(first, second[:1]) == []  # a shorter replay (it failed) compares what both made

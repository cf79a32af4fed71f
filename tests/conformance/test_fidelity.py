"""Fidelity: replaying a scenario's reference solution through the server gives exactly the in-process result."""

from __future__ import annotations

import json

import pytest

from envscaler_mcp._outcome import read_result
from envscaler_mcp.launch import LaunchedServer
from tests.conformance.subjects import Subject, replay_in_process

pytestmark = pytest.mark.anyio


async def test_reference_solutions_replay_identically(launched: LaunchedServer, subject: Subject) -> None:
    scenarios = [s for s in subject.scenarios if s.reference_solution]
    if not scenarios:
        pytest.skip(f"{subject.name} has no scenarios with reference solutions")
    if launched.transport == "stdio":
        scenarios = scenarios[:1]  # a process per episode: one scenario is enough here
    for scenario in scenarios:
        calls = [(c.tool, c.arguments) for c in scenario.reference_solution]
        expected_state, expected_results = replay_in_process(subject, scenario.initial_state, calls)
        async with launched.episode(scenario.initial_state) as ep:
            if launched.transport == "stdio":
                listed = [t.name for t in await ep.list_tools()]
                assert listed == [t["name"] for t in subject.spec["tools"]]
            results = []
            for tool, arguments in calls:
                r = await ep.call_tool(tool, arguments)
                results.append("error" if r.is_error else read_result(r).value)
            final = await ep.get_state()
        assert results == expected_results, scenario.id
        assert json.dumps(final) == json.dumps(expected_state), scenario.id

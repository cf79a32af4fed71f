"""The environment check's tool coverage against broken tools and unreachable lookups seeded into a bundled
environment's code (tests/qa/seeded_tool_defects.py): each mutated tool is not proven to work, while every tool
of the good code is. The whole catalog's catch rates: benchmarks/gate_defects.py --tools (docs/synth-envs.md)."""

from __future__ import annotations

import pytest

from envscaler_mcp.catalog.store import get_skeleton
from tests.qa.seeded_tool_defects import TOOL_KINDS, prove, seeded_tools

pytestmark = pytest.mark.anyio
ENV = "ecommerce_orders"


async def test_every_tool_of_the_good_code_works() -> None:
    proofs = await prove(get_skeleton(ENV), ENV, transport="memory")
    assert {t: p.status for t, p in proofs.items() if p.status != "works"} == {}
    assert len(proofs) == len(get_skeleton(ENV).tools)


async def test_seeded_broken_tools_and_unreachable_lookups_are_not_proven() -> None:
    seeded = seeded_tools(3, [ENV])
    assert {kind for kind, *_ in seeded} == set(TOOL_KINDS)
    statuses = {}
    for kind, env, tool, mutant in seeded:
        assert mutant.class_source != get_skeleton(env).class_source
        statuses[(kind, tool)] = (await prove(mutant, env, [tool], transport="memory"))[tool].status
    assert {s for (kind, _), s in statuses.items() if kind == "broken tool"} == {"crashes"}, statuses
    assert "works" not in {s for (kind, _), s in statuses.items() if kind == "unreachable lookup"}, statuses

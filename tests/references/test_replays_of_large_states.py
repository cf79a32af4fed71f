"""The reference's two replays run at once for small initial states, one after the other for an initial state
of more than 1 MB (each replay holds an episode process with its copy of the state), with the same reference."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from envscaler_mcp._json import parse_state
from envscaler_mcp.references.reference import build_reference
from tests.qa.fake_episode import fake_shop_episode
from tests.qa.test_gate import scenario

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(("pad", "most"), [(1000, 2), (1_200_000, 1)])
async def test_replays_of_a_large_state_run_one_at_a_time(pad: int, most: int) -> None:
    base = scenario()
    state = parse_state(json.dumps({**base.initial_state, "pad": "x" * pad}).encode())
    assert state is not None
    live = {"now": 0, "most": 0}

    @asynccontextmanager
    async def counted(initial: Any) -> AsyncIterator[Any]:
        live["now"] += 1
        live["most"] = max(live["most"], live["now"])
        try:
            async with fake_shop_episode(dict(initial)) as episode:
                await anyio.sleep(0.05)  # both replays are under way before either ends, when run at once
                yield episode
        finally:
            live["now"] -= 1

    reference = await build_reference(base.model_copy(update={"initial_state": state}), counted)
    assert not reference.unavailable and reference.final_state is not None
    assert reference.final_state["orders"]["O1"]["status"] == "cancelled"
    assert live["most"] == most

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
from tests.qa.fake_episode import FakeShopEpisode, fake_shop_episode
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


class _Closing(FakeShopEpisode):
    """The shop as a launched episode: its final state is read (and the episode closed) as the server's JSON
    text, parsed unless it is `like`'s text. `stamp` is written into the state by every replay (a clock)."""

    def __init__(self, state: dict[str, Any], stamp: int, finals: list[Any]) -> None:
        super().__init__(state)
        self.state["stamp"] = stamp
        self.finals = finals

    async def final_state(self, like: Any = None) -> Any:
        self.finals.append(parse_state(json.dumps(self.state).encode(), like))
        return self.finals[-1]


@pytest.mark.parametrize("clock", [False, True])
async def test_a_second_replay_of_a_large_state_keeps_no_parse_of_its_own_when_its_text_is_the_same(
        clock: bool) -> None:
    base = scenario()
    state = parse_state(json.dumps({**base.initial_state, "pad": "x" * 1_200_000}).encode())
    finals: list[Any] = []

    @asynccontextmanager
    async def closing(initial: Any) -> AsyncIterator[Any]:
        yield _Closing(dict(initial), len(finals) if clock else 0, finals)

    reference = await build_reference(base.model_copy(update={"initial_state": state}), closing)
    assert len(finals) == 2 and reference.final_state is finals[0]
    assert not reference.unavailable and reference.final_state["orders"]["O1"]["status"] == "cancelled"
    if clock:  # another text: parsed, and compared as before (the differing field found free)
        assert finals[1] is not finals[0] and finals[1]["stamp"] == 1
        assert len(reference.nondeterministic) == 1
    else:  # the same text: the first replay's final state, one parse held
        assert finals[1] is finals[0] and reference.nondeterministic == []

"""The gate replays every reference solution; where an earlier run of the same server code kept the scenario's
reference, the kept replay stands for the second replay only when the fresh one is the same, byte for byte: any
difference (the final state, a call's result, fields the kept replays found free) costs a second fresh replay,
and the reference is then exactly the one two fresh replays give."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp.references.reference import Reference, ReferenceCache, build_reference
from envscaler_mcp.references.store import ReferenceStore
from tests.harness.shop import ALICE, BOB

pytestmark = pytest.mark.anyio


async def _gate(store: ReferenceStore, factory: Any, scenario: Any = BOB) -> tuple[Reference, ReferenceCache]:
    cache = ReferenceCache(store=store, reuse=False)
    return await cache.get(scenario, factory, env_key="mini_shop", env_hash="code-1"), cache


def _same(one: Reference, other: Reference) -> None:
    """What a verdict reads of a reference is the same in both."""
    assert one.final_state == other.final_state and one.calls == other.calls
    assert [c.result_text for c in one.calls] == [c.result_text for c in other.calls]
    assert one.nondeterministic == other.nondeterministic and one.unstable_results == other.unstable_results
    assert one.free.patterns == other.free.patterns and one.unavailable == other.unavailable
    assert one.replay_reasons == other.replay_reasons and one.turn_states == other.turn_states
    for state in (one.final_state, ALICE.initial_state, BOB.initial_state):
        assert one.check(state) == other.check(state)


async def test_an_agreeing_kept_replay_is_the_second_and_is_not_written_again(tmp_path: Path, counted: Any) -> None:
    factory, opened = counted
    store = ReferenceStore(tmp_path)
    first, cache = await _gate(store, factory)
    assert opened[0] == 2 and cache.confirmed == 0 and not first.confirmed
    (state_file,) = tmp_path.glob("*.state")
    written = state_file.stat().st_mtime_ns, state_file.read_bytes()
    again, cache = await _gate(store, factory)
    assert opened[0] == 3 and cache.confirmed == 1 and again.confirmed
    _same(again, first)
    assert (state_file.stat().st_mtime_ns, state_file.read_bytes()) == written


async def test_a_kept_final_state_of_other_bytes_costs_a_second_replay_and_is_rewritten(tmp_path: Path,
                                                                                      counted: Any) -> None:
    factory, opened = counted
    store = ReferenceStore(tmp_path)
    first, _ = await _gate(store, factory)
    (state_file,) = tmp_path.glob("*.state")
    kept = json.loads(state_file.read_bytes())
    order = next(iter(kept["orders"]))
    kept["orders"][order]["status"] = "lost"  # valid JSON, another value
    state_file.write_bytes(json.dumps(kept).encode())
    again, cache = await _gate(store, factory)
    assert opened[0] == 4 and cache.confirmed == 0 and not again.confirmed
    _same(again, first)
    assert json.loads(state_file.read_bytes()) == first.final_state  # the fresh replays' state is kept again


@pytest.mark.parametrize("edit", ["result", "free", "unstable", "fewer calls"])
async def test_a_kept_replay_that_differs_or_found_free_fields_costs_a_second_replay(tmp_path: Path, counted: Any,
                                                                                      edit: str) -> None:
    factory, opened = counted
    store = ReferenceStore(tmp_path)
    first, _ = await _gate(store, factory)
    (entry,) = tmp_path.glob("*.json")
    data = json.loads(entry.read_text(encoding="utf-8"))
    if edit == "result":
        data["calls"][0]["result_text"] = data["calls"][0]["result_text"].replace("true", "false", 1)
    elif edit == "free":
        data["nondeterministic"] = [["orders.*.note", "differs between two replays"]]
    elif edit == "unstable":
        data["unstable_results"] = [0]
    else:
        data["calls"] = data["calls"][:-1]
    entry.write_text(json.dumps(data), encoding="utf-8")
    again, cache = await _gate(store, factory)
    assert opened[0] == 4 and cache.confirmed == 0 and not again.confirmed
    _same(again, first)  # the fields two fresh replays give, not the kept entry's


async def test_a_failing_reference_solution_is_not_confirmed_by_a_kept_replay(tmp_path: Path, counted: Any) -> None:
    """A kept reference is only ever one whose replays succeeded; a solution that fails now is reported failed."""
    factory, _ = counted
    store = ReferenceStore(tmp_path)
    await _gate(store, factory)
    kept = store.load(next(tmp_path.glob("*.json")), BOB, [])
    assert kept is not None
    broken_shop = {**BOB.initial_state, "orders": {}}  # the orders its calls act on are gone: they fail now
    built = await build_reference(BOB.model_copy(update={"initial_state": broken_shop}), factory, kept=kept)
    assert not built.confirmed and built.final_state is None and built.unavailable

"""Reference final states kept across runs (references/store.py): read back instead of replayed while the
server code and the scenario are the same, replayed again when either changes, never kept when they failed."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp._json import ParsedState, encode_json, parse_state
from envscaler_mcp.compare.diff import StateChange, diff_states
from envscaler_mcp.harness.config import EnvPlan, RunConfig, scenario_hashes
from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.seats import Seat
from envscaler_mcp.launch import launch_server
from envscaler_mcp.references.reference import ReferenceCache
from envscaler_mcp.references.store import ReferenceStore
from envscaler_mcp.scenario.models import ToolCall
from tests.harness.shop import BOB, ENV_INFO, SCENARIOS, SKELETON

pytestmark = pytest.mark.anyio


async def _get(store: ReferenceStore, factory: Any, scenario: Any = BOB, code: str = "code-1") -> tuple[Any, int]:
    cache = ReferenceCache(store=store)
    return await cache.get(scenario, factory, env_key="mini_shop", env_hash=code), cache.loaded


async def test_a_stored_reference_is_read_back_unchanged(tmp_path: Path, counted: Any) -> None:
    factory, opened = counted
    store = ReferenceStore(tmp_path)
    built, loaded = await _get(store, factory)
    assert loaded == 0 and opened[0] == 2 and built.final_state is not None and not built.unavailable
    assert len(list(tmp_path.glob("*.json"))) == 1
    again, loaded = await _get(store, factory)
    assert loaded == 1 and opened[0] == 2  # no replay
    assert again.final_state == built.final_state and again.calls == built.calls
    assert again.nondeterministic == built.nondeterministic and again.free.patterns == built.free.patterns
    assert again.check(built.final_state) == built.check(built.final_state)
    assert again.check(BOB.initial_state) == built.check(BOB.initial_state)


async def test_the_diff_from_the_initial_state_is_kept_and_read_back(tmp_path: Path, counted: Any) -> None:
    """A run reads the reference's diff of the initial state from the store instead of walking both states
    for every scenario again: the diff read back is the one the walk gives, and it is the file's."""
    factory, _opened = counted
    store = ReferenceStore(tmp_path)
    built, _ = await _get(store, factory)
    walked = diff_states(BOB.initial_state, built.final_state)
    assert walked and built.diff_from_initial() == walked  # the scenario changes something
    (entry,) = tmp_path.glob("*.json")
    data = json.loads(entry.read_text())
    assert [StateChange.model_validate(c) for c in data["diff_from_initial"]] == walked
    again, loaded = await _get(store, factory)
    assert loaded == 1 and again.diff_from_initial() == walked
    data["diff_from_initial"] = data["diff_from_initial"][:1] * 2  # what the file says is what a run gets
    entry.write_text(json.dumps(data))
    assert (await _get(store, factory))[0].diff_from_initial() == [walked[0], walked[0]]
    del data["diff_from_initial"]  # an entry without it is replayed and written again, with it
    entry.write_text(json.dumps(data))
    rebuilt, loaded = await _get(store, factory)
    assert loaded == 0 and rebuilt.diff_from_initial() == walked
    assert "diff_from_initial" in json.loads(entry.read_text())


async def test_other_code_or_another_scenario_is_replayed(tmp_path: Path, counted: Any) -> None:
    factory, opened = counted
    store = ReferenceStore(tmp_path)
    await _get(store, factory)
    await _get(store, factory, code="code-2")  # the server's code changed
    assert opened[0] == 4
    shorter = BOB.model_copy(update={"reference_solution": BOB.reference_solution[:1]})
    changed, loaded = await _get(store, factory, shorter)
    assert loaded == 0 and opened[0] == 6 and changed.calls == changed.calls[:1]
    assert len(list(tmp_path.glob("*.json"))) == 3


async def test_another_success_convention_is_replayed(tmp_path: Path, counted: Any) -> None:
    """The convention decides whether a call failed (and a failed call ends the replay): a reference replayed
    under one is not read back under another."""
    factory, opened = counted
    store = ReferenceStore(tmp_path)
    await _get(store, factory)
    other = ReferenceCache(store=store)
    await other.get(BOB, factory, env_key="mini_shop", env_hash="code-1", convention="no-error")
    assert other.loaded == 0 and opened[0] == 4
    again = ReferenceCache(store=store)
    await again.get(BOB, factory, env_key="mini_shop", env_hash="code-1", convention="no-error")
    assert again.loaded == 1 and opened[0] == 4
    assert len(list(tmp_path.glob("*.json"))) == 2


async def test_a_cache_that_does_not_reuse_replays_and_keeps(tmp_path: Path, counted: Any) -> None:
    """The gate's cache (reuse=False): replayed every time (twice, or once when the kept replay agrees with it),
    kept once under its one name, read by a later run."""
    factory, opened = counted
    store = ReferenceStore(tmp_path)
    for n, replays in ((1, 2), (2, 3), (3, 4)):
        gate = ReferenceCache(store=store, reuse=False)
        await gate.get(BOB, factory, env_key="mini_shop", env_hash="code-1")
        assert gate.loaded == 0 and opened[0] == replays and gate.confirmed == (n > 1)
    assert len(list(tmp_path.glob("*.json"))) == 1
    later = ReferenceCache(store=store)
    await later.get(BOB, factory, env_key="mini_shop", env_hash="code-1")
    assert later.loaded == 1 and opened[0] == 4


async def test_a_failed_replay_is_not_kept(tmp_path: Path, counted: Any) -> None:
    factory, opened = counted
    store = ReferenceStore(tmp_path)
    broken = BOB.model_copy(update={"reference_solution": [ToolCall(tool="cancel_order", arguments={"order_id": "nope"})]})
    first, _ = await _get(store, factory, broken)
    assert first.unavailable and not list(tmp_path.glob("*.json"))
    await _get(store, factory, broken)
    assert opened[0] == 4  # replayed again


async def test_an_unreadable_entry_is_replayed_and_rewritten(tmp_path: Path, counted: Any) -> None:
    factory, opened = counted
    store = ReferenceStore(tmp_path)
    built, _ = await _get(store, factory)
    (entry,) = tmp_path.glob("*.json")
    entry.write_text('{"final_state": [', encoding="utf-8")
    again, loaded = await _get(store, factory)
    assert loaded == 0 and opened[0] == 4 and again.final_state == built.final_state
    assert ReferenceStore(tmp_path).load(entry, BOB, []) is not None


async def test_a_torn_state_file_is_replayed_and_rewritten(tmp_path: Path, counted: Any) -> None:
    factory, opened = counted
    store = ReferenceStore(tmp_path)
    built, _ = await _get(store, factory)
    (state_file,) = tmp_path.glob("*.state")
    state_file.write_bytes(state_file.read_bytes()[:-5])
    again, loaded = await _get(store, factory)
    assert loaded == 0 and opened[0] == 4 and again.final_state == built.final_state
    assert json.loads(state_file.read_bytes()) == built.final_state


async def test_the_byte_equal_final_state_passes_and_any_other_is_walked(tmp_path: Path, counted: Any) -> None:
    """The state check's shortcut: a final state whose JSON is the stored reference's byte for byte passes at
    once; any other text (the same value with its keys in another order, or another value) goes through the
    walk, which passes the first and fails the second."""
    factory, _ = counted
    store = ReferenceStore(tmp_path)
    await _get(store, factory)
    stored, loaded = await _get(store, factory)
    assert loaded == 1 and isinstance(stored.final_state, ParsedState)
    assert stored.check(parse_state(stored.final_state.encoded)).status == "pass"
    reordered = {**stored.final_state, "orders": dict(reversed(list(stored.final_state["orders"].items())))}
    assert encode_json(reordered) != stored.final_state.encoded
    assert stored.check(parse_state(encode_json(reordered))).status == "pass"
    orders = stored.final_state["orders"]
    first = next(iter(orders))
    other = {**stored.final_state, "orders": {**orders, first: {**orders[first], "status": "lost"}}}
    verdict = stored.check(parse_state(encode_json(other)))
    assert verdict.status == "fail" and any("status" in c.path for c in verdict.changes)


async def test_a_second_run_reads_the_stored_references_and_writes_the_same_results(tmp_path: Path,
                                                                                     monkeypatch: Any) -> None:
    from tests.harness.test_warm_sessions import _comparable

    monkeypatch.setenv("ENVSCALER_MCP_CACHE_DIR", str(tmp_path / "cache"))
    opened: list[int] = []

    @asynccontextmanager
    async def source(plan: EnvPlan, config: RunConfig) -> AsyncIterator[Any]:
        async with launch_server(SKELETON, transport="memory", scenarios=SCENARIOS) as server:
            real = server.episode

            def counted(state: Any = None, **kw: Any) -> Any:
                opened.append(1)
                return real(state, **kw)

            server.episode = counted  # type: ignore[method-assign]
            yield server

    plan = EnvPlan(env_id=SKELETON.id, env_info=ENV_INFO, scenarios=SCENARIOS,
                   hashes={"environment": SKELETON.content_hash(), **scenario_hashes(SCENARIOS)})
    config = RunConfig(envs=[SKELETON.id], agent="oracle", trials=1, transport="memory", progress=False)  # type: ignore[arg-type]
    for n in (1, 2):
        await run_eval(config, tmp_path / f"run{n}", plans=[plan], agent=Seat.oracle(), source_factory=source)
        if n == 1:
            first = len(opened)
    assert first == 3 * len(SCENARIOS)  # an episode and two reference replays per scenario
    assert len(opened) - first == len(SCENARIOS)  # the episodes only: the references were read back
    assert len(list((tmp_path / "cache" / "references").glob("*.json"))) == len(SCENARIOS)
    assert _comparable(tmp_path / "run1") == _comparable(tmp_path / "run2")


async def test_the_calls_whose_results_vary_between_replays_are_kept(tmp_path: Path, counted: Any) -> None:
    factory, _ = counted
    store = ReferenceStore(tmp_path)
    built, _ = await _get(store, factory)
    assert built.unstable_results == []  # mini_shop answers the same every time
    built.unstable_results = [0, 2]
    path = store.path("code-2", ("x",), [])
    store.save(path, built)
    loaded = store.load(path, BOB, [])
    assert loaded is not None and loaded.unstable_results == [0, 2]
    assert [c.result_text for c in loaded.calls] == [c.result_text for c in built.calls]
    assert json.loads(loaded.calls[0].result_text)["data"]["order_id"] == "O-1002"

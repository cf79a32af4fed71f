"""A reference kept in the store under another scenario's name (a misfiled or planted entry) stands for no replay
in the gate: the gate replays the scenario itself, finds the kept replay is not its own byte for byte, and replays
a second time, so what it reports and keeps is its own two replays'."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp.references.reference import ReferenceCache
from envscaler_mcp.references.store import ReferenceStore
from tests.harness.shop import ALICE, BOB, counted_episodes

pytestmark = pytest.mark.anyio


async def test_a_reference_copied_to_another_scenarios_name_is_replayed_over(tmp_path: Path) -> None:
    async with counted_episodes() as (factory, opened):
        async def gate(scenario: Any, folder: Path) -> Any:
            cache = ReferenceCache(store=ReferenceStore(folder), reuse=False)
            return await cache.get(scenario, factory, env_key="mini_shop", env_hash="code-1"), cache

        own, _ = await gate(BOB, tmp_path / "clean")  # Bob's reference from two fresh replays, nothing kept
        store = ReferenceStore(tmp_path / "planted")
        await gate(ALICE, tmp_path / "planted")
        alice = store.path("code-1", ReferenceCache.key(ALICE, "mini_shop")[1:], [])
        bob = store.path("code-1", ReferenceCache.key(BOB, "mini_shop")[1:], [])
        for suffix in (".json", ".state"):  # Alice's entry filed under Bob's name
            shutil.copy(alice.with_suffix(suffix), bob.with_suffix(suffix))
        opened[0] = 0
        got, cache = await gate(BOB, tmp_path / "planted")
    assert opened[0] == 2 and cache.confirmed == 0 and not got.confirmed
    assert got.final_state == own.final_state and got.calls == own.calls
    assert got.final_state != store.load(alice, ALICE, []).final_state  # type: ignore[union-attr]
    kept = store.load(bob, BOB, [])
    assert kept is not None and kept.final_state == own.final_state  # Bob's own replays written over it

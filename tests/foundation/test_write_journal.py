"""The write journal: the atomic writes and JSONL appends made in a context, replayed elsewhere in order."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from envscaler_mcp._io import append_jsonl, atomic_write_json, iter_jsonl, journal_writes, replay_writes


def test_writes_of_a_context_and_its_tasks_are_recorded_in_order_and_replayed(tmp_path: Path) -> None:
    scratch, real = tmp_path / "scratch", tmp_path / "real"
    append_jsonl(real / "log.jsonl", {"id": "earlier"})  # already there: the replay appends after it

    async def item() -> None:
        atomic_write_json(scratch / "states" / "s1.json", {"state": 1})
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, lambda: None)
        append_jsonl(scratch / "log.jsonl", {"id": "s1"})
        atomic_write_json(scratch / "items" / "s1.json", {"done": True})

    with journal_writes() as ops:
        anyio.run(item)
    atomic_write_json(scratch / "after.json", {})  # after the context: not recorded
    assert [(kind, path.relative_to(scratch).as_posix()) for kind, path, _ in ops] == [
        ("write", "states/s1.json"), ("append", "log.jsonl"), ("write", "items/s1.json")]
    replay_writes([(kind, path.relative_to(scratch), payload) for kind, path, payload in ops], real)
    assert (real / "items" / "s1.json").read_text() == (scratch / "items" / "s1.json").read_text()
    assert [r["id"] for _, r in iter_jsonl(real / "log.jsonl")] == ["earlier", "s1"]
    assert not (real / "after.json").exists()


def test_a_replayed_write_stays_inside_its_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="outside"):
        replay_writes([("write", Path("../escape.json"), "{}")], tmp_path / "out")
    assert not (tmp_path / "escape.json").exists()

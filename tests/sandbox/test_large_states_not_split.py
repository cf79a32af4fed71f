"""A checklist is split across idle workers only when its states are small: each batch process parses the
states again, so large states go to one batch (their memory and parse not doubled), with the same results."""

from __future__ import annotations

from typing import Any

import pytest

from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import ChecklistItem

pytestmark = pytest.mark.anyio

CHECKLIST = [ChecklistItem(id=f"c{n}", description=f"check {n}", validator=(
    f"def check_func(s):\n    return s['orders']['O1']['status'] == 'shipped' and len(s['pad']) > {n}\n"))
    for n in range(16)]


def _states(pad: int) -> tuple[dict[str, Any], dict[str, Any]]:
    initial = {"orders": {"O1": {"status": "pending"}}, "pad": "x" * pad}
    return initial, {**initial, "orders": {"O1": {"status": "shipped"}}}


@pytest.mark.parametrize(("pad", "split"), [(1000, True), (700_000, False)])
async def test_checks_split_across_workers_only_for_small_states(
        monkeypatch: pytest.MonkeyPatch, pad: int, split: bool) -> None:
    chunks: list[int] = []
    async with ValidatorSandbox(workers=2, timeout_s=30.0) as sandbox:
        original = sandbox._run_chunk

        async def counted(chunk: Any, *args: Any) -> None:
            chunks.append(len(chunk))
            await original(chunk, *args)

        monkeypatch.setattr(sandbox, "_run_chunk", counted)
        initial, final = _states(pad)
        results = await sandbox.run(CHECKLIST, initial, final)
    assert [r.passed for r in results] == [True] * 16, [r.reason for r in results]
    assert (chunks == [8, 8]) if split else (chunks == [])  # two batches of 8, or one batch of all 16

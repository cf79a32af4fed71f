"""Resumable stage storage and bounded concurrency."""

from __future__ import annotations

import anyio
import pytest

from envscaler_mcp.errors import ProviderError
from envscaler_mcp.synth._common_store import ItemDir, JsonlLedger, run_bounded, slugify


def test_slugify():
    assert slugify("Linux File System") == "linux_file_system"
    assert slugify("3D printer farm") == "env_3d_printer_farm"
    assert slugify("!!!") == "env"


def test_ledger_survives_a_torn_line_and_appends_cleanly(tmp_path):
    path = tmp_path / "l.jsonl"
    ledger = JsonlLedger(path, "id")
    ledger.add({"id": "a", "v": 1})
    path.write_text(path.read_text() + '{"id": "b", "v"')  # a crash mid-write
    again = JsonlLedger(path, "id")
    assert "a" in again and "b" not in again
    again.add({"id": "b", "v": 2})
    assert path.read_text().splitlines() == ['{"id":"a","v":1}', '{"id":"b","v":2}']


def test_item_dir(tmp_path):
    items = ItemDir(tmp_path / "items")
    assert items.all() == [] and not items.done("x")
    items.write("x", {"k": 1})
    assert items.done("x") and items.read("x") == {"k": 1} and items.all() == [{"k": 1}]


@pytest.mark.anyio
async def test_run_bounded_limits_concurrency_and_unwraps_the_first_error():
    running, peak = 0, 0

    async def work(i: int) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await anyio.sleep(0.01)
        running -= 1

    await run_bounded(range(10), work, concurrency=3)
    assert peak == 3

    async def fail(i: int) -> None:
        await anyio.sleep(0.001 * i)
        raise ProviderError(f"down {i}")

    with pytest.raises(ProviderError, match="down"):
        await run_bounded(range(3), fail, concurrency=3)

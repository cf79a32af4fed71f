"""A state of more than 1 MB is parsed in the batch process that uses it, not in the worker's zygote: the zygote
outlives every request, and what it parses stays resident in it (about 45 MB after 3 MB states, beside every
server of a run). The verdicts are the same: a check that changes its states still leaves the next check the
untouched ones."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import ChecklistItem

pytestmark = [pytest.mark.anyio,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]

CHECKLIST = [
    ChecklistItem(id="mutates", description="clears what it gets", validator=(
        "def check_func(s):\n    s['records'].clear()\n    initial_state['records'].clear()\n    return True\n")),
    ChecklistItem(id="reads", description="sees the untouched states", validator=(
        "def check_func(s):\n    return s['records']['R00007']['n'] == 8 and "
        "initial_state['records']['R00007']['n'] == 7 and len(s['records']) == 40000\n")),
]


def _states() -> tuple[dict[str, Any], dict[str, Any]]:
    """About 2 MB of JSON each, in 40,000 small records (parsed: tens of megabytes)."""
    initial = {"records": {f"R{i:05d}": {"id": f"R{i:05d}", "n": i, "tag": "t"} for i in range(40_000)}}
    final = {"records": {**initial["records"], "R00007": {"id": "R00007", "n": 8, "tag": "t"}}}
    return initial, final


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


async def test_a_large_state_is_not_parsed_in_the_zygote() -> None:
    initial, final = _states()
    async with ValidatorSandbox(workers=1, timeout_s=30.0) as sandbox:
        [zygote] = sandbox.worker_pids()
        before = _rss(zygote)
        first = await sandbox.run(CHECKLIST, initial, final)
        second = await sandbox.run(CHECKLIST, initial, final)  # the same initial state again (a later trial)
        grown = _rss(zygote) - before
    assert [r.passed for r in first + second] == [True] * 4, [r.reason for r in first + second]
    # parsed in the zygote, the two states and the initial state's image kept there grow it by about 30 MB;
    # what may stay is the allocator's share of the texts read
    assert grown < 12_000_000, grown

"""A state of more than 1 MB is parsed in the batch process that uses it, not in the worker's zygote: the zygote
outlives every request, and what it parses stays resident in it (about 45 MB after 3 MB states, beside every
server of a run). A smaller state is parsed there only when more than one batch process reads it: a run's
scenarios, each read once, leave the zygote as it was. The verdicts are the same: a check that changes its states still leaves the next check the
untouched ones. The caller writes a request's states to the worker without copying them."""

from __future__ import annotations

import sys
import tracemalloc
from typing import Any

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from envscaler_mcp.sandbox.process import Worker
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


async def test_states_read_once_are_not_parsed_in_the_zygote() -> None:
    """Twelve scenarios of about 400 KB of state each, one episode each (an eval run's trials): kept parsed in
    the zygote, its cache of recent initial states alone would hold about 40 MB."""
    reads = ChecklistItem(id="reads", description="sees the untouched states", validator=(
        "def check_func(s):\n    return s['records']['R00007']['n'] == 8 and "
        "initial_state['records']['R00007']['n'] == 7 and len(s['records']) == 8000\n"))
    async with ValidatorSandbox(workers=1, timeout_s=30.0) as sandbox:
        [zygote] = sandbox.worker_pids()
        before = _rss(zygote)
        results = []
        for k in range(12):
            initial = {"records": {f"R{i:05d}": {"id": f"R{i:05d}", "n": i, "tag": f"t{k}"} for i in range(8_000)}}
            final = {"records": {**initial["records"], "R00007": {"id": "R00007", "n": 8, "tag": "t"}}}
            results += await sandbox.run([CHECKLIST[0], reads], initial, final)
        grown = _rss(zygote) - before
    assert [r.passed for r in results] == [True] * 24, [r.reason for r in results if not r.passed]
    assert grown < 12_000_000, grown


# Reads a request (its header line, then the states' bytes) and answers its one check.
_WORKER = """
import json, sys
header = json.loads(sys.stdin.buffer.readline())
for size in header["sizes"]:
    sys.stdin.buffer.read(size)
sys.stdout.write(json.dumps({"i": 0, "passed": True, "reason": None, "duration_s": 0.0}) + "\\n")
sys.stdout.flush()
sys.stdin.buffer.read()
"""


async def test_a_request_s_states_are_written_without_a_copy_of_them() -> None:
    states = tuple(bytes([65 + n]) * (3 << 20) for n in range(3))
    process = await anyio.open_process([sys.executable, "-c", _WORKER])
    assert process.stdout is not None
    worker = Worker(process, BufferedByteReceiveStream(process.stdout))
    tracemalloc.start()
    try:
        with anyio.fail_after(60):
            answers = await worker.ask({"sizes": [len(s) for s in states]}, states, [0], 60.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        await worker.kill()
    assert answers == {0: (True, None, 0.0, [])}
    # joined, then what the pipe had not taken yet copied into the transport's buffer: twice the 9 MB
    assert peak < 2_000_000, peak

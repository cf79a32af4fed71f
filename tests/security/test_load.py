"""A loaded machine must not move blame: a check slowed down by other work is not charged as a timeout, and a
check that burns its whole time is still charged to the validator (not turned into an infrastructure fault).

The load is made real and local: this test's process (and so the sandbox worker it starts) and five busy
loops, each in its own session (the scheduler shares a CPU between sessions), are pinned to one CPU, so the
worker gets at most a sixth of it whatever the rest of the machine does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import ChecklistItem

pytestmark = pytest.mark.anyio

SLOW = "def check_func(s):\n    n = 0\n    for i in range({loops}):\n        n += i\n    return n > 0\n"


def slow_check(cpu_s: float = 0.25) -> str:
    """A check of about `cpu_s` of CPU on this machine (calibrated here): under the 0.5 s limit alone, over it
    in wall time at a sixth of a CPU. A fixed loop count would prove nothing on a CPU fast enough to finish it
    under the limit even when slowed six times."""
    start = time.process_time()
    n = 0
    for i in range(1_000_000):
        n += i
    per_loop = (time.process_time() - start) / 1_000_000
    return SLOW.format(loops=int(cpu_s / max(per_loop, 1e-9)))
FOREVER = "def check_func(s):\n    while True:\n        pass\n"


@pytest.fixture
def calibrated() -> str:
    return slow_check()  # before the load is made


@pytest.fixture
def one_busy_cpu() -> Iterator[None]:
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(saved)})
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True) for _ in range(5)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        os.sched_setaffinity(0, saved)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity (Linux)")
async def test_load_slows_checks_but_moves_no_blame(calibrated: str, one_busy_cpu: None) -> None:
    items = [ChecklistItem(id="slow", description="", validator=calibrated),
             ChecklistItem(id="forever", description="", validator=FOREVER)]
    async with ValidatorSandbox(timeout_s=0.5, memory_mb=256, grace_s=0.3) as sb:
        slow, forever = await sb.run(items, {}, {})
        assert sb.faults == [] and sb.restarts == 0
    assert slow.duration_s > 0.5, "the load did not slow the check down: this test proved nothing"
    assert (slow.passed, slow.reason) == (True, None)
    assert (forever.passed, (forever.reason or "")[:23]) == (False, "timed out after 0.5 s")

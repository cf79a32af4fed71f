"""A validator holding the real os and ctypes cannot change another process's limits or keep shared memory.

Attacks found on an earlier version: a validator lowered its zygote's CPU hard limit (every later check on
that worker then ended "the validator ended its process"), lowered the harness's, and held 600 MiB of
System V shared memory under a 256 MB address-space limit, left on the host after the sandbox closed.
Effects are read from outside: /proc/PID/limits of the zygote and of this process, later verdicts against
a clean run, /proc/sysvipc/shm. As a normal user: tests/security/test_unprivileged_user.py.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

import anyio
import pytest

from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import ChecklistItem
from tests.security.test_validator_os_layers import GROUPS, only

pytestmark = pytest.mark.anyio

# prlimit64(pid, RLIMIT_CPU = 0, {limit s, limit s}) on the zygote (the batch's parent) and on the harness.
LOWER_LIMITS = """
def check_func(s):
    libc = ctypes.CDLL(None, use_errno=True)
    done = []
    for pid in (os.getppid(), {harness}):
        low = (ctypes.c_uint64 * 2)({limit}, {limit})
        if libc.prlimit64(pid, 0, ctypes.byref(low), None) == 0:
            done.append("lowered %d" % pid)
        else:
            done.append("refused %d: errno %d" % (pid, ctypes.get_errno()))
    raise RuntimeError(" | ".join(done))
"""

# 600 MiB of System V shared memory, touched, never removed (IPC_PRIVATE, IPC_CREAT | 0600).
SHARED_MEMORY = """
def check_func(s):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    size = 600 * 1024 * 1024
    shmid = libc.shmget(0, size, 0o1600)
    if shmid < 0:
        raise RuntimeError("shmget refused: errno %d" % ctypes.get_errno())
    at = libc.shmat(shmid, None, 0)
    if at is None or at == ctypes.c_void_p(-1).value:
        raise RuntimeError("shmat refused: errno %d" % ctypes.get_errno())
    ctypes.memset(at, 1, size)
    return True
"""

QUEUES = """
def check_func(s):
    libc = ctypes.CDLL(None, use_errno=True)
    done = []
    for name, call in (("msgget", lambda: libc.msgget(0, 0o1600)), ("semget", lambda: libc.semget(0, 1, 0o1600)),
                       ("mq_open", lambda: libc.mq_open(b"/envscaler-attack", 0o102, 0o600, None))):
        done.append("%s %s" % (name, "refused" if call() < 0 else "made"))
    raise RuntimeError(" | ".join(done))
"""

HONEST = [ChecklistItem(id=f"h{i}", description="", validator=source) for i, source in enumerate((
    "def check_func(s):\n    return s['x'] == 2\n",
    "def check_func(s):\n    return sum(range(200000)) > 0 and s['x'] == 1\n",
    "import json\ndef check_func(s):\n    return len(json.dumps(s)) > 100\n",
))]


def cpu_limit(pid: int) -> tuple[str, str]:
    """(soft, hard) 'Max cpu time' of a process, read from /proc (as any outside observer would)."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max cpu time"):
            soft, hard = line.split()[3:5]
            return soft, hard
    raise AssertionError(f"no cpu limit line for {pid}")


def shared_memory_segments() -> list[str]:
    return Path("/proc/sysvipc/shm").read_text().splitlines()[1:]


async def verdicts(sb: ValidatorSandbox) -> list[tuple[bool, str | None]]:
    return [(r.passed, r.reason) for r in await sb.run(HONEST, {"x": 1}, {"x": 1})]


@pytest.mark.parametrize("kept", [GROUPS, ("seccomp",)], ids=["all", "seccomp"])
async def test_no_validator_changes_the_limits_of_its_zygote_or_of_the_harness(kept: tuple[str, ...]) -> None:
    own = resource.prlimit(0, resource.RLIMIT_CPU)
    async with ValidatorSandbox(timeout_s=3.0, memory_mb=256, workers=1, _test_seam={"grant_os": True}) as sb:
        clean = await verdicts(sb)
    seam = {"grant_os": True, "skip": only(*kept)}
    async with ValidatorSandbox(timeout_s=3.0, memory_mb=256, workers=1, _test_seam=seam) as sb:
        [zygote] = sb.worker_pids()
        before = cpu_limit(zygote)
        attack = ChecklistItem(id="attack", description="", validator=LOWER_LIMITS.format(harness=os.getpid(), limit=1))
        [result] = await sb.run([attack], {}, {})
        assert cpu_limit(zygote) == before
        assert await verdicts(sb) == clean
        assert sb.faults == [] and sb.worker_pids() == [zygote]
    assert resource.prlimit(0, resource.RLIMIT_CPU) == own
    assert result.reason is not None and "lowered" not in result.reason, result.reason
    assert clean == [(False, None), (True, None), (False, None)]  # the checks tell the states apart


async def test_without_seccomp_the_attack_would_reach_the_zygote() -> None:
    """The control: with every layer but seccomp (as root the zygote and batch share the uid `nobody`), the
    same attack lowers the zygote's limit, so the test above would catch a filter that lets it through. The
    limit set here is an hour, not a second: a zygote that has already used a second of CPU on a loaded machine
    would be killed by SIGXCPU before its limits could be read.

    The zygote ends itself once it finds its limits changed, as its batch ends, and is then reaped: read after
    the run, /proc/PID/limits may already be gone. So the check spins after its attack (until its second of
    CPU is up) and the limit is read while the batch, and so the zygote, is certainly alive."""
    seam = {"grant_os": True, "skip": ["seccomp"]}
    source = LOWER_LIMITS.format(harness=0, limit=3600)
    spinning = source.replace('    raise RuntimeError(" | ".join(done))\n', "    while True:\n        pass\n")
    assert spinning != source
    attack = ChecklistItem(id="attack", description="", validator=spinning)
    lowered: tuple[str, str] | None = None
    async with ValidatorSandbox(timeout_s=1.0, memory_mb=256, workers=1, _test_seam=seam) as sb:
        [zygote] = sb.worker_pids()
        before = cpu_limit(zygote)
        results: list[object] = []

        async def attack_run() -> None:
            results.extend(await sb.run([attack], {}, {}))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(attack_run)
            while not results and (lowered := cpu_limit(zygote)) != ("3600", "3600"):
                await anyio.sleep(0.005)
    assert before != ("3600", "3600") and lowered == ("3600", "3600"), (results, before, lowered)


@pytest.mark.parametrize("kept", [GROUPS, ("seccomp",)], ids=["all", "seccomp"])
async def test_no_shared_memory_or_queue_outlives_the_sandbox(kept: tuple[str, ...]) -> None:
    before = shared_memory_segments()
    seam = {"grant_os": True, "skip": only(*kept)}
    items = [ChecklistItem(id="shm", description="", validator=SHARED_MEMORY),
             ChecklistItem(id="queues", description="", validator=QUEUES)]
    async with ValidatorSandbox(timeout_s=3.0, memory_mb=256, workers=1, _test_seam=seam) as sb:
        shm, queues = await sb.run(items, {}, {})
        during = shared_memory_segments()
    assert shared_memory_segments() == before and during == before
    assert not shm.passed and shm.reason is not None and "shmget refused" in shm.reason, shm.reason
    assert queues.reason is not None and "made" not in queues.reason, queues.reason
    assert not Path("/dev/mqueue/envscaler-attack").exists()

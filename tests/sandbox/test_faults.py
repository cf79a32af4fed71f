"""Fault injection: a validator worker stopped or killed from outside is infrastructure, never a score.

The rule (sandbox/relay.py): a validator's own failures (raising, burning the CPU past its time, running
out of memory, returning a non-bool, crashing the interpreter) are check results; a worker or batch
process that stops, stalls or is killed from outside is retried once on a fresh worker, then SandboxFault.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Awaitable, Callable

import anyio
import pytest

from envscaler_mcp.errors import SandboxFault
from envscaler_mcp.sandbox.validators import ValidatorSandbox
from envscaler_mcp.scenario.models import ChecklistItem

pytestmark = pytest.mark.anyio

STATE = {"ok": True}
# Busy for about 0.6 s of wall-clock time whatever the machine's load, then passes.
BUSY = ("import datetime\ndef check_func(s):\n"
        "    end = datetime.datetime.now() + datetime.timedelta(seconds=0.6)\n"
        "    while datetime.datetime.now() < end:\n        pass\n    return s['ok'] is True\n")
FAILS = "def check_func(s):\n    return s['ok'] is False\n"


def items() -> list[ChecklistItem]:
    return [ChecklistItem(id="busy", description="", validator=BUSY),
            ChecklistItem(id="fails", description="", validator=FAILS)]


def children(pid: int) -> list[int]:
    """Processes whose parent is `pid` (read from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


async def batch_process(sb: ValidatorSandbox, not_in: set[int]) -> tuple[int, int]:
    """(zygote, batch process) of the first worker whose zygote is not in `not_in` once it runs a batch."""
    with anyio.fail_after(20):
        while True:
            for zygote in sb.worker_pids():
                if zygote not in not_in and (kids := children(zygote)):
                    return zygote, kids[0]
            await anyio.sleep(0.01)


async def run_with(sb: ValidatorSandbox, inject: Callable[[], Awaitable[None]]) -> list[tuple[bool, str | None]]:
    """Score items() while `inject` interferes; SandboxFault propagates as itself."""
    fault: list[SandboxFault] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(inject)
        try:
            results = await sb.run(items(), STATE, STATE)
        except SandboxFault as exc:
            fault.append(exc)
        tg.cancel_scope.cancel()
    if fault:
        raise fault[0]
    return [(r.passed, r.reason) for r in results]


@pytest.mark.parametrize("isolation", [True, False], ids=["isolated", "python-only"])
async def test_a_batch_process_killed_once_is_retried_and_scored_right(isolation: bool) -> None:
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=256, isolation=isolation) as sb:

        async def kill_once() -> None:
            _, batch = await batch_process(sb, set())
            os.kill(batch, signal.SIGKILL)

        assert await run_with(sb, kill_once) == [(True, None), (False, None)]
        assert sb.restarts == 1
        assert len(sb.faults) == 1 and "killed by SIGKILL from outside the sandbox" in sb.faults[0]


def signal_batch_twice(sb: ValidatorSandbox, sig: int) -> Callable[[], Awaitable[None]]:
    """Send `sig` to the first batch process, then to the one the retry starts on a fresh worker."""

    async def inject() -> None:
        first, batch = await batch_process(sb, set())
        os.kill(batch, sig)
        _, batch = await batch_process(sb, {first})
        os.kill(batch, sig)

    return inject


async def test_a_batch_process_killed_twice_in_a_row_is_a_sandbox_fault() -> None:
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=256) as sb:
        with pytest.raises(SandboxFault, match=r"twice in a row.*SIGKILL.*fresh worker.*SIGKILL"):
            await run_with(sb, signal_batch_twice(sb, signal.SIGKILL))
        assert sb.restarts == 2
        # Nothing was scored from the faulty runs, and the sandbox is usable again.
        results = await sb.run(items()[1:], STATE, STATE)
        assert [(r.passed, r.reason) for r in results] == [(False, None)]


async def test_a_batch_process_stopped_twice_is_a_sandbox_fault() -> None:
    async with ValidatorSandbox(timeout_s=1.0, memory_mb=256, grace_s=0.3) as sb:
        with pytest.raises(SandboxFault, match=r"stopped by SIGSTOP.*fresh worker.*stopped by SIGSTOP"):
            await run_with(sb, signal_batch_twice(sb, signal.SIGSTOP))
        assert not children(sb.worker_pids()[0])  # the stopped processes are gone


async def test_a_stopped_then_killed_zygote_is_a_sandbox_fault() -> None:
    async with ValidatorSandbox(timeout_s=1.0, memory_mb=256, grace_s=0.3) as sb:
        stopped: list[int] = []

        async def stop_then_kill() -> None:
            first, _ = await batch_process(sb, set())
            os.kill(first, signal.SIGSTOP)
            stopped.append(first)
            second, _ = await batch_process(sb, {first})
            os.kill(second, signal.SIGKILL)

        with pytest.raises(SandboxFault, match=r"was stopped.*fresh worker.*died"):
            await run_with(sb, stop_then_kill)
    assert not alive(stopped[0])  # the stopped zygote was killed, not left behind


async def test_a_validators_own_failures_are_results_not_faults() -> None:
    sources = {
        "raises": "def check_func(s):\n    raise ValueError('no')\n",
        "python_loop": "def check_func(s):\n    while True:\n        pass\n",
        "c_loop": "def check_func(s):\n    return sum(range(10**14)) > 0\n",
        "memory": "def check_func(s):\n    return len('a' * (10**10)) > 0\n",
        "non_bool": "def check_func(s):\n    return 'yes'\n",
        "recursion": "def check_func(s):\n    return check_func(s)\n",
        "after": "def check_func(s):\n    return s['ok']\n",
    }
    checks = [ChecklistItem(id=k, description="", validator=v) for k, v in sources.items()]
    async with ValidatorSandbox(timeout_s=0.5, memory_mb=256, grace_s=0.3) as sb:
        results = {r.item_id: r for r in await sb.run(checks, STATE, STATE)}
        assert sb.faults == [] and sb.restarts == 0
    assert results["raises"].reason == "raised ValueError: no"
    assert results["python_loop"].reason == "timed out after 0.5 s"
    assert (results["c_loop"].reason or "").startswith("timed out after 0.5 s")
    assert results["memory"].reason == "memory limit exceeded"
    assert results["non_bool"].reason == "returned 'yes' (str), not a bool"
    assert (results["recursion"].reason or "").startswith("raised RecursionError")
    assert results["after"].passed and results["after"].reason is None


@pytest.mark.parametrize("line", [b"garbage\n", b"[1, 2]\n", b'{"i": 0, "passed": true, "reason": 5}\n'])
async def test_a_worker_that_writes_a_garbled_line_is_a_fault_not_a_crash_of_the_caller(line: bytes) -> None:
    """A stand-in for a broken worker: it says hello, reads a request, answers with `line`. The caller gets a
    WorkerFault (retried on a fresh worker by the sandbox), never a ValueError out of the protocol reader."""
    import sys

    from anyio.streams.buffered import BufferedByteReceiveStream

    from envscaler_mcp.sandbox.process import Worker, WorkerFault

    script = ("import sys\nsys.stdout.write('{\"ready\": true, \"pid\": 1, \"isolation\": {}}\\n'); sys.stdout.flush()\n"
              f"sys.stdin.readline()\nsys.stdout.buffer.write({line!r}); sys.stdout.flush()\nsys.stdin.read()\n")
    process = await anyio.open_process([sys.executable, "-c", script], start_new_session=True)
    assert process.stdout is not None
    worker = Worker(process, BufferedByteReceiveStream(process.stdout))
    try:
        assert b"ready" in await worker.reader.receive_until(b"\n", 1 << 16)
        with pytest.raises(WorkerFault, match="garbled"):
            await worker.ask({"sizes": [2, 2], "checks": [{"i": 0}]}, (b"{}", b"{}"), [0], 20.0)
    finally:
        await worker.kill()



BLOCKED = "def check_func(s):\n    os.read(os.pipe()[0], 1)\n    return True\n"  # waits forever, using no CPU


@pytest.mark.parametrize("skip", [["seccomp"], ["seccomp", "namespaces"]], ids=["pid-namespace", "no-namespaces"])
async def test_a_batch_process_does_not_outlive_its_zygote(skip: list[str]) -> None:
    """The zygote killed under a batch that waits forever takes the batch process with it: as PID 1 of its
    namespace (the kernel ends every process in it), or, without the namespace, by the parent-death signal the
    batch process asks for (nothing else would end it: it has a process group of its own). Without the seccomp
    filter, which refuses the batch process a pipe."""
    gone: list[int] = []
    seam = {"grant_os": True, "skip": skip}
    async with ValidatorSandbox(timeout_s=5.0, memory_mb=256, _test_seam=seam) as sb:

        async def blocked() -> None:
            # The run's own end is not the subject: after the kill it retries on a fresh worker whose batch
            # stalls too (SandboxFault), which on a loaded machine can come before the poll below is done.
            with contextlib.suppress(SandboxFault):
                await sb.run([ChecklistItem(id="blocked", description="", validator=BLOCKED)], STATE, STATE)

        async with anyio.create_task_group() as tg:
            tg.start_soon(blocked)
            zygote, batch = await batch_process(sb, set())
            os.kill(zygote, signal.SIGKILL)
            with anyio.fail_after(20):
                while alive(batch):
                    await anyio.sleep(0.01)
            gone.append(batch)
            tg.cancel_scope.cancel()
    assert gone

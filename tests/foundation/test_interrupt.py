"""SIGTERM ends a command's event loop as Ctrl-C does, also when the process started with SIGINT ignored (a
script's background job): the root task is cancelled, the command ends with KeyboardInterrupt, and the process
exits instead of waiting for worker threads at interpreter exit."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# Busy with worker threads, as eval is (results appended off the event loop): a KeyboardInterrupt raised at a
# random point inside such a loop left an AnyIO worker thread waiting at exit about once in twenty.
PROGRAM = """
import sys, anyio
from envscaler_mcp import _interrupt
_interrupt.install()
async def spin():
    while True:
        await anyio.to_thread.run_sync(sum, range(200))
async def main():
    async with anyio.create_task_group() as group:
        for _ in range(4):
            group.start_soon(spin)
        print("ready", flush=True)
try:
    _interrupt.run(main)
except* KeyboardInterrupt:  # the CLI also finds a KeyboardInterrupt inside a task group's error
    print("interrupted", flush=True)
    sys.exit(130)
"""


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_sigterm_cancels_the_loop_and_the_process_exits(tmp_path: Path, sigint: str) -> None:
    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-c", PROGRAM]
    if sigint == "ignored":
        command = ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *command]
    for attempt in range(16):
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        assert proc.stdout is not None
        assert proc.stdout.readline() == "ready\n"
        time.sleep(0.05 + 0.04 * (attempt % 8))
        proc.send_signal(signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail(f"attempt {attempt}: still running 30 s after SIGTERM")
        assert (proc.returncode, out) == (130, "interrupted\n"), err


def test_sigterm_outside_a_loop_interrupts_at_once() -> None:
    program = ("import os, signal, sys, time\nfrom envscaler_mcp import _interrupt\n_interrupt.install()\n"
               "try:\n    os.kill(os.getpid(), signal.SIGTERM); time.sleep(30)\n"
               "except KeyboardInterrupt:\n    sys.exit(130)\n")
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", program], cwd=Path(__file__).resolve().parents[2], timeout=60)
    assert proc.returncode == 130 and time.monotonic() - started < 25


# The first interrupt's cleanup cannot finish, and it has left a thread that does not end (as one blocked reading
# a child's pipe); the program has a child process of its own.
STUCK = """
import subprocess, sys, threading, time, anyio
from envscaler_mcp import _interrupt
_interrupt.install()
child = subprocess.Popen(["sleep", "600"])
async def main():
    print(child.pid, flush=True)
    try:
        await anyio.sleep(600)
    finally:
        threading.Thread(target=time.sleep, args=(600,)).start()
        with anyio.CancelScope(shield=True):
            await anyio.sleep(600)
try:
    _interrupt.run(main)
except KeyboardInterrupt:
    sys.exit(130)
"""


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_second_interrupt_stops_at_once_with_its_children(signum: int) -> None:
    """`kill PID; kill PID` (or Ctrl-C twice) while the first one's cleanup is stuck: the process exits 130 at
    once and its child process is gone, instead of raising KeyboardInterrupt inside the loop and waiting for the
    stuck thread at exit."""
    proc = subprocess.Popen([sys.executable, "-c", STUCK], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=Path(__file__).resolve().parents[2],
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    try:
        proc.send_signal(signum)
        time.sleep(0.5)
        assert proc.poll() is None, "the first interrupt ended the program: its cleanup was not stuck"
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("still running 30 s after the second interrupt")
    finally:
        proc.kill()
    assert proc.returncode == 130 and "interrupted again" in err, err
    deadline = time.monotonic() + 10
    while _running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(child)

"""One validator worker process as the sandbox sees it: start, ask (with a watchdog), kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteSendStream, Process
from anyio.streams.buffered import BufferedByteReceiveStream

from envscaler_mcp.errors import ValidatorError

_PKG_PARENT = str(Path(__file__).resolve().parents[2])
_MAX_LINE = 1 << 20
_START_TIMEOUT_S = 30.0
_SLICE = 256 << 10


Answer = tuple[bool, str | None, float, list[str]]  # passed, reason, seconds, evidence


class WorkerFault(Exception):
    """The worker could not complete a request: through no fault of the validators (stopped, stalled, killed,
    an answer it should never write), or, when `culprit` names a trial of the request, because that trial's
    validators changed the worker itself (its checks are charged; the worker is replaced)."""

    def __init__(self, reason: str, culprit: int | None = None) -> None:
        super().__init__(reason)
        self.culprit = culprit


def _state(pid: int) -> str:
    """A process's scheduler state as ps shows it ('R', 'S', 'T' ...), or '' when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def _text_or_none(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError("a reason that is not a string")


async def _send(stream: ByteSendStream, parts: tuple[bytes, ...]) -> None:
    """Write `parts` one after the other, a large one in slices of _SLICE bytes: neither a joined copy of a
    request nor the pipe transport's buffer (what the worker has not read yet) then holds its states (3 MB states:
    two copies of 8.6 MB, the caller's largest allocations at eval's peak; benchmarks/README.md)."""
    if sum(map(len, parts)) <= _SLICE:
        await stream.send(b"".join(parts))
        return
    for part in parts:
        for start in range(0, len(part), _SLICE):
            await stream.send(part[start:start + _SLICE])


class Worker:
    """One worker process (its zygote does the work) and the line reader on its stdout."""

    def __init__(self, process: Process, reader: BufferedByteReceiveStream) -> None:
        self.process = process
        self.reader = reader
        self.zygote_pid = process.pid
        self.isolation: dict[str, list[object]] = {}

    @classmethod
    async def start(cls, memory_mb: int, root: str, isolation: bool, test_seam: dict[str, Any] | None = None) -> Worker:
        """Start a worker and wait for its hello line (which reports the isolation layers it applied)."""
        env = {"PYTHONPATH": _PKG_PARENT, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0",
               "LANG": "C.UTF-8", "PATH": os.defpath}
        cmd = [sys.executable, "-s", "-m", "envscaler_mcp.sandbox.worker", "--memory-mb", str(memory_mb),
               "--root", root, *([] if isolation else ["--no-isolation"]),
               *(["--test-seam", json.dumps(test_seam)] if test_seam else [])]
        try:
            process = await anyio.open_process(cmd, cwd=root, env=env, stderr=subprocess.DEVNULL,
                                               start_new_session=True)
        except OSError as exc:
            raise ValidatorError(f"cannot start a validator worker ({exc}); check that {sys.executable} runs") from exc
        assert process.stdout is not None
        worker = cls(process, BufferedByteReceiveStream(process.stdout))
        with anyio.move_on_after(_START_TIMEOUT_S):
            try:
                hello = json.loads(await worker.reader.receive_until(b"\n", _MAX_LINE))
            except (anyio.EndOfStream, anyio.IncompleteRead, ValueError):
                hello = {}
            if hello.get("ready"):
                worker.zygote_pid = int(hello["pid"])
                worker.isolation = dict(hello["isolation"])
                return worker
        await worker.kill()
        raise ValidatorError(
            f"a validator worker did not start (exit code {process.returncode}). Try running "
            f"`{sys.executable} -m envscaler_mcp.sandbox.worker` to see why; a memory limit of {memory_mb} MB "
            "may be too small for the interpreter."
        )

    async def ask(self, header: dict[str, Any], states: tuple[bytes, ...], indices: list[int],
                  line_timeout: float) -> dict[int, Answer]:
        """Send one request (header line, then both states' JSON, and the transcript's when the header has a
        third size); return {index: (passed, reason, duration, evidence)} for every check, in order.

        Raises WorkerFault when the worker reports a fault, dies, or says nothing for `line_timeout` s."""
        assert self.process.stdin is not None
        try:
            await _send(self.process.stdin, (json.dumps(header, ensure_ascii=False).encode("utf-8") + b"\n", *states))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise WorkerFault(f"the worker could not be reached ({type(exc).__name__})") from exc
        answers: dict[int, Answer] = {}
        for index in indices:
            answer = await self._next_answer(line_timeout)
            if "fault" in answer:
                culprit = answer.get("culprit")
                raise WorkerFault(str(answer["fault"])[:500], culprit if isinstance(culprit, int) else None)
            if answer.get("i") != index:
                raise WorkerFault(f"the worker answered check {answer.get('i')} when {index} was due")
            try:
                answers[index] = (answer["passed"] is True, _text_or_none(answer.get("reason")),
                                  float(answer.get("duration_s", 0.0)), [str(e) for e in answer.get("evidence") or []])
            except (TypeError, ValueError) as exc:
                raise WorkerFault(f"the worker wrote a garbled answer ({type(exc).__name__})") from exc
        return answers

    async def _next_answer(self, line_timeout: float) -> dict[str, Any]:
        """The next answer line, skipping the zygote's signs of life (sent while a check is slowed down by the
        machine's load); WorkerFault when nothing at all comes for `line_timeout` s or the worker died."""
        while True:
            line: bytes | None = None
            with anyio.move_on_after(line_timeout):
                try:
                    line = await self.reader.receive_until(b"\n", _MAX_LINE)
                except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError):
                    line = b""
            if line is None:
                stopped = _state(self.zygote_pid) in ("T", "t")
                raise WorkerFault(f"the worker {'was stopped' if stopped else 'stopped answering'} "
                                  f"(no answer for {line_timeout:.1f} s)")
            if not line:
                raise WorkerFault(f"the worker process died ({await self._exit_text()})")
            try:
                answer = json.loads(line)
            except ValueError:
                answer = None
            if not isinstance(answer, dict):
                raise WorkerFault(f"the worker wrote a garbled line ({line[:60]!r})")
            if not answer.get("alive"):
                return answer

    async def _exit_text(self) -> str:
        with anyio.move_on_after(1):
            await self.process.wait()
        code = self.process.returncode
        signum = -code if code is not None and code < 0 else code - 128 if code is not None and code > 128 else 0
        if signum:  # the worker itself (negative) or its zygote (128 + n) was killed by a signal
            try:
                return f"killed by {signal.Signals(signum).name}"
            except ValueError:
                return f"killed by signal {signum}"
        return f"exit code {code}"

    async def kill(self) -> None:
        """Kill the worker and everything in its session (the zygote and its batch processes die with it)."""
        if self.process.returncode is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        with anyio.move_on_after(5, shield=True):
            await self.process.wait()
        await self.process.aclose()

    async def close(self) -> None:
        """Ask the worker to exit (stdin closed); kill it if it does not within a second."""
        with anyio.move_on_after(1, shield=True):
            if self.process.stdin is not None:
                await self.process.stdin.aclose()
            await self.process.wait()
        await self.kill()

"""The validator sandbox: untrusted check functions run in persistent worker processes, never in this one.

    async with ValidatorSandbox(timeout_s=2.0, memory_mb=512, workers=2) as sandbox:
        results = await sandbox.run(scenario.checklist, scenario.initial_state, final_state)

Each worker (`python -m envscaler_mcp.scoring.worker`) runs under an address-space limit, cannot open files
or sockets, has an empty environment and a scratch working folder, and stops each check with an alarm
after `timeout_s`. A parent-side watchdog kills and restarts a worker that stops answering (a loop in C
code ignores the alarm). Whatever a validator does, the outcome is a `CheckResult` with a reason.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from envscaler_mcp._json import State
from envscaler_mcp.errors import ValidatorError
from envscaler_mcp.scoring.models import CheckResult

_PKG_PARENT = str(Path(__file__).resolve().parents[2])
_MAX_LINE = 1 << 20
_START_TIMEOUT_S = 30.0
_MIN_CHUNK = 4  # fewer checks than this per worker are not worth sending the states twice


class CheckItem(Protocol):
    """What the sandbox needs from a checklist item (scenario.models.ChecklistItem fits)."""

    @property
    def id(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def validator(self) -> str | None: ...


class _Worker:
    """One worker process and the line reader on its stdout."""

    def __init__(self, process: Process, reader: BufferedByteReceiveStream) -> None:
        self.process = process
        self.reader = reader

    @classmethod
    async def start(cls, memory_mb: int, cwd: str) -> _Worker:
        env = {"PYTHONPATH": _PKG_PARENT, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0",
               "LANG": "C.UTF-8", "PATH": os.defpath}
        cmd = [sys.executable, "-s", "-m", "envscaler_mcp.scoring.worker", "--memory-mb", str(memory_mb)]
        try:
            process = await anyio.open_process(cmd, cwd=cwd, env=env, stderr=subprocess.DEVNULL,
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
                return worker
        await worker.kill()
        raise ValidatorError(
            f"a validator worker did not start (exit code {process.returncode}). Try running "
            f"`{sys.executable} -m envscaler_mcp.scoring.worker` to see why; a memory limit of {memory_mb} MB "
            "may be too small for the interpreter."
        )

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")

    async def kill(self) -> None:
        if self.process.returncode is None:
            try:
                self.process.kill()
            except ProcessLookupError:
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


class ValidatorSandbox:
    """A pool of validator worker processes. Use as an async context manager; `run` is safe to call
    concurrently from many tasks (each call borrows idle workers)."""

    def __init__(self, timeout_s: float = 2.0, memory_mb: int = 512, workers: int = 1, grace_s: float = 1.0) -> None:
        if timeout_s <= 0 or memory_mb < 64 or workers < 1:
            raise ValidatorError("ValidatorSandbox needs timeout_s > 0, memory_mb >= 64 and workers >= 1")
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.n_workers = workers
        self.grace_s = grace_s
        self.restarts = 0
        self._workers: list[_Worker] = []
        self._idle_send: Any = None
        self._idle_recv: Any = None
        self._cwd = ""

    async def __aenter__(self) -> ValidatorSandbox:
        self._cwd = tempfile.mkdtemp(prefix="envscaler-validators-")
        os.chmod(self._cwd, 0o500)  # read-only scratch folder as the workers' working directory
        self._idle_send, self._idle_recv = anyio.create_memory_object_stream[_Worker](self.n_workers)
        try:
            for _ in range(self.n_workers):
                worker = await _Worker.start(self.memory_mb, self._cwd)
                self._workers.append(worker)
                self._idle_send.send_nowait(worker)
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        with anyio.CancelScope(shield=True):
            for worker in self._workers:
                await worker.close()
        self._workers.clear()
        for stream in (self._idle_send, self._idle_recv):
            if stream is not None:
                stream.close()
        if self._cwd:
            os.chmod(self._cwd, 0o700)
            shutil.rmtree(self._cwd, ignore_errors=True)

    async def run(self, items: Sequence[CheckItem], initial_state: State, final_state: State) -> list[CheckResult]:
        """Run every item's validator on `final_state` (global `initial_state`); one result per item, in order."""
        if self._idle_recv is None:
            raise ValidatorError("ValidatorSandbox.run called outside `async with ValidatorSandbox(...)`")
        try:
            initial_text = json.dumps(initial_state, ensure_ascii=False)
            final_text = json.dumps(final_state, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise ValidatorError(f"states handed to validators must be JSON values: {exc}") from exc
        results: list[CheckResult | None] = [None] * len(items)
        runnable: list[tuple[int, str]] = []
        for i, item in enumerate(items):
            if item.validator is None or not item.validator.strip():
                results[i] = CheckResult(item_id=item.id, description=item.description, passed=False,
                                         reason="the checklist item has no validator")
            else:
                runnable.append((i, item.validator))
        n_chunks = max(1, min(self.n_workers, math.ceil(len(runnable) / _MIN_CHUNK)))
        size = math.ceil(len(runnable) / n_chunks) if runnable else 0
        chunks = [runnable[k:k + size] for k in range(0, len(runnable), size)] if runnable else []
        answers: dict[int, tuple[bool, str | None, float]] = {}
        async with anyio.create_task_group() as tg:
            for chunk in chunks:
                tg.start_soon(self._run_chunk, chunk, initial_text, final_text, answers)
        for i, item in enumerate(items):
            if results[i] is None:
                passed, reason, duration = answers[i]
                results[i] = CheckResult(item_id=item.id, description=item.description, passed=passed,
                                         reason=reason, duration_s=duration)
        return [r for r in results if r is not None]

    async def _run_chunk(self, chunk: list[tuple[int, str]], initial_text: str, final_text: str,
                         answers: dict[int, tuple[bool, str | None, float]]) -> None:
        worker: _Worker = await self._idle_recv.receive()
        try:
            worker = await self._run_on(worker, chunk, initial_text, final_text, answers)
        except BaseException:
            # Cancelled (or failed) mid-request: answers nobody will read may still come, so this worker's
            # stream is out of step. Kill it; the next run that borrows it starts a fresh one.
            with anyio.CancelScope(shield=True):
                await worker.kill()
            raise
        finally:
            self._idle_send.send_nowait(worker)

    async def _run_on(self, worker: _Worker, chunk: list[tuple[int, str]], initial_text: str, final_text: str,
                      answers: dict[int, tuple[bool, str | None, float]]) -> _Worker:
        # Allow for parsing both states before each check (pessimistic 20 MB/s), beyond the check's own time.
        deadline = self.timeout_s + self.grace_s + (len(initial_text) + len(final_text)) / 20e6
        pending = list(chunk)
        while pending:
            if worker.process.returncode is not None:
                worker = await self._replace(worker)
            request = {"initial": initial_text, "final": final_text, "timeout_s": self.timeout_s,
                       "checks": [{"i": i, "source": src} for i, src in pending]}
            try:
                await worker.send(request)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                worker = await self._replace(worker)
                await worker.send(request)
            while pending:
                line: bytes | None = None
                with anyio.move_on_after(deadline):
                    try:
                        line = await worker.reader.receive_until(b"\n", _MAX_LINE)
                    except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError):
                        line = b""
                index = pending[0][0]
                if not line:
                    reason = (f"timed out after {float(self.timeout_s)} s (the worker stopped responding and was "
                              "restarted)") if line is None else await self._death_reason(worker)
                    answers[index] = (False, reason, deadline if line is None else 0.0)
                    pending.pop(0)
                    worker = await self._replace(worker)
                    break
                answer = json.loads(line)
                if answer.get("i") != index:
                    raise ValidatorError(f"validator worker answered check {answer.get('i')} when {index} was due")
                answers[index] = (bool(answer["passed"]), answer.get("reason"), float(answer.get("duration_s", 0.0)))
                pending.pop(0)
        return worker

    async def _death_reason(self, worker: _Worker) -> str:
        with anyio.move_on_after(1):
            await worker.process.wait()
        code = worker.process.returncode
        return f"the worker process died while running the check (exit code {code}); it was restarted"

    async def _replace(self, worker: _Worker) -> _Worker:
        await worker.kill()
        fresh = await _Worker.start(self.memory_mb, self._cwd)
        self._workers[self._workers.index(worker)] = fresh
        self.restarts += 1
        return fresh

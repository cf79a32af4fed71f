"""The validator sandbox: untrusted check functions run in isolated worker processes, never in this one.

    async with ValidatorSandbox(timeout_s=2.0, memory_mb=512, workers=2) as sandbox:
        results = await sandbox.run(scenario.checklist, scenario.initial_state, final_state, transcript)
        sandbox.isolation            # IsolationReport: which OS layers are in force on this machine

State items' validators get the final state, transcript items' validators (`kind="transcript"`) the
transcript (plain data, see transcript/record.py); both run in the same batch processes under the same
layers and limits.

Each worker (sandbox/worker.py) forks a fresh batch process for every scenario's checks, inside new
namespaces, an empty root, as an unprivileged user, under Landlock and seccomp (isolation/confine_validators.py; a layer
the kernel refuses is logged as a warning and shown in `isolation`). Trials of one scenario that wait for a
worker at the same time go in one request (the same checklist and the same initial state, sent and parsed
once), each trial checked in batch processes of its own on its own final state; no two trials, and no two
scenarios, share one. The checklist on the untouched initial state with an empty transcript (the guards: no
episode's data) is no trial: when it joins a request, it runs first in a trial's batch process, before
anything of that trial is read, which saves a fork per episode. Whatever a validator does, the outcome
is a `CheckResult` with a reason. A worker that stops, stalls or is killed from outside is not the
validators' doing: the batch is retried once on a fresh worker, and a second failure raises `SandboxFault`.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from functools import partial
from types import TracebackType
from typing import Any, Protocol

import anyio

from envscaler_mcp._json import JSONObject, State, encode_json, initial_states
from envscaler_mcp.errors import SandboxFault, ValidatorError
from envscaler_mcp.isolation.report import IsolationReport, from_layers
from envscaler_mcp.sandbox.process import Answer, Worker, WorkerFault
from envscaler_mcp.sandbox.results import CheckResult
from envscaler_mcp.transcript.record import EMPTY_TRANSCRIPT

_MAX_TRIALS = 16  # trials of one scenario sent in one request (the worker takes up to 64)
_MAX_TOGETHER = 64  # probe states of one scenario in one request (run_probes; the worker's most)
_TRIAL_SHARE = 40  # a request's final states and transcripts: at most 1/40 of the memory limit (12.8 MB of 512)
_MIN_CHUNK = 8  # fewer checks than this per worker are not worth a second batch process and state parse
# States of more than this between them go to one batch whatever the checks: each batch process parses them
# again, so a split doubles their memory (about 3x the text each) and their parse for little gain.
_SPLIT_MAX_BYTES = 1 << 20
_PARSE_RATE = 20e6  # bytes of state JSON per second (pessimistic), as the worker allows for parsing


class CheckItem(Protocol):
    """What the sandbox needs from a checklist item (scenario.models.ChecklistItem fits)."""

    @property
    def id(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def validator(self) -> str | None: ...
    # Optional: `kind` ("state" by default, or "transcript"), read with getattr.


ProbeRun = tuple[Sequence[CheckItem], State | None, JSONObject | None]
"""One probe of `ValidatorSandbox.run_probes`: the items to run, the final state, the transcript."""


Answers = dict[int, Answer]


def _sorted(items: Sequence[CheckItem], transcript: JSONObject | None
            ) -> tuple[list[CheckResult | None], list[tuple[int, str, str]]]:
    """The results known without running anything (no validator; a transcript item without a transcript), and
    the items to run: (index, validator, kind)."""
    results: list[CheckResult | None] = [None] * len(items)
    runnable: list[tuple[int, str, str]] = []
    for i, item in enumerate(items):
        kind = getattr(item, "kind", "state")
        if item.validator is None or not item.validator.strip():
            results[i] = CheckResult(item_id=item.id, description=item.description, passed=False,
                                     reason="the checklist item has no validator")
        elif kind == "transcript" and transcript is None:
            results[i] = CheckResult(item_id=item.id, description=item.description, passed=False,
                                     reason="a transcript check needs a transcript, and none was given")
        else:
            runnable.append((i, item.validator, kind))
    return results, runnable


def _answered(items: Sequence[CheckItem], results: list[CheckResult | None], answers: Answers) -> list[CheckResult]:
    """One result per item: those known beforehand, else the worker's answer."""
    for i, item in enumerate(items):
        if results[i] is None:
            passed, reason, duration, evidence = answers[i]
            results[i] = CheckResult(item_id=item.id, description=item.description, passed=passed,
                                     reason=reason, duration_s=duration, evidence=evidence)
    return [r for r in results if r is not None]


class _Trials:
    """Episodes of one scenario waiting together for a worker: their final states (and transcripts), in order
    of arrival, and then each one's answers."""

    def __init__(self, first: tuple[bytes, ...], size: int, at_start: bool) -> None:
        self.finals: list[tuple[bytes, ...]] = [first]
        self.size = size  # bytes of the final states and transcripts
        self.at_start: int | None = 0 if at_start else None  # the trial that is the checklist on the initial state
        self.answers: dict[int, Answers] = {}
        self.fault: SandboxFault | None = None
        self.done = anyio.Event()


def _stride(runnable: list[tuple[int, str, str]]) -> int:
    return max(i for i, _, _ in runnable) + 1


def _charge(header: dict[str, Any], episode: int, reason: str,
            charged: Answers) -> tuple[dict[str, Any], list[int]]:
    """Fail every check of trial `episode` with `reason` (into `charged`); the request without them, and the
    indices still to be answered."""
    mine = [c for c in header["checks"] if c.get("e", 0) == episode]
    charged.update({c["i"]: (False, reason, 0.0, []) for c in mine})
    rest = [c for c in header["checks"] if c.get("e", 0) != episode]
    return {**header, "checks": rest}, [c["i"] for c in rest]


def _by_trial(answers: Answers, trials: int, stride: int) -> dict[int, Answers]:
    return {e: {i - e * stride: a for i, a in answers.items() if e * stride <= i < (e + 1) * stride}
            for e in range(trials)}


class ValidatorSandbox:
    """A pool of validator worker processes. Use as an async context manager; `run` is safe to call
    concurrently from many tasks (each call borrows idle workers)."""

    def __init__(self, timeout_s: float = 2.0, memory_mb: int = 512, workers: int = 1, grace_s: float = 1.0,
                 isolation: bool = True, *, _test_seam: dict[str, Any] | None = None) -> None:
        """`isolation=False` keeps only the Python layer, the limits and the fresh batch process (for
        measuring the OS layers' cost). `_test_seam` is for the security tests only: {"grant_os": True}
        hands every validator the real os/sys/ctypes; {"skip": ["seccomp", ...]} leaves layers out."""
        if timeout_s <= 0 or memory_mb < 64 or workers < 1:
            raise ValidatorError("ValidatorSandbox needs timeout_s > 0, memory_mb >= 64 and workers >= 1")
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.n_workers = workers
        self.grace_s = grace_s
        self.os_isolation = isolation
        self._test_seam = _test_seam
        self._encoded = initial_states()
        self.restarts = 0  # workers replaced after a fault
        self.faults: list[str] = []  # every fault seen, retried or not
        self._workers: list[Worker] = []
        self._waiting: dict[tuple[Any, ...], _Trials] = {}  # trials waiting for a worker, by scenario
        # Trials join a request while their states' text stays under this: parsed, a state holds about ten
        # times its text, and the batch process must still have room under its memory limit.
        self._trial_bytes = memory_mb * 2**20 // _TRIAL_SHARE
        self._idle_send: Any = None
        self._idle_recv: Any = None
        self._root = ""
        self._report: IsolationReport | None = None

    @property
    def isolation(self) -> IsolationReport:
        """Which isolation layers the workers run under (known once the sandbox has started)."""
        if self._report is None:
            raise ValidatorError("ValidatorSandbox.isolation is known only inside `async with ValidatorSandbox()`")
        return self._report

    def worker_pids(self) -> list[int]:
        """Process ids of the workers' zygotes (for diagnostics and fault-injection tests)."""
        return [w.zygote_pid for w in self._workers]

    async def __aenter__(self) -> ValidatorSandbox:
        self._root = tempfile.mkdtemp(prefix="envscaler-validators-")
        os.chmod(self._root, 0o500)  # empty and read-only: the workers' root directory
        self._idle_send, self._idle_recv = anyio.create_memory_object_stream[Worker](self.n_workers)
        try:
            for _ in range(self.n_workers):
                worker = await self._start()
                self._workers.append(worker)
                self._idle_send.send_nowait(worker)
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        self._report = from_layers("validators", self._workers[0].isolation)
        self._report.warn_once()
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
        if self._root:
            os.chmod(self._root, 0o700)
            shutil.rmtree(self._root, ignore_errors=True)

    async def _start(self) -> Worker:
        return await Worker.start(self.memory_mb, self._root, self.os_isolation, self._test_seam)

    async def run(self, items: Sequence[CheckItem], initial_state: State, final_state: State | None,
                  transcript: JSONObject | None = None) -> list[CheckResult]:
        """Run every item's validator, state items on `final_state` and transcript items on `transcript` (global
        `initial_state` for both); one result per item, in order. `initial_state` must not change once handed
        in (its JSON is remembered by identity: a scenario's state is encoded once for all its episodes).

        Raises SandboxFault when a worker failed twice in a row through no fault of the validators."""
        if self._idle_recv is None:
            raise ValidatorError("ValidatorSandbox.run called outside `async with ValidatorSandbox(...)`")
        results, runnable = _sorted(items, transcript)
        try:
            texts = [initial_state, final_state]
            if any(kind == "transcript" for _, _, kind in runnable):
                texts.append(transcript)
            # The initial state is the scenario's, the same object for every episode: encoded once (also when
            # it is the final state too, as in the gate's initial-false step). A final state read from a
            # server (ParsedState) goes on as the bytes the server sent.
            initial = self._encoded.encode(initial_state)
            states = (initial, *(initial if t is initial_state else encode_json(t) for t in texts[1:]))
            at_start = final_state is initial_state and transcript in (None, EMPTY_TRANSCRIPT)
        except (TypeError, ValueError) as exc:
            raise ValidatorError(f"states handed to validators must be JSON values: {exc}") from exc
        # Split across workers only when some are idle: when all are busy, one batch per scenario costs less.
        idle = self._idle_recv.statistics().current_buffer_used
        n_chunks = max(1, min(idle, math.ceil(len(runnable) / _MIN_CHUNK)))
        if sum(map(len, states)) > _SPLIT_MAX_BYTES:
            n_chunks = 1
        answers: Answers = {}
        if n_chunks == 1 and runnable:
            answers = await self._with_trials(runnable, states, at_start)
        elif runnable:
            size = math.ceil(len(runnable) / n_chunks)
            failures: list[SandboxFault] = []
            async with anyio.create_task_group() as tg:
                for k in range(0, len(runnable), size):
                    tg.start_soon(self._run_chunk, runnable[k:k + size], states, answers, failures)
            if failures:
                raise failures[0]
        return _answered(items, results, answers)

    async def run_probes(self, initial_state: State, probes: Sequence[ProbeRun]) -> list[list[CheckResult]]:
        """Run each probe's items (ProbeRun: items, final state, transcript) as `run` would, all on the same
        `initial_state`, in as few requests as the limits allow and each request in one batch process: the QA
        gate's states of one scenario (the initial one, the reference's, wrong solutions', mutations), judged by
        that scenario's validators, whose checks share a process as one episode's do. Never for trials of
        different agents (`run`: a batch process each). One list of results per probe, in order. A batch that
        changed its worker's own limits is charged to the probe its batch process started with (its checks fail
        with the reason), the others asked again on a fresh worker, as for trials."""
        if self._idle_recv is None:
            raise ValidatorError("ValidatorSandbox.run_probes called outside `async with ValidatorSandbox(...)`")
        sorted_ = [_sorted(items, transcript) for items, _, transcript in probes]
        stride = max((len(items) for items, _, _ in probes), default=0)
        with_transcripts = any(kind == "transcript" for _, runnable in sorted_ for _, _, kind in runnable)
        try:
            initial = self._encoded.encode(initial_state)
            texts = [(initial if final is initial_state else encode_json(final),
                      *([encode_json(transcript)] if with_transcripts else []))
                     for (_, final, transcript), (_, runnable) in zip(probes, sorted_, strict=True) if runnable]
        except (TypeError, ValueError) as exc:
            raise ValidatorError(f"states handed to validators must be JSON values: {exc}") from exc
        placed = [(p, [(p * stride + i, source, kind) for i, source, kind in runnable])
                  for p, (_, runnable) in enumerate(sorted_) if runnable]
        answers: Answers = {}
        chunk: list[int] = []
        for n in range(len(placed) + 1):  # requests of at most _MAX_TOGETHER probes and _trial_bytes of states
            size = sum(len(t) for k in chunk for t in texts[k])
            if chunk and (n == len(placed) or len(chunk) == _MAX_TOGETHER
                          or size + sum(map(len, texts[n])) > self._trial_bytes):
                answers.update(await self._ask(partial(self._together, [placed[k] for k in chunk],
                                                       [texts[k] for k in chunk], initial)))
                chunk = []
            chunk.append(n)
        return [_answered(items, results, {i - p * stride: a for i, a in answers.items()
                                           if p * stride <= i < (p + 1) * stride})
                for p, ((items, _, _), (results, _)) in enumerate(zip(probes, sorted_, strict=True))]

    def _together(self, placed: list[tuple[int, list[tuple[int, str, str]]]], texts: list[tuple[bytes, ...]],
                  initial: bytes) -> tuple[dict[str, Any], tuple[bytes, ...], list[int]]:
        """The request for probe states judged in one batch process (run_probes)."""
        states = (initial, *(text for probe in texts for text in probe))
        runs = [(e, i, source, kind) for e, (_, runnable) in enumerate(placed) for i, source, kind in runnable]
        header = {"sizes": [len(text) for text in states], "episodes": len(placed), "together": True,
                  "timeout_s": self.timeout_s, "grace_s": self.grace_s,
                  "checks": [{"i": i, "source": source, "kind": kind, "e": e} for e, i, source, kind in runs]}
        return header, states, [i for _, i, _, _ in runs]

    async def _with_trials(self, runnable: list[tuple[int, str, str]], states: tuple[bytes, ...],
                           at_start: bool = False) -> Answers:
        """Run one episode's checks; other trials of the same scenario that come while this one waits for a
        worker join it, and all go in one request, each trial in batch processes of its own (one
        checklist, one initial state). A trial whose first comer could not ask (cancelled) asks again itself.

        `at_start`: these are the checks on the untouched initial state with an empty transcript (the guards):
        no episode's data. The request names them, and the worker runs them first in the batch process of
        another trial of the request, if there is one, instead of forking a process for them alone."""
        key = (states[0], len(states), tuple(runnable))  # by content: a run reads each episode's state afresh
        while True:
            group = self._waiting.get(key)
            size = sum(map(len, states[1:]))
            if group is not None and len(group.finals) < _MAX_TRIALS and group.size + size <= self._trial_bytes:
                slot = len(group.finals)
                group.finals.append(states[1:])
                if at_start and group.at_start is None:
                    group.at_start = slot
                group.size += size
                await group.done.wait()
                if group.fault is not None:
                    raise group.fault
                if slot in group.answers:
                    return group.answers[slot]
                continue
            group = self._waiting[key] = _Trials(states[1:], size, at_start)
            try:
                answers = await self._ask(partial(self._compose, key, group, runnable, states[0]))
                group.answers = _by_trial(answers, len(group.finals), _stride(runnable))
                return group.answers[0]
            except SandboxFault as fault:
                group.fault = fault
                raise
            finally:
                if self._waiting.get(key) is group:
                    del self._waiting[key]
                group.done.set()

    def _compose(self, key: tuple[Any, ...], group: _Trials, runnable: list[tuple[int, str, str]],
                 initial: bytes) -> tuple[dict[str, Any], tuple[bytes, ...], list[int]]:
        """A worker is free: no more trials join; the request for those that did."""
        if self._waiting.get(key) is group:
            del self._waiting[key]
        stride = _stride(runnable)
        order = sorted(range(len(group.finals)), key=lambda e: e != group.at_start)  # the guards' checks first,
        # as the worker answers them (sandbox/relay.py `_by_episode`)
        placed = [(e, e * stride + i, source, kind) for e in order for i, source, kind in runnable]
        states = (initial, *(text for final in group.finals for text in final))
        header = {"sizes": [len(text) for text in states], "episodes": len(group.finals), "timeout_s": self.timeout_s,
                  "grace_s": self.grace_s, "at_start": group.at_start,
                  "checks": [{"i": i, "source": source, "kind": kind, "e": e} for e, i, source, kind in placed]}
        return header, states, [i for _, i, _, _ in placed]

    async def _run_chunk(self, chunk: list[tuple[int, str, str]], states: tuple[bytes, ...], answers: Answers,
                         failures: list[SandboxFault]) -> None:
        header = {"sizes": [len(text) for text in states], "timeout_s": self.timeout_s, "grace_s": self.grace_s,
                  "checks": [{"i": i, "source": source, "kind": kind} for i, source, kind in chunk]}
        try:
            answers.update(await self._ask(lambda: (header, states, [i for i, _, _ in chunk])))
        except SandboxFault as fault:
            failures.append(fault)

    async def _ask(self, compose: Callable[[], tuple[dict[str, Any], tuple[bytes, ...], list[int]]]) -> Answers:
        """Borrow an idle worker, then send it the request `compose` makes (once the worker is free); retried
        once on a fresh worker after a fault. Raises SandboxFault after a second fault.

        A worker that a trial's validators changed (it names the trial) is replaced too, but that is the trial's
        doing: its checks fail with the reason and the request goes on for the other trials, uncounted."""
        worker: Worker = await self._idle_recv.receive()
        try:
            header, states, indices = compose()
            line_timeout = self._line_deadline(sum(len(text) for text in states))
            seen: list[str] = []
            charged: Answers = {}
            while True:
                if worker.process.returncode is not None:
                    worker = await self._replace(worker)
                try:
                    return {**charged, **await worker.ask(header, states, indices, line_timeout)}
                except WorkerFault as fault:
                    worker = await self._replace(worker)
                    if fault.culprit is not None:
                        header, indices = _charge(header, fault.culprit, str(fault), charged)
                        if not indices:
                            return charged
                        continue
                    self.faults.append(str(fault))
                    seen.append(str(fault))
                    if len(seen) == 2:
                        raise SandboxFault(
                            f"the validator sandbox failed twice in a row through no fault of the validators: "
                            f"{seen[0]}; then, on a fresh worker: {seen[1]}") from fault
        except SandboxFault:
            raise
        except BaseException:
            # Cancelled (or failed) mid-request: answers nobody will read may still come, so this worker's
            # stream is out of step. Kill it; the next run that borrows it starts a fresh one.
            with anyio.CancelScope(shield=True):
                await worker.kill()
            raise
        finally:
            self._idle_send.send_nowait(worker)

    def _line_deadline(self, state_bytes: int) -> float:
        """How long to wait for the worker's next line: its own watchdog's window plus room to act on it."""
        return self.timeout_s + self.grace_s + state_bytes / _PARSE_RATE + self.grace_s + 2.0

    async def _replace(self, worker: Worker) -> Worker:
        await worker.kill()
        fresh = await self._start()
        self._workers[self._workers.index(worker)] = fresh
        self.restarts += 1
        return fresh

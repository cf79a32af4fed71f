"""The zygote's loop: one forked batch process per request (per trial when a request carries several trials of
a scenario: each is judged on a fresh interpreter; the checklist on the untouched initial state, when the
request names it, runs first in a trial's process; one process for all of them when the request says
"together"), its answers relayed, its life watched.

How a batch ends, and whose fault it is (the rule the sandbox documents):

* every check answered -> the answers; every process of the batch is then killed.
* a check burned the CPU past its time (the alarm did not stop it, or the kernel's CPU limit killed the
  process with SIGXCPU) -> that check "timed out"; the rest of the batch runs in a new batch process.
  A check's time is CPU time: a check slowed down by a loaded machine is waited for, not charged.
* the batch process crashed (SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGSYS, SIGTRAP) or exited on its
  own -> that check fails with the reason; the rest runs in a new batch process.
* the batch process was stopped (SIGSTOP/SIGTSTP), stalled without using the CPU, got too little of it to
  be judged (a machine too loaded), or was killed by any other signal (SIGKILL, SIGTERM ...) that the
  zygote did not send -> a fault: not the validators' doing.
"""

from __future__ import annotations

import collections
import gc
import json
import os
import select
import signal
import time
from typing import Any, BinaryIO

from envscaler_mcp.isolation import confine_validators as confine
from envscaler_mcp.isolation import namespaces
from envscaler_mcp.sandbox.restrict import interpreter_state
from envscaler_mcp.sandbox.runner import (
    MAX_EVIDENCE,
    MAX_REASON,
    Pristine,
    Runner,
    answer_line,
    changed_limits,
    limits_now,
)

_CRASHES = {signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGSYS,
            signal.SIGTRAP}
_MAX_LINE = 1 << 16
_STALL_CPU_SHARE = 0.05  # a batch process that used less of the CPU than this while overdue has stalled
_PARSE_RATE = 20e6  # bytes of state JSON per second, pessimistic: time allowed for parsing before a check
_SETUP_FAILED = 70  # exit code of a batch process that could not confine itself
_TAMPERED = 71  # exit code of a batch process whose last answered check changed its limits: go on in a fresh one
_FRESH = 72  # exit code of a batch of probe states whose last probe changed the interpreter: go on in a fresh one
_MALFORMED = "the batch process wrote a malformed answer"
# Initial states kept parsed for later batches of the same scenario (trials, the gate's probes): a few small
# ones or a handful of up to _SHARED_PARSE_MAX (a parse holds about ten times its text).
_RECENT_STATES = 16
_RECENT_BYTES = 4 << 20
# A state is parsed here only when more than one batch process will read it (trials of one request that share
# a text, an initial state seen in an earlier request). One read once is parsed in its batch process: a parse
# here costs the same, and then every fork copies the page tables of its objects and the batch process copies
# each page it reads (reading a Python object writes its reference count), while what a batch process parsed
# goes with it; the zygote's own memory stays what it was (benchmarks/README.md). `_SEEN` hashes of initial
# states are remembered to know the second request of a scenario.
_SEEN = 256
# A state text longer than this is parsed only in the batch process that uses it, never in the zygote: what the
# zygote parses stays resident in it for the worker's life (its objects' pages, about 45 MB after 3 MB states,
# beside every server and the caller; benchmarks/README.md), while a batch process's memory goes when it ends.
# Smaller ones that more than one batch process reads are parsed once here and shared (initial states are also
# kept for later requests).
_SHARED_PARSE_MAX = 1 << 20
_MAX_EPISODES = 64  # trials of one scenario in one request (each in batch processes of its own)


class _Fault(Exception):
    """The batch process failed through no fault of its validators."""


class _Tampered(Exception):
    """A batch process changed the zygote itself (its limits): the zygote cannot serve another batch. Not a
    fault of the machine: the trial whose batch it was is named, so the caller charges it."""

    def __init__(self, reason: str, episode: int) -> None:
        super().__init__(reason)
        self.episode = episode


def _cpu_seconds(pid: int) -> float:
    """CPU time used so far by child `pid` (its process CPU clock); 0.0 if it cannot be read."""
    try:
        return time.clock_gettime((~pid << 3) | 2)
    except OSError:
        return 0.0


class _Progress:
    """CPU and wall time of a batch process at its last answer, and its CPU at the start of this window."""

    def __init__(self, cpu: float) -> None:
        self.cpu = self.window_cpu = cpu
        self.wall = time.monotonic()


class Zygote:
    """Serves requests from the caller, forking a batch process for each."""

    def __init__(self, runner: Runner, batch_filter: Any, out: BinaryIO, null_fd: int) -> None:
        self.runner = runner
        self.batch_filter = batch_filter
        self.out = out
        self.null_fd = null_fd
        self.pid1 = os.getpid() == 1
        self._recent: dict[bytes, Pristine] = {}  # initial-state text -> parsed (_RECENT_STATES, _RECENT_BYTES)
        self._seen: dict[tuple[int, int], None] = {}  # (hash, length) of initial states lately asked about
        self._outbox: list[dict[str, Any]] = []
        self._limits = limits_now("RLIMIT_CPU")  # what the zygote set itself; only a batch process could change it
        self._interpreter = interpreter_state(runner.views)  # what each batch process starts with
        for sig in (signal.SIGALRM, signal.SIGPROF):  # the zygote has no handler a batch could trigger
            signal.signal(sig, signal.SIG_IGN)

    def serve(self, stdin: BinaryIO) -> None:
        """Answer requests until stdin closes. A request is a JSON header line followed by the initial state's
        JSON text and, for each of its episodes (trials of one scenario), the final state's and the transcript's
        when transcript items are sent, of the sizes the header gives."""
        gc.freeze()  # what exists now is shared with every batch process: keep its collector off those pages
        while header := stdin.readline():
            if not header.strip():
                continue
            request = json.loads(header)
            episodes = max(1, min(int(request.get("episodes", 1)), _MAX_EPISODES))
            texts = [stdin.read(int(size)) for size in request["sizes"][:1 + 2 * episodes]]
            pending: list[dict[str, Any]] = list(request["checks"])
            for check in pending:
                check["prepared"] = self.runner.prepare(check["source"])
            # Each trial in batch processes of its own, forked from this pre-imported zygote: no check sees
            # the interpreter state (decimal context, patched modules) or the answer pipe of another trial.
            # A request of probe states ("together": the QA gate's states of one scenario, judged by the
            # same validators) runs them in one batch process while no probe's checks change what the
            # next would see of the interpreter (restrict.interpreter_state); a probe after one that did
            # goes on in a fresh batch process, so every probe gets the verdicts it gets alone.
            trials = [pending] if request.get("together") else _by_episode(pending, request.get("at_start"))
            names_initial = any(p["prepared"][2] for p in pending)
            initial = self._initial(texts[0], len(trials) > 1) if names_initial else Pristine(texts[0])
            request["states"] = _episode_states(initial, texts[1:], episodes, pending,
                                                share=not request.get("together"))
            try:
                for trial in trials:
                    while trial:
                        trial = self._batch(request, trial)
            except _Fault as fault:
                self._send({"fault": str(fault)})
            except _Tampered as tampered:
                self._send({"fault": str(tampered), "culprit": tampered.episode})
                self._flush()
                os._exit(1)  # this zygote is no longer what it was: the caller starts a fresh worker
            self._flush()
            del request, texts, initial  # not held while the next request is waited for

    def _initial(self, text: bytes, shared: bool) -> Pristine:
        """The initial state, parsed once for every batch that sends the same text (trials, gate, mutations) from
        its second request on, or at once when this request's trials share it (`shared`); one over
        _SHARED_PARSE_MAX, or one not (yet) read twice, is left to the batch process that uses it."""
        if len(text) > _SHARED_PARSE_MAX:
            return Pristine(text)  # parsed in the batch process
        cached = self._recent.pop(text, None)
        if cached is None:
            key = (hash(text), len(text))
            seen = key in self._seen
            self._seen.pop(key, None)
            self._seen[key] = None  # the most recent last
            if len(self._seen) > _SEEN:
                self._seen.pop(next(iter(self._seen)))
            if not (seen or shared):
                return Pristine(text)  # read once so far: parsed in its batch process
            cached = Pristine(text).parse(pristine_copy=True)
        self._recent[text] = cached  # the most recent last
        while len(self._recent) > _RECENT_STATES or sum(map(len, self._recent)) > _RECENT_BYTES:
            self._recent.pop(next(iter(self._recent)))
        return cached

    def _send(self, *messages: dict[str, Any]) -> None:
        self._outbox.extend(messages)

    def _flush(self) -> None:
        """Write what `_send` queued. A batch's last answers go out only once its processes are gone."""
        if self._outbox:
            self.out.write(b"".join(json.dumps(m).encode() + b"\n" for m in self._outbox))
            self._outbox.clear()

    # ---- one batch process ----
    def _batch(self, request: dict[str, Any], pending: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Run `pending` in a new batch process; return the checks still to run (after a check ended it)."""
        answers_r, answers_w = os.pipe()
        alive_r, alive_w = os.pipe()  # the batch process holds the write end: EOF here means it has ended
        pid = os.fork()
        if pid == 0:
            os.close(answers_r)
            os.close(alive_r)
            self._child(answers_w, request, pending)
        os.close(answers_w)
        os.close(alive_w)
        os.set_blocking(answers_r, False)
        rest = pending
        try:
            rest = self._watch(pid, answers_r, alive_r, request, pending)
            return rest
        finally:
            os.close(answers_r)
            os.close(alive_r)
            self._end_batch(pid)
            self._flush()
            changed = changed_limits(self._limits)
            if changed:  # charged to the trial of the last check that ran
                last = pending[max(0, len(pending) - len(rest) - 1)]
                raise _Tampered(f"a validator changed the limits of the sandbox's worker ({', '.join(changed)})",
                                int(last.get("e", 0)))

    def _child(self, write_end: int, request: dict[str, Any], pending: list[dict[str, Any]]) -> None:
        try:
            if not self.pid1:  # as PID 1 of the namespace, the zygote takes every process in it when it dies
                os.setpgid(0, 0)  # so the zygote can end anything it starts
                namespaces.die_with_parent()
            os.dup2(self.null_fd, 0)
            os.close(self.out.fileno())  # only the zygote speaks to the caller
            self.runner.arm(self._limits)
            confine.confine_batch(self.batch_filter)
        except BaseException:
            os._exit(_SETUP_FAILED)
        try:
            timeout_s = float(request["timeout_s"])
            initial = request["states"][0][0]
            arguments = [_argument(check, request["states"]) for check in pending]
            last_use = {id(argument): k for k, argument in enumerate(arguments)}
            # the last check that names `initial_state` (only those get it): after it the state need not be kept
            last_initial = max((k for k, check in enumerate(pending) if check["prepared"][2]), default=-1)
            together = bool(request.get("together"))
            for k, check in enumerate(pending):
                if together and k and check.get("e", 0) != pending[k - 1].get("e", 0) \
                        and interpreter_state(self.runner.views) != self._interpreter:
                    os._exit(_FRESH)  # the last probe's checks changed the interpreter: the next probe's see none
                keep = (last_initial > k, last_use[id(arguments[k])] > k)
                answer = self.runner.run_check(check["prepared"], initial, arguments[k], timeout_s, keep,
                                               kind=str(check.get("kind", "state")))
                os.write(write_end, answer_line(check["i"], answer))
                if self.runner.tampered:
                    os._exit(_TAMPERED)
        finally:
            os._exit(0)

    def _watch(self, pid: int, answers: int, alive: int, request: dict[str, Any],
               pending: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Wait for the batch process to end (or for a window without progress), then relay its answers.

        The zygote wakes only when the batch ends or every `window` seconds (a check's time plus grace);
        a wake without a new answer means the current check is overdue."""
        timeout_s = float(request["timeout_s"])
        window = timeout_s + float(request.get("grace_s", 1.0)) + \
            sum(request["sizes"]) / _PARSE_RATE
        buffer = b""
        done = before = 0
        slow = _Progress(_cpu_seconds(pid))
        wake = time.monotonic() + window
        while True:
            ended = _ended(alive, max(0.0, wake - time.monotonic()))
            buffer += _drain(answers)
            lines: list[dict[str, Any]] = []
            while b"\n" in buffer and done < len(pending):
                line, buffer = buffer.split(b"\n", 1)
                lines.append(self._checked(line, pending[done]["i"]))
                done += 1
                if lines[-1]["reason"] == _MALFORMED:
                    break  # the check that was running wrote it: charged to it, the rest in a fresh process
            if len(buffer) > _MAX_LINE and done < len(pending):
                lines.append(_answer(pending[done]["i"], _MALFORMED))
                done += 1
            if lines and lines[-1]["reason"] == _MALFORMED:
                self._send(*lines)
                return pending[done:]
            self._send(*lines)
            if done == len(pending):
                return []
            if ended:
                return self._died(pid, pending, done, timeout_s, window)
            if ended is None and time.monotonic() < wake:
                continue  # woken by bytes on the alive pipe: the window goes on
            if done == before:
                verdict = self._overdue(pid, pending, done, timeout_s, slow, window)
                if verdict is not None:
                    return verdict
                self._send({"alive": True})  # slowed by the machine's load, not overdue: keep waiting
                slow.window_cpu = _cpu_seconds(pid)
            else:
                slow = _Progress(_cpu_seconds(pid))
            before, wake = done, time.monotonic() + window
            self._flush()  # progress, and a sign of life for the caller's watchdog

    def _checked(self, line: bytes, index: int) -> dict[str, Any]:
        """Re-encode one answer after checking its shape (what a batch process writes is not trusted)."""
        try:
            answer = json.loads(line)
            passed, reason, duration = answer["passed"], answer["reason"], float(answer["duration_s"])
            evidence = answer.get("evidence", [])
            if answer["i"] != index or not isinstance(passed, bool) or not (reason is None or isinstance(reason, str)):
                raise ValueError(line[:80])
            if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
                raise ValueError(line[:80])
        except (ValueError, KeyError, TypeError):
            return _answer(index, _MALFORMED)
        return {"i": index, "passed": passed and reason is None, "reason": reason and reason[:MAX_REASON],
                "duration_s": duration, "evidence": [e[:MAX_REASON] for e in evidence[:MAX_EVIDENCE]]}

    def _overdue(self, pid: int, pending: list[dict[str, Any]], done: int, timeout_s: float, since: _Progress,
                 window: float) -> list[dict[str, Any]] | None:
        """No answer for a window. The check's time is CPU time, so the machine's load never decides it:

        * stopped, or less than 5 % of the CPU in the last window -> stalled: a fault, not the validator's.
        * more CPU than its time (plus the grace) since the last answer -> it ignored the alarm (C code):
          killed, "timed out", the validator's.
        * still under its CPU time -> merely slowed by other work on the machine: None (keep waiting), until
          the check has had `window / 5 %` of wall time; then the machine is too loaded to judge it: a fault.
        """
        waited, status = os.waitpid(pid, os.WNOHANG | os.WUNTRACED)
        if waited and os.WIFSTOPPED(status):
            raise _Fault(f"the batch process was stopped by {_signame(os.WSTOPSIG(status))} (it stalled)")
        if waited:  # it just ended: judge by how
            return self._judge(status, pending, done, timeout_s, answered=done > 0)
        now = _cpu_seconds(pid)
        recent, used = now - since.window_cpu, now - since.cpu
        waited_s = time.monotonic() - since.wall
        if recent < _STALL_CPU_SHARE * window:
            os.kill(pid, signal.SIGKILL)
            raise _Fault(f"the batch process stalled: no answer for {window:.1f} s while it used {recent:.2f} s "
                         "of CPU")
        if used >= timeout_s + (window - timeout_s) / 2:
            os.kill(pid, signal.SIGKILL)
            self._send(_answer(pending[done]["i"], f"timed out after {float(timeout_s)} s (it kept the CPU busy "
                                                   "past its time and was stopped)"))
            return pending[done + 1:]
        if waited_s >= window / _STALL_CPU_SHARE:
            os.kill(pid, signal.SIGKILL)
            raise _Fault(f"the machine is too loaded to judge a check: it got {used:.2f} s of CPU in "
                         f"{waited_s:.1f} s")
        return None

    def _died(self, pid: int, pending: list[dict[str, Any]], done: int, timeout_s: float,
              window: float) -> list[dict[str, Any]]:
        """The batch process closed its end of the pipes before every check was answered: find out why (it
        may also have closed them on purpose and still be running)."""
        since = _Progress(_cpu_seconds(pid))
        while True:
            give_up = time.monotonic() + window
            while time.monotonic() < give_up:
                waited, status = os.waitpid(pid, os.WNOHANG)
                if waited:
                    return self._judge(status, pending, done, timeout_s, answered=done > 0)
                time.sleep(0.005)
            verdict = self._overdue(pid, pending, done, timeout_s, since, window)
            if verdict is not None:
                return verdict
            self._send({"alive": True})
            self._flush()
            since.window_cpu = _cpu_seconds(pid)

    def _judge(self, status: int, pending: list[dict[str, Any]], done: int, timeout_s: float,
               answered: bool = False) -> list[dict[str, Any]]:
        """How the batch process ended, before answering `pending[done]`; `answered`: it answered some check of
        this batch (a process that ends with _TAMPERED after an answer asks for a fresh one)."""
        index = pending[done]["i"]
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            if sig == signal.SIGXCPU:
                reason = f"timed out after {float(timeout_s)} s (the kernel's CPU limit ended it)"
            elif sig in _CRASHES:
                reason = f"the validator crashed the interpreter ({_signame(sig)})"
            else:
                raise _Fault(f"the batch process was killed by {_signame(sig)} from outside the sandbox")
        elif os.WEXITSTATUS(status) == _SETUP_FAILED:
            raise _Fault("the batch process could not apply its isolation layers")
        elif os.WEXITSTATUS(status) == _TAMPERED and answered:
            return pending[done:]  # the check that changed the process was charged in its answer
        elif os.WEXITSTATUS(status) == _FRESH and answered:
            return pending[done:]  # the next probe's checks, on a fresh interpreter
        else:
            reason = f"the validator ended its process (exit code {os.WEXITSTATUS(status)})"
        self._send(_answer(index, reason))
        return pending[done + 1:]

    def _end_batch(self, pid: int) -> None:
        """Kill every process of the batch (descendants included) and reap them."""
        try:
            if self.pid1:
                os.kill(-1, signal.SIGKILL)  # PID 1 of its namespace: everything else in it
            else:
                os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        while True:
            try:
                waited, _ = os.waitpid(-1 if self.pid1 else pid, 0)
            except ChildProcessError:
                return
            if waited == pid and not self.pid1:
                return


def _episode_states(initial: Pristine, texts: list[bytes], episodes: int, checks: list[dict[str, Any]], *,
                    share: bool = True) -> list[tuple[Pristine, Pristine, Pristine | None]]:
    """(initial, final, transcript) of each episode of a request; a text that more than one episode's batch
    processes read is parsed now (so that they share it), any other in the batch process that reads it. A state
    more than one check gets also keeps its pristine image, unless every check of the episode reads only. A final state of the initial state's text (the guards' episode: the checklist on the untouched
    initial state) shares the initial state's image instead: loaded from it in its batch process (about half
    the cost of a parse), not parsed in the zygote. With `share` (each episode in batch processes of its own,
    which only read what the zygote parsed), episodes whose final states (or transcripts) are the same text
    share one parse: trials that ended in the same state are not parsed once each."""
    per = max(1, len(texts) // episodes)  # 2 when transcripts were sent
    parsed: dict[tuple[str, bytes, bool], Pristine] = {}
    uses = collections.Counter(texts)  # with `share`, how many episodes' batch processes read each text

    def shared(what: str, text: bytes, pristine_copy: bool) -> Pristine:
        if not share or uses[text] < 2:  # one batch process reads it: parsed there
            return Pristine(text)
        key = (what, text, pristine_copy)  # a final state never shares with a transcript (one batch gets both)
        found = parsed.get(key)
        if found is None:
            found = parsed[key] = _shared(text, pristine_copy)
        return found

    states = []
    for e in range(episodes):
        mine = [c for c in checks if c.get("e", 0) == e]
        imaged = not all(c["prepared"][3] for c in mine)  # checks that read only need no image (sandbox/readonly.py)
        on_transcript = sum(c.get("kind") == "transcript" for c in mine) if per > 1 else 0
        text = texts[per * e]
        if initial.imaged and (text is initial.text or text == initial.text):  # the guards' episode
            final = initial.twin()
        else:
            final = shared("final", text, imaged and len(mine) - on_transcript > 1)
        transcript = shared("transcript", texts[per * e + 1], imaged and on_transcript > 1) if per > 1 else None
        states.append((initial, final, transcript))
    return states


def _shared(text: bytes, pristine_copy: bool) -> Pristine:
    """A state parsed now, in the zygote, so that batch processes share it; one over _SHARED_PARSE_MAX is parsed
    in the batch process that first uses it."""
    return Pristine(text) if len(text) > _SHARED_PARSE_MAX else Pristine(text).parse(pristine_copy=pristine_copy)


def _by_episode(checks: list[dict[str, Any]], at_start: Any = None) -> list[list[dict[str, Any]]]:
    """A request's checks split by trial (episode), each trial's in order; trials in order of their first check.

    The checks of episode `at_start` (the checklist on the untouched initial state with an empty transcript:
    the scenario's validators on the scenario's own data, nothing from any episode) go first in the first other
    trial's batch process rather than in one of their own: one fork fewer. They run before any check sees the
    trial's final state or transcript, so nothing of an episode reaches them."""
    trials: dict[int, list[dict[str, Any]]] = {}
    for check in checks:
        trials.setdefault(int(check.get("e", 0)), []).append(check)
    start = trials.get(at_start) if isinstance(at_start, int) and not isinstance(at_start, bool) else None
    if start is not None and len(trials) > 1:
        del trials[at_start]
        first = next(iter(trials))
        trials[first] = start + trials[first]
    return list(trials.values())


def _argument(check: dict[str, Any], states: list[tuple[Pristine, Pristine, Pristine | None]]) -> Pristine:
    """What a check is run on: its episode's transcript for a transcript item, else its final state."""
    _, final, transcript = states[int(check.get("e", 0))]
    if check.get("kind") == "transcript" and transcript is not None:
        return transcript
    return final


def _ended(alive: int, wait: float) -> bool | None:
    """Wait up to `wait` s for the batch process to close its end of the `alive` pipe: True when it did, False
    when the time ran out, None when it wrote there instead (read and ignored: the pipe carries no answers)."""
    if not select.select([alive], [], [], wait)[0]:
        return False
    try:
        return True if os.read(alive, _MAX_LINE) == b"" else None
    except OSError:
        return True


def _drain(fd: int) -> bytes:
    """What is readable now from a non-blocking pipe, up to a bound (a batch process writing without end
    gets its answer judged malformed instead of filling the zygote's memory)."""
    chunks: list[bytes] = []
    while sum(map(len, chunks)) <= 2 * _MAX_LINE:
        try:
            chunk = os.read(fd, _MAX_LINE)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _answer(index: int, reason: str) -> dict[str, Any]:
    return {"i": index, "passed": False, "reason": reason[:MAX_REASON], "duration_s": 0.0, "evidence": []}


def _signame(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"

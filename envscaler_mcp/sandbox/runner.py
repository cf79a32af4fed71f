"""Running validators inside the batch process: fresh globals per check, restricted builtins, a CPU-time
alarm per check, and states that no check can change for the next one. Standard library only.

A batch process (sandbox/worker.py forks one per scenario batch) parses each state once (and the transcript,
which transcript items get instead of the final state). The first check
gets the parsed object itself; after each check the object is compared with its pristine `marshal` image
(about three times cheaper than a copy) and replaced by a fresh copy only if the check changed it.
"""

from __future__ import annotations

import ast
import io
import json
import marshal
import math
import resource
import signal
import time
from types import CodeType
from typing import Any

from envscaler_mcp.sandbox.readonly import reads_only
from envscaler_mcp.sandbox.restrict import (
    ImportNotAllowed,
    SandboxViolation,
    build_module_views,
    make_builtins,
    static_problem,
)
from envscaler_mcp.transcript import evidence as transcript_evidence

MAX_REASON = 300
# The limits the zygote set (sandbox/worker.py), inherited by each batch process; RLIMIT_CPU is set per check.
WATCHED_LIMITS = ("RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_CORE", "RLIMIT_NOFILE")


def limits_now(*extra: str) -> dict[str, tuple[int, int]]:
    """This process's watched limits, and the `extra` ones named (e.g. "RLIMIT_CPU")."""
    return {name: resource.getrlimit(getattr(resource, name)) for name in (*WATCHED_LIMITS, *extra)}


def changed_limits(before: dict[str, tuple[int, int]]) -> list[str]:
    """The names of this process's limits in `before` that differ now (all of them when unreadable)."""
    try:
        now = limits_now(*(name for name in before if name not in WATCHED_LIMITS))
    except (OSError, ValueError):
        return list(before)
    return [name for name, value in before.items() if now[name] != value]
MAX_EVIDENCE = 20  # entries per check, each at most MAX_REASON characters
# Captured now: a validator may patch json's classes inside its batch, and the answers must not change.
_quote = json.encoder.encode_basestring_ascii


class _CheckTimeout(BaseException):
    """Raised by SIGPROF when a check overruns its CPU time; BaseException so `except Exception` misses it."""


class Sink(io.TextIOBase):
    """A text stream that discards everything (the batch process's sys.stdout and sys.stderr)."""

    def write(self, s: str) -> int:
        return len(s)


def _short(text: str) -> str:
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."


def _describe(value: Any) -> str:
    try:
        shown = repr(value)
    except Exception:
        shown = "<unprintable>"
    return _short(f"returned {shown[:80]} ({type(value).__name__}), not a bool")


class Pristine:
    """One state of a batch, parsed on first use; `lend` always returns an object equal to the original."""

    def __init__(self, text: bytes | str) -> None:
        self.text = text
        self._obj: Any = None
        self._blob: bytes | None = None
        self._dirty = False

    def parse(self, pristine_copy: bool = False) -> Pristine:
        """Parse now (in the zygote, so batch processes share the parsed objects); optionally also keep the
        pristine image. Falls back to parsing on first use when memory runs out."""
        try:
            self._obj = json.loads(self.text)
            if pristine_copy:
                self._blob = marshal.dumps(self._obj)
        except (MemoryError, ValueError, RecursionError):
            self._obj = self._blob = None
        return self

    @property
    def imaged(self) -> bool:
        """Parsed, with its pristine image kept."""
        return self._obj is not None and self._blob is not None

    def twin(self) -> Pristine:
        """Another state of the same text (a guard's final state is its initial state) that shares this one's
        pristine image (`imaged` must hold): it lends an object of its own, loaded from the image in the process
        that first uses it."""
        twin = Pristine(self.text)
        twin._blob = self._blob
        return twin

    def lend(self, keep: bool, may_change: bool = True) -> Any:
        """The state for the next check; `keep` when a later check may need it again. Until `settle` says
        otherwise, the lent object counts as changed, unless `may_change` is False (a check that reads only:
        the object stays as it is, nothing to compare afterwards)."""
        if self._obj is None:
            self._obj = json.loads(self.text) if self._blob is None else marshal.loads(self._blob)
        elif self._dirty:
            if self._blob is None:
                raise ValueError("state changed and no pristine copy was kept")
            self._obj = marshal.loads(self._blob)
            self._dirty = False
        if may_change:
            if keep and self._blob is None:
                self._blob = marshal.dumps(self._obj)
            self._dirty = True
        return self._obj

    def settle(self) -> None:
        """After a check: note whether it changed the lent object (anything unexpected counts as a change)."""
        if self._obj is None or self._blob is None:
            return
        try:
            self._dirty = marshal.dumps(self._obj) != self._blob
        except Exception:
            self._dirty = True


# (code object or None, why it cannot run, whether it names `initial_state`, whether it reads only)
Prepared = tuple[CodeType | None, str | None, bool, bool]
_PREPARED_KEPT = 512
MAX_SOURCE = 100_000


def _prepare(source: str) -> Prepared:
    if len(source) > MAX_SOURCE:
        return None, f"the validator is too long ({len(source)} characters; at most {MAX_SOURCE})", False, False
    try:
        tree = ast.parse(source, "<validator>")
        problem = static_problem(tree)
        if problem:
            return None, problem, False, False
        code = compile(tree, "<validator>", "exec")
    except SyntaxError as exc:
        return None, _short(f"syntax error: {exc.msg} (line {exc.lineno})"), False, False
    except (ValueError, RecursionError, MemoryError) as exc:
        return None, _short(f"cannot compile: {type(exc).__name__}: {exc}"), False, False
    names_initial = any(isinstance(node, ast.Name) and node.id == "initial_state" for node in ast.walk(tree))
    return code, None, names_initial, reads_only(tree)


class Runner:
    """Runs check functions one at a time with fresh globals and a per-check alarm."""

    def __init__(self) -> None:
        self.views = build_module_views()
        self.builtins = make_builtins(self.views)
        self._fired = False
        self._granted: dict[str, Any] = {}
        self._prepared: dict[str, Prepared] = {}
        self._limits: dict[str, tuple[int, int]] = {}
        self._cpu_limit = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
        self.tampered = ""  # set when a check changed its process's limits or alarm: the batch must end
        # Set once a check that may change its states has run in this process: from then on, code it left
        # behind (a callback, an object with a finalizer) could change them later, so every check's are compared.
        self._changes_possible = False

    def grant(self, **names: Any) -> None:
        """Test seam: extra globals every validator gets (the security tests hand over the real `os`)."""
        self._granted.update(names)

    def arm(self, limits: dict[str, tuple[int, int]] | None = None) -> None:
        """Install the per-check alarm handler (in the process that runs the checks). The alarm counts the
        process's CPU time (ITIMER_PROF), not the clock's: a loaded machine slows a check down but never
        makes it time out (the zygote tells a slow check from a stalled one, sandbox/relay.py). `limits`: the
        watched limits this process has now, when its parent knows them (a fork inherits its parent's)."""
        signal.signal(signal.SIGPROF, self._on_alarm)
        self._limits = {name: limits[name] for name in WATCHED_LIMITS} if limits else limits_now()

    def _on_alarm(self, _signum: int, _frame: object) -> None:
        self._fired = True
        raise _CheckTimeout

    def prepare(self, source: str) -> Prepared:
        """Parse, check and compile one validator (no code of it runs). Done in the zygote, before the fork,
        and remembered: the batch process then only runs code objects, and trials of one scenario compile
        their validators once."""
        prepared = self._prepared.get(source)
        if prepared is None:
            prepared = self._prepared[source] = _prepare(source)
            if len(self._prepared) > _PREPARED_KEPT:
                self._prepared.pop(next(iter(self._prepared)))
        return prepared

    def run_check(self, prepared: Prepared, initial: Pristine, argument: Pristine, timeout_s: float,
                  keep: tuple[bool, bool], kind: str = "state") -> dict[str, Any]:
        """Run one prepared validator on `argument` (the final state, or for a transcript item
        (`kind="transcript"`) the transcript); `keep`: whether a later check of the batch uses the initial state,
        and `argument`, again. Returns {"passed", "reason", "duration_s", "evidence"} (evidence: what the
        transcript_checks helpers recorded during the check)."""
        start = time.perf_counter()
        transcript_evidence.begin()
        passed, reason = self._run(prepared, initial, argument, timeout_s, keep, kind)
        evidence = [_short(str(e)) for e in transcript_evidence.take()[:MAX_EVIDENCE]]
        self.tampered = self._tampering()
        if self.tampered:  # the check's own doing: its verdict is the failure; the next check needs a fresh process
            passed, reason, evidence = False, self.tampered, []
        return {"passed": passed, "reason": reason, "duration_s": round(time.perf_counter() - start, 6),
                "evidence": evidence}

    def _tampering(self) -> str:
        """Why the process is no longer fit to run another check ('' when it is): a check changed the limits
        it was given (its own CPU limit included) or took over the alarm."""
        changed = changed_limits(self._limits)
        try:
            if resource.getrlimit(resource.RLIMIT_CPU) != self._cpu_limit:
                changed.append("RLIMIT_CPU")
            alarm = signal.getsignal(signal.SIGPROF)
        except (OSError, ValueError):
            alarm = None
        if changed:
            return _short(f"the validator changed its process's limits ({', '.join(changed)})")
        if alarm != self._on_alarm:
            return "the validator changed its process's CPU-time alarm"
        return ""

    def _run(self, prepared: Prepared, initial: Pristine, final: Pristine, timeout_s: float,
             keep: tuple[bool, bool], kind: str = "state") -> tuple[bool, str | None]:
        code, problem, names_initial, read_only = prepared
        if code is None:
            return False, problem
        keep_initial, keep_final = keep
        # A check that reads only, in a process where only such checks have run, leaves its states as they were.
        may_change = self._changes_possible = self._changes_possible or not read_only
        reused = [final] if keep_final and may_change else []  # the states a later check gets: settled after it
        try:
            env: dict[str, Any] = {"__builtins__": self.builtins, "__name__": "validator", **self._granted}
            # Only a validator that names `initial_state` can reach it (eval/globals are refused): skip the parse.
            if names_initial:
                env["initial_state"] = initial.lend(keep=keep_initial, may_change=may_change)
                if keep_initial and may_change:
                    reused.append(initial)
            final_state = final.lend(keep=keep_final, may_change=may_change)  # the transcript, for a transcript item
        except (MemoryError, ValueError, RecursionError) as exc:
            return False, "memory limit exceeded" if isinstance(exc, MemoryError) else _short(f"bad state JSON: {exc}")
        self._fired = False
        result: Any = None
        self._cpu_limit = _cap_cpu(timeout_s)
        try:
            signal.setitimer(signal.ITIMER_PROF, timeout_s)
            try:
                exec(code, env)
                func = env.get("check_func")
                if not callable(func):
                    name = "transcript" if kind == "transcript" else "final_state"
                    return False, f"the validator does not define check_func({name})"
                result = func(final_state)
                if reused:  # charged to this check's time: it is the one that may have changed the states
                    del env, func, final_state
                    for state in reused:
                        state.settle()
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
        except _CheckTimeout:
            return False, f"timed out after {float(timeout_s)} s"
        except MemoryError:
            return False, "memory limit exceeded"
        except ImportNotAllowed as exc:
            return False, _short(str(exc))
        except SandboxViolation as exc:
            return False, _short(str(exc))
        except RecursionError:
            return False, "raised RecursionError: maximum recursion depth exceeded"
        except BaseException as exc:
            return False, _short(f"raised {type(exc).__name__}: {exc}")
        if self._fired:  # the check swallowed the timeout and returned anyway
            return False, f"timed out after {float(timeout_s)} s"
        if isinstance(result, bool):
            return result, None
        return False, _describe(result)


def answer_line(index: int, answer: dict[str, Any]) -> bytes:
    """One answer as a JSON line, built without json's (patchable) encoder classes."""
    reason = "null" if answer["reason"] is None else _quote(answer["reason"])
    passed = "true" if answer["passed"] is True else "false"
    duration = float.__repr__(float(answer["duration_s"]))
    evidence = ", ".join(_quote(str.__str__(e)) for e in answer.get("evidence", ()) if type(e) is str)
    return (f'{{"i": {int(index)}, "passed": {passed}, "reason": {reason}, "duration_s": {duration}, '
            f'"evidence": [{evidence}]}}\n').encode("ascii")


def _cap_cpu(timeout_s: float) -> tuple[int, int]:
    """Kernel backstop: the batch process dies (SIGXCPU) if this check burns the CPU well past its time, even
    when the alarm is ignored by C code. Returns the limit set."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    limit = (math.ceil(usage.ru_utime + usage.ru_stime + timeout_s) + 2, resource.RLIM_INFINITY)
    resource.setrlimit(resource.RLIMIT_CPU, limit)
    return limit

"""The validator worker process: `python -m envscaler_mcp.scoring.worker --memory-mb N`.

Reads one JSON request per line on stdin and answers one JSON line per check on the original stdout:

    request:  {"initial": "<state JSON text>", "final": "<state JSON text>", "timeout_s": 2.0,
               "transcript": "<transcript JSON text>" (only when a transcript check is sent),
               "checks": [{"i": 0, "source": "def check_func(final_state): ...", "kind": "state"}, ...]}
    answer:   {"i": 0, "passed": true, "reason": null, "duration_s": 0.0001, "evidence": [...]}
              (one per check, in order)

First line written after start-up: {"ready": true, "pid": N}. Every check gets fresh globals with
restricted builtins, its own parsed copy of the initial state (global `initial_state`) and of the final
state or, for a transcript check (`"kind": "transcript"`), of the transcript (the argument), so a check
that mutates either cannot affect the next one. Evidence is what the `transcript_checks` helpers recorded
during the check. Standard library only.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import marshal
import math
import os
import resource
import signal
import sys
import time
from typing import Any, BinaryIO, ClassVar

from envscaler_mcp.scoring import transcript_checks
from envscaler_mcp.scoring._restrict import (
    ImportNotAllowed,
    SandboxViolation,
    build_module_views,
    make_builtins,
    static_problem,
)

MAX_REASON = 300


class _CheckTimeout(BaseException):
    """Raised by SIGALRM when a check overruns its time; BaseException so `except Exception` misses it."""


class _Sink(io.TextIOBase):
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


class States:
    """The two states of one request, parsed once; each `fresh` call returns a new, independent copy.

    Copies come from `marshal` (about twice as fast as re-parsing JSON, and exact for JSON values). The last
    three parsed texts are remembered across requests: the gate and the mutation test send the same initial
    state again and again.
    """

    _recent: ClassVar[dict[str, bytes]] = {}  # text -> marshal blob, at most three entries

    def __init__(self, initial_text: str, final_text: str, transcript_text: str = "null") -> None:
        self._texts = {"initial": initial_text, "final": final_text, "transcript": transcript_text}
        self._blobs: dict[str, bytes] = {}

    def fresh(self, which: str) -> Any:
        blob = self._blobs.get(which)
        if blob is None:
            text = self._texts[which]
            blob = self._recent.get(text)
            if blob is None:
                blob = marshal.dumps(json.loads(text))
                if len(self._recent) >= 3:
                    self._recent.pop(next(iter(self._recent)))
                self._recent[text] = blob
            self._blobs[which] = blob
        return marshal.loads(blob)


class Runner:
    """Runs check functions one at a time with fresh globals and a per-check alarm."""

    def __init__(self) -> None:
        self.views = build_module_views()
        self.builtins = make_builtins(self.views)
        self._fired = False
        signal.signal(signal.SIGALRM, self._on_alarm)

    def _on_alarm(self, _signum: int, _frame: object) -> None:
        self._fired = True
        raise _CheckTimeout

    def run_check(self, source: str, states: States, timeout_s: float, kind: str = "state") -> dict[str, Any]:
        """Run one validator; return {"passed", "reason", "duration_s", "evidence"}."""
        start = time.perf_counter()
        transcript_checks._begin()
        passed, reason = self._run(source, states, timeout_s, kind)
        evidence = [_short(str(e)) for e in transcript_checks._take()]
        return {"passed": passed, "reason": reason, "duration_s": round(time.perf_counter() - start, 6),
                "evidence": evidence}

    def _run(self, source: str, states: States, timeout_s: float, kind: str) -> tuple[bool, str | None]:
        try:
            tree = ast.parse(source, "<validator>")
            problem = static_problem(tree)
            if problem:
                return False, problem
            code = compile(tree, "<validator>", "exec")
        except SyntaxError as exc:
            return False, _short(f"syntax error: {exc.msg} (line {exc.lineno})")
        except (ValueError, RecursionError, MemoryError) as exc:
            return False, _short(f"cannot compile: {type(exc).__name__}: {exc}")
        try:
            env: dict[str, Any] = {"__builtins__": self.builtins, "__name__": "validator"}
            # Only a validator that names `initial_state` can reach it (eval/globals are refused): skip the parse.
            if any(isinstance(node, ast.Name) and node.id == "initial_state" for node in ast.walk(tree)):
                env["initial_state"] = states.fresh("initial")
            argument = states.fresh("transcript" if kind == "transcript" else "final")
        except (MemoryError, ValueError) as exc:
            return False, "memory limit exceeded" if isinstance(exc, MemoryError) else f"bad state JSON: {exc}"
        self._fired = False
        result: Any = None
        _cap_cpu(timeout_s)
        try:
            signal.setitimer(signal.ITIMER_REAL, timeout_s)
            try:
                exec(code, env)
                func = env.get("check_func")
                if not callable(func):
                    name = "transcript" if kind == "transcript" else "final_state"
                    return False, f"the validator does not define check_func({name})"
                result = func(argument)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
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


def _cap_cpu(timeout_s: float) -> None:
    """Kernel backstop: the worker dies (SIGXCPU) if this check burns the CPU well past its time, even when
    the alarm is ignored by C code and the parent is gone."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = math.ceil(usage.ru_utime + usage.ru_stime + timeout_s) + 2
    resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.RLIM_INFINITY))


def _apply_limits(memory_mb: int) -> None:
    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))  # no file may grow: writes fail with EFBIG
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Every descriptor the worker will ever need is open now; refuse new ones (files, sockets, pipes).
    highest = max(_open_fds(), default=2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (highest + 1, highest + 1))


def _open_fds() -> list[int]:
    try:
        return [int(fd) for fd in os.listdir("/proc/self/fd")]
    except OSError:
        return [0, 1, 2]


def _protocol_streams() -> tuple[BinaryIO, BinaryIO]:
    """Keep private copies of stdin/stdout for the protocol; point fds 1 and 2 at /dev/null."""
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    sys.stdout = _Sink()
    sys.stderr = _Sink()
    return sys.stdin.buffer, out


def _send(out: BinaryIO, message: dict[str, Any]) -> None:
    out.write(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")


def main(argv: list[str] | None = None) -> int:
    """Set up limits, then answer requests until stdin closes."""
    parser = argparse.ArgumentParser(prog="envscaler_mcp.scoring.worker")
    parser.add_argument("--memory-mb", type=int, default=512)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when a worker stops
    for name in ("socket", "_socket", "ssl", "_ssl"):
        sys.modules[name] = None  # type: ignore[assignment]
    runner = Runner()
    stdin, out = _protocol_streams()
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    _apply_limits(args.memory_mb)
    _send(out, {"ready": True, "pid": os.getpid()})
    for raw in stdin:
        if not raw.strip():
            continue
        request = json.loads(raw)
        states = States(request["initial"], request["final"], request.get("transcript") or "null")
        timeout_s = float(request["timeout_s"])
        for check in request["checks"]:
            answer = runner.run_check(check["source"], states, timeout_s, check.get("kind", "state"))
            answer["i"] = check["i"]
            _send(out, answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())

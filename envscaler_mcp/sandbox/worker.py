"""The validator worker: `python -m envscaler_mcp.sandbox.worker --memory-mb N --root DIR [--no-isolation]`.

Processes (isolation/confine_validators.py applies the OS layers):

    worker  -- imports everything validators may use, enters new namespaces, forks:
      zygote  -- PID 1 of the new PID namespace; empty root, nobody, Landlock, seccomp; reads requests,
        batch -- one fork per request (a scenario's checks for one episode), one per trial when trials that
                 waited together come in one request: stacks a seccomp filter with no fork/signals,
                 runs the checks and writes one answer line each to a pipe the zygote reads.

The zygote relays each answer to the caller after checking it (so a batch process cannot speak for another
batch), watches the batch (a check that burns the CPU past its time is killed and reported as timed out; a
batch process that stops or dies from outside is a fault), and ends every process of the batch before the
next request. Protocol on stdin/stdout, one JSON object per line:

    request:  {"sizes": [I, F] or [I, F, T], "timeout_s": 2.0, "grace_s": 1.0,
               "checks": [{"i": 0, "source": "def check_func(final_state): ...", "kind": "state"}, ...]}
              followed by I bytes of initial-state JSON, F bytes of final-state JSON and, when transcript
              checks are sent (kind "transcript": given the transcript instead of the final state), T bytes
              of transcript JSON. Trials of one scenario may come in one request: "episodes": n, sizes
              [I, F1, (T1,) F2, (T2,) ...], and each check names its episode ("e": 0 .. n-1); with
              "together": true (the QA gate's probe states of one scenario) the episodes share one batch
              process while none changes the interpreter (sandbox/relay.py)
    answers:  {"i": 0, "passed": true, "reason": null, "duration_s": 0.0001, "evidence": [...]}
              (one per check, in order; evidence: what the transcript_checks helpers recorded)
              {"fault": "why"}       the batch could not be completed through no fault of its validators
    first line: {"ready": true, "pid": <zygote pid as the caller sees it>, "isolation": {layer: [on, detail]}}

Standard library only (plus pyseccomp when available).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import sys
from typing import Any, BinaryIO, NoReturn

from envscaler_mcp.isolation import confine_validators as confine
from envscaler_mcp.isolation import namespaces
from envscaler_mcp.sandbox.relay import Zygote
from envscaler_mcp.sandbox.runner import Runner, Sink

_PIPE_BYTES = 1 << 20  # the request pipe's buffer (_widen_request_pipe)

# Loaded lazily by modules validators may use (and the helpers they import as `transcript_checks`); imported
# now, while files can still be read.
_PRELOAD = ("_strptime", "encodings.idna", "encodings.ascii", "encodings.latin_1", "unicodedata", "select",
            "envscaler_mcp.transcript.checks")


def _preload() -> None:
    for name in _PRELOAD:
        try:
            __import__(name)
        except ImportError:
            pass
    import datetime

    # datetime's C code imports _strptime on first use through the caller's __import__ (a validator's is
    # restricted) and keeps it: make that first use happen here.
    datetime.datetime.strptime("2000", "%Y")


def _apply_limits(memory_mb: int) -> None:
    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))  # no file may grow: writes fail with EFBIG
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # The zygote needs four more descriptors per batch (two pipes); nothing else may be opened.
    highest = max(_open_fds(), default=2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (highest + 5, highest + 5))


def _open_fds() -> list[int]:
    try:
        return [int(fd) for fd in os.listdir("/proc/self/fd")]
    except OSError:
        return [0, 1, 2]


def _widen_request_pipe() -> None:
    """Let the request pipe hold a whole request of the usual size: the caller then writes the states in one go
    and the zygote reads them in one, instead of a write, a wake-up and a read per 64 KiB (the default). Up to
    the system's pipe-max-size (1 MiB unless changed); where the kernel refuses, the default stays."""
    import fcntl

    try:
        fcntl.fcntl(0, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    except (OSError, AttributeError):
        pass


def _protocol_streams() -> tuple[BinaryIO, BinaryIO, int]:
    """Private copies of stdin/stdout for the protocol; fds 1 and 2 point at /dev/null (kept open)."""
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    os.dup2(null, 2)
    sys.stdout = Sink()
    sys.stderr = Sink()
    return sys.stdin.buffer, out, null


def _wait_for(child: int) -> int:
    """The outer worker process: stay out of the protocol and exit as the zygote did."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(null, fd)
    while True:
        try:
            _, status = os.waitpid(child, 0)
        except ChildProcessError:
            return 1
        if os.WIFEXITED(status):
            return os.WEXITSTATUS(status)
        if os.WIFSIGNALED(status):
            return 128 + os.WTERMSIG(status)


def _fork_zygote() -> int | None:
    """Fork PID 1 of the new PID namespace. Returns the zygote's pid as the caller sees it (in the zygote),
    or None in the outer process, which then only waits."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child:
        os.close(read_end)
        os.write(write_end, str(child).encode())
        os.close(write_end)
        raise SystemExit(_wait_for(child))
    os.close(write_end)
    outer_pid = int(os.read(read_end, 32) or b"0")
    os.close(read_end)
    if not namespaces.die_with_parent():
        os._exit(1)
    return outer_pid


def main(argv: list[str] | None = None) -> NoReturn:
    """Set up the layers, then serve requests until stdin closes."""
    parser = argparse.ArgumentParser(prog="envscaler_mcp.sandbox.worker")
    parser.add_argument("--memory-mb", type=int, default=512)
    parser.add_argument("--root", default="", help="an empty directory to chroot into")
    parser.add_argument("--no-isolation", action="store_true", help="Python layer and limits only")
    parser.add_argument("--test-seam", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    seam = json.loads(args.test_seam)  # tests only: {"grant_os": bool, "skip": [layer groups]}
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when a worker stops
    for name in ("socket", "_socket", "ssl", "_ssl"):
        sys.modules[name] = None  # type: ignore[assignment]
    _widen_request_pipe()
    runner = Runner()
    if seam.get("grant_os"):  # tests only: hand validators the real modules, as a successful escape would
        import ctypes

        runner.grant(os=os, sys=sys, ctypes=ctypes, resource=resource)
    _preload()
    layers = confine.Layers(enabled=not args.no_isolation, skip=frozenset(seam.get("skip", ())))
    filters = confine.compile_filters() if layers.enabled else ""
    pid = os.getpid()
    forked = confine.enter_namespaces(layers)
    if forked:
        pid = _fork_zygote() or pid
    stdin, out, null = _protocol_streams()
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    _apply_limits(args.memory_mb)
    batch_filter = confine.confine_zygote(layers, args.root or "/nonexistent", filters)
    if forked and not namespaces.die_with_parent():  # again: changing identity cleared it
        os._exit(1)
    message: dict[str, Any] = {"ready": True, "pid": pid, "isolation": layers.table}
    out.write(json.dumps(message).encode() + b"\n")
    Zygote(runner, batch_filter, out, null).serve(stdin)
    os._exit(0)  # no interpreter shutdown under the restrictions (nothing is left to flush)


if __name__ == "__main__":
    sys.exit(main())

"""What an episode zygote costs to start: spawned as an interpreter of its own (as servers start it), against forked
from a lean template process that has already imported what the zygote imports.

    .venv/bin/python benchmarks/zygote_start_bench.py SERVER_DIR [--starts 15] [--rounds 3]

SERVER_DIR is a rendered server folder (one of the render cache's `servers/*`, whose code cache is current).
Each start: the zygote is started, given its settings and asked for one episode; once the episode's process
answered, the channel is closed and the zygote ends. Spawned: `python -s -P -m
envscaler_mcp.isolation.episode_zygote`, its CPU from the children's rusage. Forked: a template (started once,
not counted) forks a child that runs the zygote's `main` in the same way; the child's CPU from `wait4`, and the
fork's in the template apart. Neither confines itself here (no `--filter`, no Landlock folders): the
difference is the interpreter's start and imports. A real template would also have to join its server's
namespaces, user and limits, which this does not measure. Prints the medians of each round, alternately.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path


def _episode(ours: socket.socket, send: Callable[[socket.socket, bytes], None]) -> None:
    """Settings, one episode asked for and answered, then the channel closed (`send`: the server's framing)."""
    send(ours, json.dumps({"state_dir": None, "call_timeout": None}).encode())
    send(ours, b"{}")
    message, fds, _, _ = socket.recv_fds(ours, 1 << 16, 4)
    for fd in fds:
        os.close(fd)
    ours.close()
    if b'"pid"' not in message:
        raise SystemExit(f"error: the zygote refused the episode: {message[:200]!r}")


def _package(server: Path) -> str:
    return str(json.loads((server / "manifest.json").read_text(encoding="utf-8"))["package"])


def spawned(server: Path, package: str, send: Callable[[socket.socket, bytes], None]) -> float:
    ours, theirs = socket.socketpair()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    child = subprocess.Popen([sys.executable, "-s", "-P", "-m", "envscaler_mcp.isolation.episode_zygote", "--parent",
                              str(os.getpid()), "--channel-fd", str(theirs.fileno()), "--package", package,
                              "--path", str(server)], pass_fds=[theirs.fileno()], env={"PATH": os.environ["PATH"]})
    theirs.close()
    _episode(ours, send)
    child.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return 1000 * (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)


def template(control_fd: int) -> None:
    """The template's loop: import what the zygote imports, then fork one zygote per request."""
    import gc

    from envscaler_mcp.isolation import episode_zygote, zygote_template

    for name in zygote_template.PRELOAD:
        __import__(name)
    gc.freeze()
    control = socket.socket(fileno=control_fd)
    while True:
        message, fds, _, _ = socket.recv_fds(control, 1 << 16, 1)
        if not message:
            return
        request = json.loads(message)
        before = resource.getrusage(resource.RUSAGE_SELF)
        pid = os.fork()
        if pid == 0:
            control.close()
            try:
                episode_zygote.main(["--parent", str(os.getppid()), "--channel-fd", str(fds[0]), "--package",
                                     request["package"], "--path", request["path"]])
            finally:
                os._exit(0)
        after = resource.getrusage(resource.RUSAGE_SELF)
        os.close(fds[0])
        _, _, usage = os.wait4(pid, 0)
        socket.send_fds(control, [json.dumps({
            "child_ms": 1000 * (usage.ru_utime + usage.ru_stime),
            "fork_ms": 1000 * (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)}).encode()], [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("server", type=Path, nargs="?", help="a rendered server folder")
    parser.add_argument("--starts", type=int, default=15, help="zygotes started each way in a round (default 15)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--template-fd", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.template_fd is not None:
        template(args.template_fd)
        return
    if args.server is None or not (args.server / "manifest.json").is_file():
        parser.error("give a rendered server folder (with its manifest.json)")
    server = args.server.resolve()
    package = _package(server)
    sys.path.insert(0, str(server))  # the server's own framing (its runtime), to speak to its zygote
    send = importlib.import_module(f"{package}.runtime.framing").send
    control, theirs = socket.socketpair()
    proc = subprocess.Popen([sys.executable, "-s", "-P", __file__, "--template-fd", str(theirs.fileno())],
                            pass_fds=[theirs.fileno()], env={"PATH": os.environ["PATH"]})
    theirs.close()
    try:
        for round_ in range(1, args.rounds + 1):
            spawned_ms = [spawned(server, package, send) for _ in range(args.starts)]
            forked_ms, forks_ms = [], []
            for _ in range(args.starts):
                ours, zygote_end = socket.socketpair()
                socket.send_fds(control, [json.dumps({"package": package, "path": str(server)}).encode()],
                                [zygote_end.fileno()])
                zygote_end.close()
                _episode(ours, send)
                message, _, _, _ = socket.recv_fds(control, 1 << 16, 1)
                reply = json.loads(message)
                forked_ms.append(reply["child_ms"])
                forks_ms.append(reply["fork_ms"])
            print(f"round {round_}: spawned {statistics.median(spawned_ms):.1f} ms of CPU; forked from the template "
                  f"{statistics.median(forked_ms):.1f} ms, and {statistics.median(forks_ms):.2f} ms for the fork "
                  f"in the template (medians of {args.starts})", flush=True)
    finally:
        control.close()
        proc.wait()


if __name__ == "__main__":
    main()

"""How a launched server process starts: an allowlisted environment and the OS layers (isolation/confine_server.py).

Environment code is untrusted (LLM-written or imported). A server process gets only the variables below
(never the caller's provider keys), and runs its package under `envscaler_mcp.isolation.confine_server`: no
network namespace route out, read-only access to its package and to Python, no exec, no new processes.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from envscaler_mcp.isolation import confined_command
from envscaler_mcp.isolation.limits import CPU_S, MEMORY_MB, THREADS
from envscaler_mcp.isolation.report import IsolationReport, Layer, from_layers
from envscaler_mcp.launch.target import ServerDir

ADMIN_TOKEN_ENV = "ENVSCALER_ADMIN_TOKEN"
_PKG_PARENT = str(Path(__file__).resolve().parents[2])
# The only variables a server process sees, whatever the caller's environment holds.
_PASSED_THROUGH = ("LANG", "LC_ALL", "TZ")
# glibc's malloc in a server process, and in the zygotes and episode processes it forks: a buffer of 256 kB or
# more in a mapping of its own, unmapped when freed (as _allocator.py does in eval's own process). Left
# to itself glibc raises that threshold to the largest buffer freed, and the heap keeps what later ones leave:
# after relaying a 3 MB final state a server kept 13 MB more resident, its episode zygote 6 MB
# (benchmarks/README.md). Ignored where the C library is not glibc.
MALLOC_TUNABLES = "glibc.malloc.mmap_threshold=262144:glibc.malloc.trim_threshold=1048576"


@dataclass(frozen=True)
class ServerLimits:
    """Hard limits of one server process (isolation/limits.py, where the defaults are explained; 0 leaves one
    unset), and whether each of its episodes runs in a process of its own (`fork_episodes`: the generated
    runtime's forked.py; the OS layers then let the server fork, and only for that). `answer_grace_s`: with
    forked episodes, how long beyond twice the call timeout the server waits for an episode's process before
    it gives up on it and the process ends (the runtime's default, 30 s, unless set)."""

    memory_mb: int = MEMORY_MB
    cpu_s: int = CPU_S
    threads: int = THREADS
    fork_episodes: bool = False
    answer_grace_s: float | None = None

    def args(self) -> list[str]:
        return ["--memory-mb", str(self.memory_mb), "--cpu-s", str(self.cpu_s), "--threads", str(self.threads),
                *(["--forks"] if self.fork_episodes else [])]

    def server_args(self) -> list[str]:
        grace = [] if self.answer_grace_s is None else ["--answer-grace", str(self.answer_grace_s)]
        return ["--episode-process", "fork" if self.fork_episodes else "shared", *grace]


DEFAULT_LIMITS = ServerLimits()


def server_env(server: ServerDir, token: str | None = None) -> dict[str, str]:
    """The whole environment of a server process: an allowlist, plus the admin token when given."""
    env = {"PATH": os.defpath, "PYTHONPATH": _PKG_PARENT,  # the server folder only once confined (--path)
           "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8",
           "GLIBC_TUNABLES": MALLOC_TUNABLES}
    env.update({k: os.environ[k] for k in _PASSED_THROUGH if k in os.environ})
    if token is not None:
        env[ADMIN_TOKEN_ENV] = token
    return env


@dataclass(frozen=True)
class ServerCommand:
    """How a server starts: the arguments of `isolation.confine_server` (a server forked from the server zygote
    runs it with them) and, built from them, the argv of a fresh process."""

    confine_args: tuple[str, ...]

    @property
    def argv(self) -> list[str]:
        """The command line of a fresh server process."""
        return confined_command(self.confine_args)


def server_command(server: ServerDir, report: Path, isolation: bool, server_args: list[str],
                   read: Sequence[Path] = (), limits: ServerLimits = DEFAULT_LIMITS) -> ServerCommand:
    """What starts the server package under the OS layers (or with none, `isolation=False`). The server
    may read its package and the `read` paths (the launcher's state files), nothing else of the user's, and
    runs under `limits` (with or without the layers).

    The server folder is untrusted as a whole: it joins the module search path only once the layers are in
    place (`--path`), and `-P` keeps the working directory (the server folder) off it while Python starts,
    so no file beside the package (sitecustomize.py, a module named like one the launcher imports) runs
    before them."""
    extra = [arg for path in read for arg in ("--read", str(path))]
    return ServerCommand((
        "--read", str(server.path), *extra, "--path", str(server.path), "--report", str(report), *limits.args(),
        *([] if isolation else ["--off"]), "--", "-m", server.package, *server_args, *limits.server_args()))


def serving_pid(pid: int) -> int:
    """The process that serves, given the one the launcher started: with a PID namespace that one only waits
    for its child (isolation/namespaces.py `become_pid_one`), which is the server."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return pid
    return int(children[0]) if len(children) == 1 else pid


def loopback_listener() -> socket.socket:
    """A TCP socket listening on 127.0.0.1 (any free port), created here and handed to the server: the
    server needs no network access of its own to serve it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1024)
    except OSError:
        sock.close()
        raise
    return sock


def episode_layer(fork: bool, transport: str) -> Layer:
    """The isolation record's line on how a server's episodes are kept apart."""
    if transport == "memory":
        return Layer(name="episode-process", active=False, detail=(
            "memory transport: every episode runs in the calling process, with nothing between them or the "
            "harness (hand-authored environments and tests only)"))
    if fork:
        return Layer(name="episode-process", active=True, detail=(
            "a process per episode, forked from a zygote that never runs environment code: an episode's code "
            "cannot reach another episode's state or the admin token"))
    return Layer(name="episode-process", active=False, detail=(
        "shared: every episode of a server in one process (chosen for trusted, hand-authored code); environment "
        "code could reach the other episodes of its server"))


def read_report(path: Path, limits: ServerLimits = DEFAULT_LIMITS) -> IsolationReport | None:
    """The layers a server process reported (None if it has not written the report yet), with how its episodes
    are kept apart."""
    try:
        table = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    report = from_layers("servers", table)
    report.layers.append(episode_layer(limits.fork_episodes, "process"))
    report.warn_once()
    return report


def in_process_report() -> IsolationReport:
    """What the memory transport offers: none of the layers (the environment code runs in this process)."""
    why = "the memory transport runs environment code inside the calling process (tests and trusted code only)"
    report = IsolationReport(subject="servers", layers=[
        *(Layer(name=name, active=False, detail=why)
          for name in ("clean-environment", "network-namespace", "landlock-fs", "landlock-net", "seccomp")),
        episode_layer(False, "memory")])
    report.warn_once()
    return report

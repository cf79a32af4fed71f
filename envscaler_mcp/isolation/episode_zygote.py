"""The episode zygote of a confined server that forks its episodes, started as an interpreter of its own.

    python -s -P -m envscaler_mcp.isolation.episode_zygote --parent PID --channel-fd FD --package PACKAGE
           [--read DIR ...] [--path DIR ...] [--filter B64] [--episode-filter B64]

Why: a server that forks one process per episode (`--forks`) forks them from a zygote, and each fork copies
the zygote's page tables and then its pages as either side writes them. A zygote forked from the server holds
everything the server imported (mcp, pydantic, starlette, uvicorn: about 50 MB), so each episode's fork costs
the kernel several milliseconds more than one of a bare interpreter (benchmarks/README.md). `confine_server`
therefore starts the zygote with `spawn`, once the namespaces and limits are in place and before the
server's own Landlock and seccomp layers (which forbid exec), and hands the server its end of the channel
(a server forked from the server zygote gets its zygote forked by the zygote template instead, which runs
`main` here with `--parent -1`: zygote_template.py).

The process then confines itself as its server is confined, before it imports anything of the server folder:
it dies with the server (its parent-death signal, and it ends at once when its parent is already another
process), makes itself non-dumpable, restricts itself with Landlock to reading the same folders and loads the
server's own seccomp filter (no exec, no new sockets, signals to the server only). The namespaces, the user
and the limits it inherits. Only then does it put `--path` on the search path and serve the generated
runtime's zygote (`PACKAGE.runtime.zygote.serve_spawned`), which reads its settings from the server and
forks each episode's process (that loads `--episode-filter`, as before). The server folder goes after
Python's own library on its search path, and the package is taken from that folder. Its environment is an
allowlist without the admin token. Standard library only.
"""

from __future__ import annotations

import base64
import ctypes
import importlib
import importlib.machinery
import importlib.util
import os
import signal
import socket
import sys

from envscaler_mcp.isolation import landlock, namespaces
from envscaler_mcp.isolation.seccomp import CompiledFilter

TYPE_CHECKING = False  # `typing` stays out of the start of the processes that import this
if TYPE_CHECKING:
    from typing import Any

PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4
# The variables the zygote sees (the server's allowlist, launch/server_process.py, without the admin token).
PASSED = ("PATH", "PYTHONPATH", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "LANG", "LC_ALL", "TZ",
          "GLIBC_TUNABLES")
_STARTED: list[Any] = []  # the Popen objects of the zygotes started here


def spawn(package: str, read: list[str], paths: list[str], zygote_bpf: bytes | None,
          episode_bpf: bytes | None) -> tuple[int, int]:
    """Start the zygote of this server (the calling process); (this side's end of its channel, its pid).
    Raises OSError when it cannot be started."""
    import subprocess  # here only: the zygote itself does not need it

    ours, theirs = socket.socketpair()
    # with `site`, as the server: environment code may import what the server's requirements installed
    argv = [sys.executable, "-s", "-P", "-m", "envscaler_mcp.isolation.episode_zygote", "--parent",
            str(os.getpid()), "--channel-fd", str(theirs.fileno()), "--package", package,
            *(a for d in read for a in ("--read", d)), *(a for d in paths for a in ("--path", d)),
            *(["--filter", base64.b64encode(zygote_bpf).decode()] if zygote_bpf else []),
            *(["--episode-filter", base64.b64encode(episode_bpf).decode()] if episode_bpf else [])]
    env = {k: os.environ[k] for k in PASSED if k in os.environ}
    try:
        child = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=2, pass_fds=[theirs.fileno()],
                                 close_fds=True)
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    _STARTED.append(child)  # never waited for: it ends with the server
    return ours.detach(), child.pid


class _Options:
    """The command line (no argparse: this process starts once per server, and its imports are its cost)."""

    def __init__(self, argv: list[str]) -> None:
        self.parent, self.channel_fd, self.package = -2, -1, ""  # --parent -1: tied by a PID namespace
        self.read: list[str] = []
        self.path: list[str] = []
        self.filter: str | None = None
        self.episode_filter: str | None = None
        pairs = iter(argv)
        for flag in pairs:
            value = next(pairs, None)
            if value is None:
                raise SystemExit(f"error: {flag} needs a value")
            if flag in ("--read", "--path"):
                getattr(self, flag[2:]).append(value)
            elif flag in ("--parent", "--channel-fd"):
                setattr(self, flag[2:].replace("-", "_"), int(value))
            elif flag in ("--package", "--filter", "--episode-filter"):
                setattr(self, flag[2:].replace("-", "_"), value)
            else:
                raise SystemExit(f"error: unknown option {flag}")
        if self.parent < -1 or self.channel_fd < 0 or not self.package:
            raise SystemExit("usage: python -s -P -m envscaler_mcp.isolation.episode_zygote --parent PID "
                             "--channel-fd FD --package PACKAGE [--read DIR ...] [--path DIR ...] [--filter B64] "
                             "[--episode-filter B64]")


def _confine(options: _Options) -> bool:
    """The server's layers on this process; False when its server is already gone. `--parent -1`: a zygote
    forked into its server's PID namespace (zygote_template.py), which the kernel ends with the server."""
    libc = ctypes.CDLL(None, use_errno=True)
    if options.parent != -1:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != options.parent:
            return False
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    namespaces.keep_reading_across_exec(False)  # nothing it forks keeps a capability past an exec
    if options.read:
        try:
            landlock.restrict(read=options.read)
        except OSError:  # refused for the server too (its report says so)
            pass
    if options.filter:
        try:
            landlock.set_no_new_privs()
            CompiledFilter(base64.b64decode(options.filter)).install()
        except OSError:
            pass
    return True


def main(argv: list[str] | None = None) -> None:
    options = _Options(sys.argv[1:] if argv is None else argv)
    if not _confine(options):
        return
    folders = [os.path.realpath(p) for p in options.path]
    # The package from its folder, and the folder after Python's own library on the search path: a file
    # beside the package named like a standard module (json.py) shadows none that the runtime imports here
    # (the server, which imported them before its --path went first, is in the same position).
    spec = importlib.machinery.PathFinder.find_spec(options.package, folders)
    if spec is None or spec.loader is None:
        raise SystemExit(f"error: no package {options.package} in {', '.join(folders) or '(no folder)'}")
    package = importlib.util.module_from_spec(spec)
    sys.modules[options.package] = package
    spec.loader.exec_module(package)
    sys.path.extend(folders)
    runtime = importlib.import_module(f"{options.package}.runtime.zygote")
    episode_filter = base64.b64decode(options.episode_filter) if options.episode_filter else None
    runtime.serve_spawned(options.channel_fd, options.package, episode_filter)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # the server answers Ctrl-C; the zygote ends with it
        sys.exit(130)

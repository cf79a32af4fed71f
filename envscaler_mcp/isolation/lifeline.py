"""A command tied to this process's life: it ends when this process ends, however it ends (SIGKILL included).

    process = spawn_tied(["llama-server", ...], stdout=log_fd)   # a subprocess.Popen, used as usual

`spawn_tied` starts a small keeper, `python -m envscaler_mcp.isolation.lifeline --parent PID -- COMMAND...`,
with a pipe on its stdin whose write end this process holds. The keeper starts the command under
PR_SET_PDEATHSIG (the keeper is single-threaded, so the signal follows the keeper's life) and waits for
whichever comes first:

* the command exits -> the keeper exits with its code (128 + n for a signal n), so `poll()` and `returncode`
  of the returned Popen say what the command did;
* this process ends, even by SIGKILL -> the command gets SIGTERM, SIGKILL after `GRACE_S`, then the keeper
  exits. The keeper learns it from a pidfd of this process (or, without pidfds, by seeing itself adopted by
  another parent, checked every second), and from EOF on the pipe. The pipe alone is not enough: a child
  this process forks without exec inherits the pipe's write end and would keep it open.

SIGTERM, SIGINT and SIGHUP sent to the keeper are passed on to the command; a keeper killed outright takes
the command with it (the parent-death signal). Why not PR_SET_PDEATHSIG on the command itself: it fires when
the *thread* that started the process ends, and the local model server is started from worker threads,
which come and go. Standard library only (like the rest of this package but `report`).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
from typing import Any

GRACE_S = 10.0


def spawn_tied(command: list[str], **popen_kwargs: Any) -> subprocess.Popen[bytes]:
    """Start `command` under a keeper tied to this process (see the module docstring). `popen_kwargs` go to
    the keeper's Popen (stdout, stderr, env, cwd ...) and so to the command; stdin is the lifeline."""
    if "stdin" in popen_kwargs:
        raise ValueError("spawn_tied owns the command's stdin (the lifeline); the command gets /dev/null")
    return subprocess.Popen([sys.executable, "-s", "-m", "envscaler_mcp.isolation.lifeline", "--parent",
                             str(os.getpid()), "--", *command], stdin=subprocess.PIPE, **popen_kwargs)


def _exit_code(code: int) -> int:
    return code if code >= 0 else 128 - code


def _pidfds(*pids: int) -> list[int]:
    """A pidfd per pid (readable once the process has ended), or [] where the kernel has none."""
    try:
        return [os.pidfd_open(pid) for pid in pids]
    except (AttributeError, OSError):
        return []


def _keep(command: list[str], parent: int) -> int:
    from envscaler_mcp.isolation.namespaces import die_with_parent  # imported before the fork

    if os.getppid() != parent:  # the parent ended before the keeper started: nothing to start
        return 1

    def die_with_keeper() -> None:
        if not die_with_parent():  # the keeper is already gone
            os._exit(1)

    # The keeper has one thread, so preexec_fn is safe here.
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL, preexec_fn=die_with_keeper)

    def forward(signum: int, _frame: object) -> None:
        try:
            child.send_signal(signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    lifeline = sys.stdin.fileno()
    watched = _pidfds(child.pid, parent)  # [] (old kernel): look at both once a second
    while child.poll() is None:
        ready, _, _ = select.select([lifeline, *watched], [], [], None if watched else 1.0)
        eof = lifeline in ready and not os.read(lifeline, 4096)
        parent_gone = watched[1] in ready if watched else os.getppid() != parent
        if eof or parent_gone:
            child.terminate()
            try:
                child.wait(GRACE_S)
            except subprocess.TimeoutExpired:
                child.kill()
            break
    return _exit_code(child.wait())


def main(argv: list[str]) -> int:
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    options = argv[:argv.index("--")] if "--" in argv else argv
    if not command or len(options) != 2 or options[0] != "--parent" or not options[1].isdigit():
        print("usage: python -m envscaler_mcp.isolation.lifeline --parent PID -- COMMAND [ARG ...]", file=sys.stderr)
        return 2
    try:
        return _keep(command, int(options[1]))
    except OSError as exc:
        print(f"lifeline: cannot start {command[0]}: {exc}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

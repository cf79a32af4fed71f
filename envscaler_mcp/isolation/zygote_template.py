"""One lean interpreter per server zygote that forks each confined server's episode zygote into that server's
namespaces, instead of a fresh interpreter per server (isolation/episode_zygote.py `spawn`).

    python -s -P -m envscaler_mcp.isolation.zygote_template --channel-fd FD

Why: an episode zygote is a fresh interpreter, and its start (the interpreter, `json`, `socket`, ...) costs
about 35 ms of CPU once per server; forked from a process that has already imported those modules it costs
about 13 ms (benchmarks/zygote_start_bench.py). The template imports the standard library and this package's
isolation modules only, never anything of a server folder, and runs no environment code.

How a server gets its zygote (`ask`, in confine_server.py, once the server's namespaces, user and limits are
in place and before its Landlock and seccomp layers and before anything of its folder is imported): it sends
the template, over the channel the server zygote handed it, its own pidfd, its end of the zygote's channel, a
socket for the answer and its standard error, with its package, folders, seccomp filters and working
folder. The template forks a child that:

* takes the server's resource limits from the request (the server's own code sent them, before anything of
  its folder ran), and its user id and group from the kernel (`SO_PEERCRED` of the zygote's channel, which
  the server created after it changed user);
* joins the server's network, IPC, mount and PID namespaces (and its user namespace for a normal user)
  through the pidfd (`setns`), then forks once more, so that the zygote is a process of the server's own
  PID namespace: the kernel kills it, and every episode it forked, when the server (PID 1 there) ends. The
  first child ends at once; the template reaps the zygote (a subreaper);
* becomes the server's user (root: the server's uid of its own, keeping only the capability to read files;
  a normal user: every capability of the user namespace dropped), sets the server's limits, works in the
  server's folder (its variables are the template's: the server's allowlist), writes to the server's
  standard error, answers with its pid as the server sees it, closes every descriptor but its channel, then confines
  itself as a spawned zygote does (episode_zygote.py: non-dumpable, Landlock, the server's seccomp filter)
  before it imports anything of the server folder.

Where the template is missing (a server started fresh, not by the server zygote), the server has no PID
namespace, or any step fails, the server spawns its zygote as before. The template ends with the server
zygote (its parent-death signal, and its channel closing). Standard library only.
"""

from __future__ import annotations

import base64
import ctypes
import gc
import json
import os
import resource
import signal
import socket
import struct
import sys

from envscaler_mcp.isolation import episode_zygote, namespaces

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
_JOINED = namespaces.CLONE_NEWNET | namespaces.CLONE_NEWIPC | namespaces.CLONE_NEWNS | namespaces.CLONE_NEWPID
# What the zygote's runtime imports from the standard library, imported once here (episode_zygote.py and
# templates/server/runtime/zygote.py).
PRELOAD = ("json", "threading", "queue", "select", "ctypes", "importlib.util", "resource", "array", "struct",
           "copy", "contextlib", "marshal", "re", "collections", "base64")
_LIMITS = tuple(getattr(resource, name) for name in dir(resource) if name.startswith("RLIMIT_"))
ANSWER_WITHIN_S = 10.0
_libc = ctypes.CDLL(None, use_errno=True)


def start() -> int | None:
    """Start the template (the calling process is the server zygote); this side's end of its channel, or None
    when it cannot start."""
    import subprocess

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    # the server's allowlist without the admin token: what every zygote it forks keeps
    env = {k: os.environ[k] for k in episode_zygote.PASSED if k in os.environ}
    try:
        subprocess.Popen([sys.executable, "-s", "-P", "-m", "envscaler_mcp.isolation.zygote_template",
                          "--channel-fd", str(theirs.fileno())], env=env, stdin=subprocess.DEVNULL,
                         pass_fds=[theirs.fileno()], close_fds=True)
    except OSError:
        ours.close()
        return None
    finally:
        theirs.close()
    return ours.detach()


def ask(template_fd: int, package: str, read: list[str], paths: list[str], zygote_bpf: bytes | None,
        episode_bpf: bytes | None) -> tuple[int, int]:
    """In a confined server with a PID namespace: its episode zygote, forked by the template into its namespaces;
    (this side's end of the zygote's channel, the zygote's pid in the server's PID namespace). Raises OSError."""
    ours, theirs = socket.socketpair()
    answer, answer_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)  # one answer, whole
    pidfd = os.pidfd_open(os.getpid())
    request = {"package": package, "read": read, "path": paths, "cwd": os.getcwd(),
               "limits": [[which, *resource.getrlimit(which)] for which in _LIMITS],
               "filter": base64.b64encode(zygote_bpf).decode() if zygote_bpf else None,
               "episode_filter": base64.b64encode(episode_bpf).decode() if episode_bpf else None}
    try:
        with socket.socket(fileno=os.dup(template_fd)) as template:
            template.settimeout(ANSWER_WITHIN_S)  # a stopped template whose channel is full: no wait for ever
            socket.send_fds(template, [json.dumps(request).encode()],
                            [theirs.fileno(), pidfd, answer_theirs.fileno(), 2])
        theirs.close()
        answer_theirs.close()
        answer.settimeout(ANSWER_WITHIN_S)
        reply = json.loads(answer.recv(4096) or b'{"error": "the template ended before the zygote answered"}')
    except BaseException:
        ours.close()
        raise
    finally:
        for sock in (theirs, answer_theirs, answer):
            sock.close()
        os.close(pidfd)
    if "pid" not in reply:
        ours.close()
        raise OSError(f"the zygote template refused: {reply.get('error', reply)}")
    return ours.detach(), int(reply["pid"])


def serve(channel_fd: int) -> None:
    """The template's loop: one forked zygote per request, until the server zygote closes the channel."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # the zygotes, whose first parent ends at once
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # and the kernel reaps them
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the harness answers Ctrl-C; this ends with its channel
    for name in PRELOAD:
        __import__(name)
    gc.collect()
    gc.freeze()
    channel = socket.socket(fileno=channel_fd)
    while True:
        try:
            message, fds, _flags, _addr = socket.recv_fds(channel, 1 << 20, 4)
        except OSError:
            return
        if not message:
            return
        if len(fds) == 4:
            try:
                child = os.fork()
            except OSError:
                child = -1
            if child == 0:
                channel.close()
                _first_child(message, fds)
        for fd in fds:
            os.close(fd)


def _first_child(message: bytes, fds: list[int]) -> None:
    """Join the server's namespaces and fork the zygote there; never returns."""
    zygote, pidfd, answer, stderr = fds
    try:
        request = json.loads(message)
        _pid, uid, gid = struct.unpack("3i", socket.socket(fileno=os.dup(zygote)).getsockopt(
            socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        limits = {int(which): (int(soft), int(hard)) for which, soft, hard in request["limits"]}
        flags = _JOINED | (namespaces.CLONE_NEWUSER if os.geteuid() != 0 else 0)
        if _libc.setns(pidfd, flags) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns: {os.strerror(err)}")
        if os.fork() == 0:
            _zygote(request, zygote, answer, stderr, uid, gid, limits)
    except BaseException as exc:
        _refuse(answer, exc)
    os._exit(0)


def _zygote(request: dict[str, Any], zygote: int, answer: int, stderr: int, uid: int, gid: int,
            limits: dict[int, tuple[int, int]]) -> None:
    """The server's episode zygote, in its PID namespace: its user, limits and folder, then served; never returns."""
    code = 1
    try:
        if os.geteuid() == 0:
            if uid < namespaces.UNIQUE_UID_BASE or gid != uid:
                raise OSError(f"the server runs as uid {uid}, not a uid of its own")
            namespaces.become_unique_user(uid - namespaces.UNIQUE_UID_BASE)
        else:
            namespaces.drop_capabilities()
            if (os.getuid(), os.getgid()) != (uid, gid):
                raise OSError(f"uid {os.getuid()} in the server's user namespace, not its {uid}")
        for which, (soft, hard) in limits.items():
            resource.setrlimit(which, (soft, hard))
        os.chdir(str(request["cwd"]))
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(stderr, 1)
        os.dup2(stderr, 2)
        with socket.socket(fileno=answer) as sock:
            sock.sendall(json.dumps({"pid": os.getpid()}).encode())
        for fd in sorted({null, stderr}):
            os.close(fd)
        os.closerange(3, zygote)
        os.closerange(zygote + 1, 1 << 20)
        argv = ["--parent", "-1", "--channel-fd", str(zygote), "--package", str(request["package"]),
                *(a for d in request["read"] for a in ("--read", str(d))),
                *(a for d in request["path"] for a in ("--path", str(d))),
                *(["--filter", str(request["filter"])] if request["filter"] else []),
                *(["--episode-filter", str(request["episode_filter"])] if request["episode_filter"] else [])]
        episode_zygote.main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:
        _refuse(answer, exc)
    finally:
        os._exit(code)


def _refuse(answer: int, exc: BaseException) -> None:
    try:
        os.write(answer, json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())
    except OSError:
        pass


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "--channel-fd":
        raise SystemExit("usage: python -s -P -m envscaler_mcp.isolation.zygote_template --channel-fd FD")
    serve(int(args[1]))


if __name__ == "__main__":
    main()

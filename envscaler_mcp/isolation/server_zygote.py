"""A process that starts servers by forking itself: one per harness process, started by launch/server_zygote.py.

    python -s -P -m envscaler_mcp.isolation.server_zygote --channel-fd FD [--preload MODULE ...] [--runtime DIR]

A fresh server spends most of its start (about 0.8 s of CPU) importing the libraries its runtime uses (mcp,
pydantic, starlette, uvicorn, anyio); the OS layers themselves cost tens of milliseconds. This process imports
those libraries once (`--preload`: trusted, installed code, never a server folder's), then forks one child per
server asked for on its channel. The child is the server: it takes the descriptors, environment and working
folder it was sent, and runs `confine_server.main` with the argument list a fresh server gets, so the same OS
layers and limits are applied, by the same code, before anything of the server folder is imported.
`--runtime DIR` (the runtime this harness renders) is compiled here once: a server module whose source is
byte for byte one of those files gets that code object instead of being compiled again (compiling runs
nothing; any other source, the environment module included, is compiled in the server as usual).

Why this keeps the trust model: no environment code ever runs here (only in children, after their layers); this
process holds nothing secret (its environment is the server allowlist; the admin token travels to a child in a
pipe only the child reads); a child's limits are set in the child (its CPU time starts at zero after the fork);
and the layers that keep a server from signalling its launcher (PID namespace, Landlock scope, seccomp) keep it
from signalling this process too. This process keeps no descriptor a child could use: each child closes all
but the ones it was sent.

Before it preloads anything, this process starts the zygote template (zygote_template.py), a lean
interpreter that forks each forking server's episode zygote into that server's namespaces; a child that
confines a server with `--forks` gets the template's channel (`--template-fd`), which it closes before its
layers.

The channel (a Unix seqpacket socket) carries one JSON request per message with its descriptors:
{"argv": [...], "env": {...}, "cwd": DIR, "targets": [FD, ...], "token_env": NAME | null}; the descriptors are
placed at `targets` in the child, and with `token_env` one more descriptor is a pipe holding the token. The
answer is {"pid": PID} with a pidfd of the child and the read end of a pipe that receives the child's exit
code when it ends, or {"error": TEXT}. When the channel closes, every child is killed and this process ends.
Standard library only (what it preloads aside).
"""

from __future__ import annotations

import argparse
import atexit
import ctypes
import fcntl
import gc
import hashlib
import importlib
import json
import os
import select
import signal
import socket
import sys
import traceback
from importlib.machinery import SourceFileLoader
from pathlib import Path
from types import CodeType
from typing import Any

from envscaler_mcp.isolation import CONFINE_SERVER, zygote_template

PR_SET_PDEATHSIG = 1
_MAX_FDS = 16


def _compile_runtime(folder: str | None) -> dict[bytes, CodeType]:
    """The modules of the runtime folder given (the harness's own templates), compiled (which runs nothing),
    keyed by the SHA-256 of their source."""
    compiled: dict[bytes, CodeType] = {}
    for path in sorted(Path(folder).glob("*.py")) if folder else ():
        source = path.read_bytes()
        compiled[hashlib.sha256(source).digest()] = compile(source, str(path), "exec", dont_inherit=True)
    return compiled


def _renamed(code: CodeType, path: str) -> CodeType:
    consts = tuple(_renamed(const, path) if isinstance(const, CodeType) else const for const in code.co_consts)
    return code.replace(co_filename=path, co_consts=consts)


def _use_compiled(compiled: dict[bytes, CodeType]) -> None:
    """In a server: a module whose source is byte for byte one of the compiled runtime's gets that code (named
    after its own file) instead of being compiled again; any other source is compiled as usual."""
    if not compiled:
        return
    original = SourceFileLoader.source_to_code

    def source_to_code(self: Any, data: Any, path: Any, *, _optimize: int = -1) -> Any:
        code = compiled.get(hashlib.sha256(data).digest()) if isinstance(data, bytes) else None
        if code is None:
            return original(self, data, path, _optimize=_optimize)
        return _renamed(code, str(path))

    SourceFileLoader.source_to_code = source_to_code  # type: ignore[method-assign]


def _preload(names: list[str]) -> None:
    """Import what the servers' runtime imports; a module that fails to import is left to the servers."""
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # the server's own import will say what is wrong
            continue


class _Zygote:
    def __init__(self, channel: socket.socket, compiled: dict[bytes, CodeType], template: int | None) -> None:
        self.channel = channel
        self.compiled = compiled
        self.template = template  # the zygote template's channel (zygote_template.py), handed to forking servers
        self.children: dict[int, int] = {}  # pid -> write end of its exit-code pipe
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the harness answers Ctrl-C; this ends with its channel

    def serve(self) -> None:
        poller = select.poll()
        poller.register(self.channel.fileno(), select.POLLIN)
        poller.register(self.wake_r, select.POLLIN)
        try:
            while True:
                for fd, _ in poller.poll():
                    if fd == self.wake_r:
                        while True:
                            try:
                                if not os.read(self.wake_r, 512):
                                    break
                            except BlockingIOError:
                                break
                        self._reap()
                    elif not self._request():
                        return
        finally:
            for pid in list(self.children):  # killed, then waited for: their CPU time counts for the harness
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    pass

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            status_w = self.children.pop(pid, None)
            if status_w is not None:
                try:
                    os.write(status_w, str(os.waitstatus_to_exitcode(status)).encode())
                except OSError:
                    pass
                os.close(status_w)

    def _request(self) -> bool:
        """Serve one request; False when the channel is closed."""
        try:
            message, fds, _flags, _addr = socket.recv_fds(self.channel, 1 << 20, _MAX_FDS)
        except OSError:
            return False
        if not message:
            return False
        try:
            request = json.loads(message)
            targets = [int(fd) for fd in request["targets"]]
            wants_token = bool(request.get("token_env"))
            if len(fds) != len(targets) + wants_token:
                raise ValueError("descriptors and targets differ in number")
            token_fd = fds[len(targets)] if wants_token else None
            sources = fds[:len(targets)]
            if self.template is not None:
                request["argv"], target = _with_template(list(request["argv"]), targets)
                if target is not None:
                    sources, targets = [*sources, self.template], [*targets, target]
            status_r, status_w = os.pipe()
        except (ValueError, KeyError, TypeError, OSError) as exc:
            self._close(fds)
            self._answer({"error": f"bad request: {exc}"}, [])
            return True
        sys.stdout.flush()
        sys.stderr.flush()
        zygote = os.getpid()
        try:
            pid = os.fork()
        except OSError as exc:
            self._close([*fds, status_r, status_w])
            self._answer({"error": f"cannot fork: {exc.strerror or exc}"}, [])
            return True
        if pid == 0:
            os.close(status_r)
            _child({**request, "zygote": zygote}, sources, targets, token_fd, self.compiled, keep_closed=[
                self.channel.fileno(), self.wake_r, self.wake_w, status_w, *self.children.values()])
        self._close(fds)
        self.children[pid] = status_w
        try:
            pidfd = os.pidfd_open(pid)
        except OSError as exc:
            os.close(status_r)
            os.kill(pid, signal.SIGKILL)
            self._answer({"error": f"no pidfd for the server ({exc.strerror or exc})"}, [])
            return True
        self._answer({"pid": pid}, [pidfd, status_r])
        self._close([pidfd, status_r])
        return True

    def _answer(self, answer: dict[str, Any], fds: list[int]) -> None:
        try:
            socket.send_fds(self.channel, [json.dumps(answer).encode()], fds)
        except OSError:
            pass  # the harness is gone; the loop sees the channel closed

    @staticmethod
    def _close(fds: list[int]) -> None:
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass


def _with_template(argv: list[str], targets: list[int]) -> tuple[list[str], int | None]:
    """A server's confinement arguments with `--template-fd N` (and N) when it forks its episodes under the OS
    layers; else unchanged (and None)."""
    if "--" not in argv:
        return argv, None
    split = argv.index("--")
    if "--forks" not in argv[:split] or "--off" in argv[:split]:
        return argv, None
    target = max([*targets, 2]) + 1
    return [*argv[:split], "--template-fd", str(target), *argv[split:]], target


def _place(sources: list[int], targets: list[int]) -> None:
    """Put descriptor sources[i] at targets[i] and close every other descriptor (but 0-2 when not targets)."""
    base = max([*sources, *targets, 2]) + 1
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, base) for fd in sources]
    for fd, target in zip(moved, targets, strict=True):
        os.dup2(fd, target, inheritable=True)
    keep = sorted({0, 1, 2, *targets})
    start = 0
    for fd in keep:
        if fd > start:
            os.closerange(start, fd)
        start = fd + 1
    os.closerange(start, 1 << 20)


def _child(request: dict[str, Any], sources: list[int], targets: list[int], token_fd: int | None,
           compiled: dict[bytes, CodeType], keep_closed: list[int]) -> None:
    """The server: its descriptors, environment and folder, then the OS layers and the package, as a fresh
    process would run them (confine_server.main). Never returns."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for fd in keep_closed:
            os.close(fd)
        for name in ("SIGCHLD", "SIGTERM", "SIGHUP"):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # never outlives the zygote
        if os.getppid() != request["zygote"]:  # it died before the request above took effect
            os._exit(1)
        token = b""
        if token_fd is not None:
            with os.fdopen(token_fd, "rb") as pipe:
                token = pipe.read()
        _place(sources, targets)
        os.chdir(str(request["cwd"]))
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in dict(request["env"]).items()})
        if request.get("token_env"):
            os.environ[str(request["token_env"])] = token.decode()
        del token, request["env"]
        _use_compiled(compiled)
        from envscaler_mcp.isolation import confine_server

        argv = [str(arg) for arg in request["argv"]]
        sys.argv = [CONFINE_SERVER, *argv]
        confine_server.main(argv)
        code = 0
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
    except KeyboardInterrupt:
        print("stopped (interrupted)", file=sys.stderr, flush=True)
        code = 130
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="envscaler_mcp.isolation.server_zygote")
    parser.add_argument("--channel-fd", type=int, required=True, help="the harness's channel (a seqpacket socket)")
    parser.add_argument("--preload", action="append", default=[], help="a module to import before any fork")
    parser.add_argument("--runtime", default=None, help="the server runtime's folder (trusted): compiled once")
    options = parser.parse_args(argv)
    channel = socket.socket(fileno=options.channel_fd)
    template = zygote_template.start()  # before the preloads: it starts from a lean interpreter of its own
    _preload([CONFINE_SERVER, "pyseccomp", *options.preload])
    gc.collect()
    gc.freeze()  # the preloaded modules stay shared with every child, never copied by the collector
    zygote = _Zygote(channel, _compile_runtime(options.runtime), template)
    zygote._answer({"ready": os.getpid()}, [])
    zygote.serve()


if __name__ == "__main__":
    main()

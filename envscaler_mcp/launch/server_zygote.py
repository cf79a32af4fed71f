"""Server processes forked from one pre-imported process per harness (isolation/server_zygote.py), or fresh.

    process = await start_server_process(server, command, env, cwd=..., pipes=True, log=errlog)

`command` is what launch/server_process.py `server_command` builds (confine_server's arguments). When this machine and server allow it, the
server is forked from the harness's server zygote, which has imported the libraries of the server runtime once:
starting a server then costs a fork and the OS layers instead of a fresh Python importing them (about 0.8 s of
CPU; benchmarks/server_start_bench.py). The child runs `confine_server.main` with the same arguments, so it gets
the same layers and limits, applied before any file of the server folder is imported.

A fresh process (`anyio.open_process`) is used instead when:
* `ENVSCALER_SERVER_ZYGOTE=off` is set, or the platform lacks what the zygote needs (Linux: fork, pidfds,
  descriptor passing);
* the server's runtime (`<package>/runtime/*.py`) differs from the runtime this harness renders (compared by
  SHA-256): the zygote preloaded what that runtime imports, and a different one is started as it ships;
* the zygote could not be started or has gone (said once on the log, then every server starts fresh).
The pipe, http and stdio transports start their processes here.
"""

from __future__ import annotations

import ast
import atexit
import hashlib
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import IO, Any

import anyio
from anyio.abc import Process

from envscaler_mcp._io import FileStamps, file_stamps
from envscaler_mcp.launch.server_process import ServerCommand, server_env
from envscaler_mcp.launch.target import ServerDir
from envscaler_mcp.launch.zygote_child import ZygoteChild
from envscaler_mcp.render.engine import server_templates

log = logging.getLogger(__name__)
ZYGOTE_ENV = "ENVSCALER_SERVER_ZYGOTE"
_READY_S = 120.0  # a loaded machine may take a minute to import the libraries
# What the runtime's libraries import only once serving (anyio's event-loop backend, uvicorn's protocols):
# preloaded too, or every server would import them after its fork.
_LAZY = ("anyio._backends._asyncio", "anyio._core._resources", "anyio._core._sockets", "anyio._core._streams",
         "anyio.streams.stapled", "anyio.streams.tls", "uvicorn.lifespan.on", "uvicorn.protocols.http.auto",
         "uvicorn.protocols.http.h11_impl", "uvicorn.protocols.http.httptools_impl", "uvicorn.protocols.websockets.auto",
         "uvicorn.protocols.websockets.websockets_sansio_impl")


class ZygoteGone(OSError):
    """The zygote did not answer (it ended, or never started)."""


def runtime_digest(folder: Path) -> str:
    """SHA-256 over the names and bytes of a runtime folder's modules."""
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


_digests: dict[Path, tuple[FileStamps, str]] = {}


def _known_digest(folder: Path) -> str:
    """runtime_digest of `folder`, hashed again only when one of its modules changed: the digest is kept per
    folder with each module's name, inode, size and mtime (nanoseconds), so a rendering that replaces the folder or
    a file rewritten in place is hashed anew, and a server started again from an unchanged folder costs a few
    stat calls instead of reading and hashing its runtime."""
    stamp = file_stamps(sorted(folder.glob("*.py")))
    known = _digests.get(folder)
    if known is not None and known[0] == stamp:
        return known[1]
    digest = runtime_digest(folder)
    _digests[folder] = (stamp, digest)
    return digest


@cache
def _template_runtime() -> tuple[str, tuple[str, ...]]:
    """The digest of the runtime this harness renders and the absolute imports of its modules (what the
    zygote preloads: the standard library and the installed libraries the runtime names, never its own
    package-relative modules)."""
    folder = server_templates() / "runtime"
    names: set[str] = set()
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
    return runtime_digest(folder), (*sorted(names), *_LAZY)


class ServerZygote:
    """The harness's end of a zygote process; `spawn` asks it for one server (blocking: run it in a thread)."""

    def __init__(self, env: dict[str, str]) -> None:
        preload = _template_runtime()[1]
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.channel = ours
        self.lock = threading.Lock()
        self.log = tempfile.TemporaryFile()  # its own errors (a child writes to the log it was sent)
        command = [sys.executable, "-s", "-P", "-m", "envscaler_mcp.isolation.server_zygote",
                   "--channel-fd", str(theirs.fileno()), "--runtime", str(server_templates() / "runtime"),
                   *(arg for name in preload for arg in ("--preload", name))]
        try:
            self.process = subprocess.Popen(command, env=env, cwd="/", stdin=subprocess.DEVNULL, stdout=self.log,
                                            stderr=self.log, pass_fds=[theirs.fileno()])
        finally:
            theirs.close()
        ours.settimeout(_READY_S)
        try:
            answer, _fds = self._receive()
        except (OSError, ValueError) as exc:
            self.close()
            raise ZygoteGone(f"the server zygote did not start ({exc}): {self._log_tail()}") from exc
        finally:
            ours.settimeout(None)
        self.pid = int(answer["ready"])

    def _receive(self) -> tuple[dict[str, Any], list[int]]:
        message, fds, _flags, _addr = socket.recv_fds(self.channel, 1 << 16, 4)
        if not message:
            raise ZygoteGone("the server zygote has ended")
        return dict(json.loads(message)), fds

    def _log_tail(self) -> str:
        self.log.seek(0)
        return self.log.read()[-2000:].decode("utf-8", errors="replace")

    def spawn(self, confine_args: list[str], env: dict[str, str], cwd: str, fds: dict[int, int],
              token_env: str | None) -> tuple[int, int, int]:
        """Fork a server: (pid, pidfd, exit-code pipe). `fds` maps a descriptor number in the server to one of
        ours; the token (env[token_env]) goes in a pipe only the server reads."""
        env = dict(env)
        token = env.pop(token_env, None) if token_env else None
        sources = list(fds.values())
        token_r = -1
        if token is not None:
            token_r, token_w = os.pipe()
            os.write(token_w, token.encode())
            os.close(token_w)
            sources.append(token_r)
        request = json.dumps({"argv": confine_args, "env": env, "cwd": cwd, "targets": list(fds),
                              "token_env": token_env if token is not None else None}).encode()
        try:
            with self.lock:
                socket.send_fds(self.channel, [request], sources)
                answer, received = self._receive()
        except OSError as exc:
            raise ZygoteGone(str(exc)) from exc
        finally:
            if token_r >= 0:
                os.close(token_r)
        if "error" in answer or len(received) != 2:
            for fd in received:
                os.close(fd)
            raise ZygoteGone(f"the server zygote refused: {answer.get('error', answer)}")
        return int(answer["pid"]), received[0], received[1]

    def close(self) -> None:
        """Close the channel: the zygote kills its servers and ends."""
        self.channel.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


class _Shared:
    zygote: ServerZygote | None = None
    failed: str | None = None
    lock = threading.Lock()


def zygote_supported() -> bool:
    """Whether this platform has what the zygote needs and it is not turned off."""
    return (os.environ.get(ZYGOTE_ENV, "on").lower() not in ("off", "0", "no") and sys.platform == "linux"
            and hasattr(os, "pidfd_open") and hasattr(socket, "send_fds") and hasattr(socket, "SOCK_SEQPACKET"))


def shared_zygote(server: ServerDir) -> ServerZygote | None:
    """The harness's zygote (started on first use) when `server` can start from it, else None. Its environment
    is a server's allowlist without any admin token."""
    if not zygote_supported() or _Shared.failed is not None:
        return None
    try:
        same = _known_digest(server.path / server.package / "runtime") == _template_runtime()[0]
    except OSError:
        return None
    if not same:
        return None
    with _Shared.lock:
        if _Shared.zygote is None and _Shared.failed is None:
            try:
                _Shared.zygote = ServerZygote(server_env(server))
                atexit.register(_Shared.zygote.close)
            except OSError as exc:
                _Shared.failed = str(exc)
                log.warning("servers start as fresh processes: %s", exc)
        return _Shared.zygote


def _gone(zygote: ServerZygote, exc: OSError) -> None:
    with _Shared.lock:
        if _Shared.zygote is zygote:
            _Shared.zygote, _Shared.failed = None, str(exc)
            log.warning("servers start as fresh processes from now on: %s", exc)


async def start_server_process(server: ServerDir, command: ServerCommand, env: dict[str, str], *, cwd: str,
                               pipes: bool, log_file: IO[str], pass_fds: Sequence[int] = (),
                               token_env: str | None = None) -> Process:
    """A server process started by `command` (from `server_command`): forked from the zygote when it can be,
    else fresh. With `pipes`, its stdin and stdout are pipes to this process; else stdout goes to `log_file`
    (stderr always does)."""
    zygote = await anyio.to_thread.run_sync(shared_zygote, server)
    if zygote is not None:
        try:
            return await _forked(zygote, list(command.confine_args), env, cwd, pipes, log_file, pass_fds, token_env)
        except OSError as exc:
            _gone(zygote, exc)
    if pipes:
        return await anyio.open_process(command.argv, cwd=cwd, env=env, stderr=log_file)
    return await anyio.open_process(command.argv, cwd=cwd, env=env, stdin=None, stdout=log_file, stderr=log_file,
                                    pass_fds=list(pass_fds))


async def _forked(zygote: ServerZygote, args: list[str], env: dict[str, str], cwd: str, pipes: bool,
                  log_file: IO[str], pass_fds: Sequence[int], token_env: str | None) -> Process:
    ours: list[int] = []
    fds: dict[int, int] = {}
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        if pipes:
            stdin_r, stdin_w = os.pipe()
            stdout_r, stdout_w = os.pipe()
            ours += [stdin_w, stdout_r]
            fds.update({0: stdin_r, 1: stdout_w})
        else:
            fds.update({0: null, 1: log_file.fileno()})
        fds[2] = log_file.fileno()
        fds.update({fd: fd for fd in pass_fds})
        with anyio.CancelScope(shield=True):  # a server forked is a server handed back (and stopped)
            pid, pidfd, status = await anyio.to_thread.run_sync(zygote.spawn, args, env, cwd, fds, token_env)
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        os.close(null)
        if pipes:
            os.close(fds[0])
            os.close(fds[1])
    return ZygoteChild(pid, pidfd, status, stdin=ours[0] if pipes else None, stdout=ours[1] if pipes else None)

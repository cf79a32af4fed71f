"""A server forked by the server zygote (launch/server_zygote.py), as an anyio Process: its pipes, its exit code,
signals sent through its pidfd (never to a reused process id).

The zygote is the server's parent and reaps it; it writes the exit code to a pipe this process reads, so
waiting is waiting for that pipe to become readable.
"""

from __future__ import annotations

import os
import select
import signal

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

_CHUNK = 65536


class _Fd:
    """One end of a pipe, non-blocking, driven by the event loop; closing it wakes a task waiting on it."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self.fd = fd

    async def aclose(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            anyio.notify_closing(fd)
            os.close(fd)


class FdReceiveStream(_Fd, ByteReceiveStream):
    """The read end of a pipe."""

    async def receive(self, max_bytes: int = _CHUNK) -> bytes:
        while True:
            if self.fd < 0:
                raise anyio.ClosedResourceError
            try:
                data = os.read(self.fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self.fd)
                continue
            if not data:
                raise anyio.EndOfStream
            return data


class FdSendStream(_Fd, ByteSendStream):
    """The write end of a pipe."""

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            if self.fd < 0:
                raise anyio.ClosedResourceError
            try:
                view = view[os.write(self.fd, view):]
            except BlockingIOError:
                await anyio.wait_writable(self.fd)
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise anyio.BrokenResourceError from exc


class ZygoteChild(Process):
    """A server process forked by the zygote."""

    def __init__(self, pid: int, pidfd: int, status_fd: int, stdin: int | None = None,
                 stdout: int | None = None) -> None:
        self._pid = pid
        self._pidfd = pidfd
        self._status = status_fd
        self._returncode: int | None = None
        self._stdin = FdSendStream(stdin) if stdin is not None else None
        self._stdout = FdReceiveStream(stdout) if stdout is not None else None

    def _collect(self) -> None:
        """Read the exit code (the zygote writes it, then closes the pipe)."""
        data = os.read(self._status, 64)
        self._returncode = int(data) if data.strip() else -signal.SIGKILL  # the zygote itself ended
        os.close(self._status)
        os.close(self._pidfd)

    async def wait(self) -> int:
        while self._returncode is None:
            await anyio.wait_readable(self._status)
            if self._returncode is None and select.select([self._status], [], [], 0)[0]:
                self._collect()
        return self._returncode

    def send_signal(self, sig: signal.Signals) -> None:
        if self.returncode is None:
            try:
                signal.pidfd_send_signal(self._pidfd, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    async def aclose(self) -> None:
        for stream in (self._stdin, self._stdout):
            if stream is not None:
                await stream.aclose()
        try:
            await self.wait()
        except BaseException:
            with anyio.CancelScope(shield=True):
                self.kill()
                await self.wait()
            raise

    @property
    def pid(self) -> int:
        return self._pid

    @property
    def returncode(self) -> int | None:
        if self._returncode is None and select.select([self._status], [], [], 0)[0]:
            self._collect()
        return self._returncode

    @property
    def stdin(self) -> ByteSendStream | None:
        return self._stdin

    @property
    def stdout(self) -> ByteReceiveStream | None:
        return self._stdout

    @property
    def stderr(self) -> ByteReceiveStream | None:
        return None

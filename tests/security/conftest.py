"""Helpers for the security tests: targets any user could write, a loopback listener, process scans.

Every test proves containment by its effect (a file that does not exist, a listener that received
nothing, a process that is gone, a secret that appears in no output), never by the sandbox's word.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A world-writable folder under /tmp, so that only the sandbox (not file permissions) can stop a write."""
    path = Path(tempfile.mkdtemp(prefix="envscaler-attack-", dir="/tmp"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


class Listener:
    """A TCP listener on 127.0.0.1 in the test's own network namespace that records what reaches it."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            with conn:
                conn.settimeout(1)
                try:
                    self.received.append(conn.recv(4096))
                except OSError:
                    pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    """A loopback listener; the test asserts it got no connection and no bytes."""
    lis = Listener()
    yield lis
    lis.close()


def processes_named(name: str) -> list[int]:
    """Live processes whose command name (/proc/PID/comm) is `name`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            comm = Path(f"/proc/{entry}/comm").read_text().strip()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if comm == name and state not in ("Z", "X"):
            found.append(int(entry))
    return found

"""Writing a server's files: a file made piece by piece (its scenarios), and Python sources checked to compile,
once per process for the same bytes."""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO


class StreamedFile:
    """A file made piece by piece (a server's scenarios with their initial states): hashed and written without
    ever being whole in memory, nor its scenarios (each is read from its line when reached). Hashing keeps the
    bytes in a temporary file, which writing copies: the pieces are made once."""

    def __init__(self, chunks: Callable[[], Iterator[bytes]]) -> None:
        self.chunks = chunks
        self._made: tuple[str, IO[bytes]] | None = None

    def sha256(self) -> str:
        if self._made is None:
            digest, spool = hashlib.sha256(), tempfile.TemporaryFile()
            for chunk in self.chunks():
                digest.update(chunk)
                spool.write(chunk)
            self._made = digest.hexdigest(), spool
        return self._made[0]

    def write(self, path: Path) -> None:
        with path.open("wb") as f:
            if self._made is None:
                for chunk in self.chunks():
                    f.write(chunk)
                return
            spool = self._made[1]
            spool.seek(0)
            shutil.copyfileobj(spool, f)


_compiled: set[bytes] = set()  # sha256 of Python sources this process compiled without error


def compile_error(source: bytes, name: str) -> SyntaxError | None:
    """The error compiling `source` raises, or None. A source compiled once per process is not compiled again:
    every server has the same runtime files, and a catalog's copies of an environment the same class (about
    1 ms each, 12 per server)."""
    digest = hashlib.sha256(source).digest()
    if digest in _compiled:
        return None
    try:
        compile(source, name, "exec")
    except SyntaxError as exc:
        return exc
    if len(_compiled) >= 4096:
        _compiled.clear()
    _compiled.add(digest)
    return None

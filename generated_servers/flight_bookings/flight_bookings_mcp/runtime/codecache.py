"""The environment module compiled once per source, not at every server start.

The episode zygote (zygote.py) compiles environment.py and scans it for the standard library modules it names
(preload.py) before it forks episodes: about 15 ms of CPU per server start for a 40 kB module, paid again by
every command that starts the server. The launcher, which may write the server's folder (a server may not),
stores both in `<package>/__pycache__/environment.envscaler-code` (its render/codecache.py); the
zygote takes them from there when the file is whole and made from this very source, else compiles as before.

The file: a header (`_MAGIC`, this Python's bytecode magic number, the compile flags and optimization level,
the SHA-256 of the module's source bytes and of its path), the SHA-256 of the body, then the body: marshal of
(file name, code, module names). A file written for another source, Python, flag set or path, or cut short or
altered (its body digest), is not used. Loading it runs nothing: a code object runs only in an episode, as the
compiled one did; and only here, in the confined server, is the body unmarshalled.
Standard library only.
"""

from __future__ import annotations
import __future__

import importlib
import marshal
import os
import sys
from importlib.util import MAGIC_NUMBER, decode_source
from types import CodeType

from .preload import stdlib_imports

TYPE_CHECKING = False  # `typing` stays out of the episode zygote's start (zygote.py)
if TYPE_CHECKING:
    from typing import Any

CODE_FILE = "environment.envscaler-code"  # in the package's __pycache__/, which no checksum covers
_MAGIC = b"envscaler-code 1\n"
# What the zygote always compiled with: its own module's future flags (compile() inherits them), explicit here so
# that the launcher's compile gives the same code object.
_FLAGS = __future__.annotations.compiler_flag
_DIGEST = 32


def _sha256_of(name: str) -> Any:
    try:
        return importlib.import_module(name).sha256
    except (ImportError, AttributeError):
        return None


# The built-in SHA-256 (`_sha2` from Python 3.12, `_sha256` before): the same digest as hashlib's, without loading
# OpenSSL into the episode zygote's start (about 2 ms); hashlib's when neither is there.
_new_sha256 = _sha256_of("_sha2") or _sha256_of("_sha256") or _sha256_of("hashlib")


def _sha256(data: bytes) -> bytes:
    return bytes(_new_sha256(data).digest())


def compile_environment(source: str, filename: str) -> CodeType:
    """The environment module's code, as the episode zygote runs it (compiling runs nothing)."""
    code: CodeType = compile(source, filename, "exec", flags=_FLAGS, dont_inherit=True)
    return code


def _header(source: bytes, filename: str) -> bytes:
    params = f"{_FLAGS}:{sys.flags.optimize}\n".encode()
    return (_MAGIC + MAGIC_NUMBER + params + _sha256(source)
            + _sha256(filename.encode("utf-8", "surrogateescape")))


def dump(source: bytes, filename: str) -> bytes:
    """The cache file's bytes for this source at this path (SyntaxError, ValueError when it does not decode or
    compile)."""
    text = decode_source(source)  # what the loader's get_source gives: its declared encoding, universal newlines
    body = marshal.dumps((filename, compile_environment(text, filename), stdlib_imports(text)))
    return _header(source, filename) + _sha256(body) + body


def current(data: bytes, source: bytes, filename: str) -> bool:
    """Whether a cache file's bytes were written for exactly this source, path, Python and flags, and are whole
    (what the launcher checks: it never unmarshals a file of a server's folder)."""
    header = _header(source, filename)
    if not data.startswith(header) or len(data) < len(header) + _DIGEST:
        return False
    return _sha256(data[len(header) + _DIGEST:]) == data[len(header):len(header) + _DIGEST]


def load(data: bytes, source: bytes, filename: str) -> tuple[CodeType, list[str]] | None:
    """(code, standard library module names) from a cache file's bytes, or None when it is not `current`."""
    if not current(data, source, filename):
        return None
    try:
        name, code, names = marshal.loads(data[len(_header(source, filename)) + _DIGEST:])
    except (EOFError, ValueError, TypeError):
        return None
    if name != filename or not isinstance(code, CodeType) or code.co_filename != filename:
        return None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None
    return code, names


def prepared(origin: str) -> tuple[CodeType, list[str]]:
    """The environment module at `origin` compiled, with the standard library modules it names: from the cache
    file beside it when that is whole and current, else compiled here (SyntaxError as import would raise)."""
    with open(origin, "rb") as f:
        source = f.read()
    try:
        with open(os.path.join(os.path.dirname(origin), "__pycache__", CODE_FILE), "rb") as f:
            cached = load(f.read(), source, origin)
    except OSError:
        cached = None
    if cached is not None:
        return cached
    text = decode_source(source)
    return compile_environment(text, origin), stdlib_imports(text)

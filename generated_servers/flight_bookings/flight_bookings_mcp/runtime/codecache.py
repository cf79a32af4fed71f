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

import hashlib
import marshal
import sys
from importlib.util import MAGIC_NUMBER, decode_source
from pathlib import Path
from types import CodeType

from .preload import stdlib_imports

CODE_FILE = "environment.envscaler-code"  # in the package's __pycache__/, which no checksum covers
_MAGIC = b"envscaler-code 1\n"
# What the zygote always compiled with: its own module's future flags (compile() inherits them), explicit here so
# that the launcher's compile gives the same code object.
_FLAGS = __future__.annotations.compiler_flag
_DIGEST = 32


def compile_environment(source: str, filename: str) -> CodeType:
    """The environment module's code, as the episode zygote runs it (compiling runs nothing)."""
    code: CodeType = compile(source, filename, "exec", flags=_FLAGS, dont_inherit=True)
    return code


def _header(source: bytes, filename: str) -> bytes:
    params = f"{_FLAGS}:{sys.flags.optimize}\n".encode()
    return (_MAGIC + MAGIC_NUMBER + params + hashlib.sha256(source).digest()
            + hashlib.sha256(filename.encode("utf-8", "surrogateescape")).digest())


def dump(source: bytes, filename: str) -> bytes:
    """The cache file's bytes for this source at this path (SyntaxError, ValueError when it does not decode or
    compile)."""
    text = decode_source(source)  # what the loader's get_source gives: its declared encoding, universal newlines
    body = marshal.dumps((filename, compile_environment(text, filename), stdlib_imports(text)))
    return _header(source, filename) + hashlib.sha256(body).digest() + body


def current(data: bytes, source: bytes, filename: str) -> bool:
    """Whether a cache file's bytes were written for exactly this source, path, Python and flags, and are whole
    (what the launcher checks: it never unmarshals a file of a server's folder)."""
    header = _header(source, filename)
    if not data.startswith(header) or len(data) < len(header) + _DIGEST:
        return False
    return hashlib.sha256(data[len(header) + _DIGEST:]).digest() == data[len(header):len(header) + _DIGEST]


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
    path = Path(origin)
    source = path.read_bytes()
    try:
        cached = load((path.parent / "__pycache__" / CODE_FILE).read_bytes(), source, origin)
    except OSError:
        cached = None
    if cached is not None:
        return cached
    text = decode_source(source)
    return compile_environment(text, origin), stdlib_imports(text)

"""A rendered server's environment module and runtime compiled once, for every later start of its server.

    write_code_cache(server_folder, package)   # before the server starts; True when a usable file is there
    write_runtime_bytecode(server_folder, package)   # (called by write_code_cache) the runtime's .pyc files

A server whose episodes run in processes of their own compiles environment.py in its episode zygote at every
start, and scans it for the standard library modules to preload (about 15 ms of CPU for a 40 kB module). The
launcher writes both once into `<package>/__pycache__/environment.envscaler-code` (the server may not write its
folder), and the zygote reads them from there. The format, and what makes a file usable (written for this very
source, path, Python and compile flags, and whole), are the runtime's own (templates/server/runtime/codecache.py,
loaded here from this harness's templates, so both ends share one definition); a file the zygote cannot use is
ignored there and the module compiled as before. Compiling runs none of the environment's code, and this process
only hashes an existing file (`current`), never unmarshals one: that happens in the confined server.
"""

from __future__ import annotations

import importlib.util
import os
import py_compile
import sys
import threading
from functools import cache
from pathlib import Path
from types import ModuleType

from envscaler_mcp._io import atomic_write_bytes
from envscaler_mcp.render.engine import server_templates

_RUNTIME = "_envscaler_mcp_server_runtime"  # the templates' runtime package, under a name no server uses
# One compile at a time: CPython 3.11 keeps the AST converter's recursion depth per interpreter, not per thread, so
# two threads parsing at once may fail with "SystemError: AST constructor recursion depth mismatch" (renders
# made ready from several threads hit it, seen once in the suite).
_COMPILING = threading.Lock()
_CHECKED_HASH = (0b11).to_bytes(4, "little")  # a .pyc's flags: hash-based, checked against the source


@cache
def _runtime_codecache() -> ModuleType:
    """The templates' runtime/codecache.py, imported as part of its package (it imports preload.py)."""
    folder = server_templates() / "runtime"
    if _RUNTIME not in sys.modules:
        spec = importlib.util.spec_from_file_location(_RUNTIME, folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])
        if spec is None or spec.loader is None:  # pragma: no cover - the templates ship with the package
            raise ImportError(f"no server runtime in {folder}")
        package = importlib.util.module_from_spec(spec)
        sys.modules[_RUNTIME] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"{_RUNTIME}.codecache")


def code_file(folder: Path, package: str) -> Path:
    """Where a server folder's compiled environment module is kept."""
    return Path(folder) / package / "__pycache__" / str(_runtime_codecache().CODE_FILE)


def write_runtime_bytecode(folder: Path, package: str, served_from: Path | None = None) -> int:
    """Write the server runtime's modules as hash-checked .pyc files (`<package>/runtime/__pycache__/`) unless
    current ones are there; returns how many were written. The episode zygote is a fresh interpreter at every
    server start and may not write the folder: without them it compiles about 100 kB of runtime source each time
    (about 10 ms of CPU, benchmarks/README.md). Python's own import checks each file against its module's source
    (`checked-hash`: the source's hash, not its time, so a copied folder keeps them) and compiles a module whose
    file is stale or missing, as before. Compiling runs nothing; a folder that cannot be written is left alone."""
    runtime = Path(folder) / package / "runtime"
    served = Path(served_from) if served_from is not None else Path(folder)
    written = 0
    for module in sorted(runtime.glob("*.py")):
        target = Path(importlib.util.cache_from_source(str(module)))
        try:
            expected = importlib.util.source_hash(module.read_bytes())
            with open(target, "rb") as f:
                head = f.read(16)
            if head[:4] == importlib.util.MAGIC_NUMBER and head[4:8] == _CHECKED_HASH and head[8:] == expected:
                continue
        except OSError:
            pass
        try:
            with _COMPILING:
                py_compile.compile(str(module), cfile=str(target), dfile=str(served / package / "runtime" / module.name),
                                   doraise=True, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
            os.chmod(target, 0o644)
        except (OSError, py_compile.PyCompileError):
            continue
        written += 1
    return written


def write_code_cache(folder: Path, package: str, served_from: Path | None = None) -> bool:
    """Compile `folder`'s environment module into its cache file unless a usable one is there (True when one is
    there now). The file name compiled in is the module's path in the folder the server runs from: `folder`
    (the launcher passes the resolved folder), or `served_from` when `folder` is a staging folder renamed there
    once written (render/cache.py). A module that does not compile or a folder that cannot be written is left
    alone: the server compiles it, and reports what is wrong, as before."""
    write_runtime_bytecode(folder, package, served_from)
    runtime = _runtime_codecache()
    module = Path(folder) / package / "environment.py"
    served = str(Path(served_from) / package / "environment.py") if served_from is not None else str(module)
    target = code_file(folder, package)
    try:
        source = module.read_bytes()
    except OSError:
        return False
    try:
        if runtime.current(target.read_bytes(), source, served):
            return True
    except OSError:
        pass
    try:
        with _COMPILING:
            data = runtime.dump(source, served)
    except (SyntaxError, ValueError):
        return False
    try:
        atomic_write_bytes(target, data, durable=False)  # whole or not there: a reader never sees it being written
        os.chmod(target, 0o644)  # as readable as the module itself, whatever the umask
    except OSError:
        return False
    return True

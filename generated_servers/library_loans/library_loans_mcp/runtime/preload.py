"""What the episode zygote imports before it forks episodes: the standard library modules the environment's
source names (found here, or kept with its compiled code: codecache.py), from Python's own library only (zygote.py
runs none of the environment's code)."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Iterator


def import_stdlib(names: list[str]) -> None:
    """Import these modules when they are standard library ones (any other name is skipped), from Python's own
    library (`_stdlib_only`); one that fails is left to the episode's own import."""
    with _stdlib_only():
        for name in (n for n in names if n in sys.stdlib_module_names):
            try:
                importlib.import_module(name)
            except Exception:
                continue


@contextlib.contextmanager
def _stdlib_only() -> Iterator[None]:
    """Imports from Python's own library only: the server folder is first on the search path, and a module
    of it named like a standard one (`fractions.py` beside the package, imported by `statistics`) is
    environment code, which the zygote never runs."""
    saved = sys.path[:]
    sys.path[:] = [entry for entry in saved if entry and _in_stdlib(os.path.realpath(entry))]
    try:
        yield
    finally:
        sys.path[:] = saved


_STDLIB = os.path.realpath(os.path.dirname(os.__file__))


def _in_stdlib(path: str) -> bool:
    """Python's library folder or one beneath it (lib-dynload), never an installed-packages folder."""
    return (path == _STDLIB or path.startswith(_STDLIB + os.sep)) and \
        not {"site-packages", "dist-packages"} & set(path.split(os.sep))


def stdlib_imports(source: str) -> list[str]:
    """Standard library modules the source names (imported from Python's own library, `_stdlib_only`)."""
    import ast  # here: with a current code file (codecache.py) the zygote never scans a source

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return sorted(n for n in names if n in sys.stdlib_module_names)

"""Load modules of the server runtime straight from the templates, as a package of their own (the journal's
modules import only each other and the standard library)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

RUNTIME = Path(__file__).resolve().parents[2] / "templates" / "server" / "runtime"
_PACKAGE = "_envscaler_test_runtime"


def load_runtime(module: str) -> ModuleType:
    """templates/server/runtime/<module>.py (imported once), e.g. "journal", "containers", "undo"."""
    if _PACKAGE not in sys.modules:
        spec = importlib.util.spec_from_file_location(_PACKAGE, RUNTIME / "__init__.py",
                                                      submodule_search_locations=[str(RUNTIME)])
        assert spec and spec.loader
        package = importlib.util.module_from_spec(spec)
        sys.modules[_PACKAGE] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"{_PACKAGE}.{module}")


def load_journal() -> ModuleType:
    """The templates/server/runtime/journal.py module."""
    return load_runtime("journal")

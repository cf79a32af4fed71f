"""Load the server runtime's journal module straight from the templates (it has no package imports)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

RUNTIME = Path(__file__).resolve().parents[2] / "templates" / "server" / "runtime"


def load_journal() -> ModuleType:
    """The templates/server/runtime/journal.py module (imported once)."""
    name = "_envscaler_test_journal"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, RUNTIME / "journal.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module

"""Environment skeletons: the model, static schema extraction, static checks, and building from authoring files.

The names below are imported on first use, so reading a skeleton (`skeleton.models`) does not load the
builder and its JSON Schema validator.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from envscaler_mcp.skeleton.build import build_skeleton_from_dir
    from envscaler_mcp.skeleton.checks import check_source, check_state_jsonable
    from envscaler_mcp.skeleton.schema import env_structure, extract_state, extract_tools, state_schema

_HOME = {
    "build_skeleton_from_dir": "build",
    "check_source": "checks",
    "check_state_jsonable": "checks",
    "env_structure": "schema",
    "extract_state": "schema",
    "extract_tools": "schema",
    "state_schema": "schema",
}

__all__ = [
    "build_skeleton_from_dir",
    "check_source",
    "check_state_jsonable",
    "env_structure",
    "extract_state",
    "extract_tools",
    "state_schema",
]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)

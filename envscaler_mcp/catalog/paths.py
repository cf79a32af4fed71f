"""Where the bundled catalog lives: the repository root in a checkout, `_bundled/` in an installed wheel."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

_PKG = Path(__file__).resolve().parent.parent


@cache
def data_root() -> Path:
    """Folder holding environments/, scenarios/, templates/ and generated_servers/.

    ENVSCALER_MCP_HOME overrides it; otherwise the wheel's `_bundled/` or the source checkout's root.
    """
    override = os.environ.get("ENVSCALER_MCP_HOME")
    if override:
        return Path(override).resolve()
    bundled = _PKG / "_bundled"
    if bundled.is_dir():
        return bundled
    return _PKG.parent


def environments_dir() -> Path:
    """Bundled environment skeletons: environments/<env>/skeleton.json."""
    return data_root() / "environments"


def scenarios_dir() -> Path:
    """Bundled scenario sets: scenarios/<env>.jsonl."""
    return data_root() / "scenarios"


def templates_dir() -> Path:
    """Jinja2 templates of generated servers."""
    return data_root() / "templates"


def generated_servers_dir() -> Path:
    """Rendered servers: generated_servers/<env>/."""
    return data_root() / "generated_servers"

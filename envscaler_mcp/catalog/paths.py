"""Where the catalog lives.

Two roots: the *package root* (templates/ and schemas/, shipped with the code: the repository root in a
checkout, `_bundled/` in an installed wheel) and the *data home* (environments/, scenarios/ and
generated_servers/). The data home is the package root unless `--home DIR` or ENVSCALER_MCP_HOME names
another folder, such as the output of `envscaler-mcp import envscaler`; every command reads it here, so
the option means the same thing everywhere.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

HOME_ENV = "ENVSCALER_MCP_HOME"
_PKG = Path(__file__).resolve().parent.parent
_home: Path | None = None


@cache
def package_root() -> Path:
    """Folder holding templates/ and schemas/: the wheel's `_bundled/` or the source checkout's root."""
    bundled = _PKG / "_bundled"
    if bundled.is_dir():
        return bundled
    return _PKG.parent


def set_home(home: Path | None) -> None:
    """Use `home` as the data home for the rest of the process (None: back to ENVSCALER_MCP_HOME/bundled)."""
    global _home
    _home = Path(home).expanduser().resolve() if home is not None else None


def data_root() -> Path:
    """Folder holding environments/, scenarios/ and generated_servers/: --home, else ENVSCALER_MCP_HOME,
    else the package root."""
    if _home is not None:
        return _home
    override = os.environ.get(HOME_ENV)
    if override:
        return Path(override).expanduser().resolve()
    return package_root()


def environments_dir() -> Path:
    """Environment skeletons: environments/<env>/skeleton.json."""
    return data_root() / "environments"


def scenarios_dir() -> Path:
    """Scenario sets: scenarios/<env>.jsonl."""
    return data_root() / "scenarios"


def templates_dir() -> Path:
    """Jinja2 templates of generated servers (always the package's own)."""
    return package_root() / "templates"


def generated_servers_dir() -> Path:
    """Rendered servers: generated_servers/<env>/ in the data home."""
    return data_root() / "generated_servers"

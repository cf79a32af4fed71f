"""Add a generated server to a desktop client's MCP config (Claude Desktop, Cursor, VS Code), safely."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

from envscaler_mcp._io import atomic_write_json
from envscaler_mcp.errors import UsageError
from envscaler_mcp.launch.jsonc import loads_jsonc
from envscaler_mcp.launch.target import ServerDir
from envscaler_mcp.render.clients import client_config, stdio_entry

ClientName = Literal["claude-desktop", "cursor", "vscode"]
CLIENT_NAMES: tuple[str, ...] = get_args(ClientName)


def default_config_path(client: str) -> Path:
    """Where `client` reads its MCP servers from (user scope; VS Code: the workspace's .vscode/mcp.json)."""
    home = Path.home()
    if client == "claude-desktop":
        if sys.platform == "darwin":
            return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
        if sys.platform == "win32":
            return Path(os.environ.get("APPDATA", home)) / "Claude" / "claude_desktop_config.json"
        return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "Claude" / "claude_desktop_config.json"
    if client == "cursor":
        return home / ".cursor" / "mcp.json"
    if client == "vscode":
        return Path.cwd() / ".vscode" / "mcp.json"
    raise UsageError(f"unknown client '{client}': use one of {', '.join(CLIENT_NAMES)}")


def server_entry(server: ServerDir, args: list[str] | None = None) -> dict[str, Any]:
    """An entry that runs the server folder with this Python, without installing it."""
    return stdio_entry(sys.executable, ["-m", server.package, *(args or [])],
                       env={"PYTHONPATH": str(server.path)})


def _load(path: Path) -> tuple[dict[str, Any], bool]:
    """The config's object and whether its text had comments (JSONC: comments and trailing commas are read)."""
    if not path.exists():
        return {}, False
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return {}, False
    try:
        value, had_comments = loads_jsonc(text)
    except ValueError as exc:
        raise UsageError(f"{path} is not valid JSON ({exc}); "
                         "fix or move it, then run install again. Nothing was changed.") from exc
    if not isinstance(value, dict):
        raise UsageError(f"{path} must hold a JSON object at its top level; nothing was changed")
    return value, had_comments


@dataclass(frozen=True)
class Installed:
    """What `install_server` did."""

    path: Path  # the config file written
    backup: Path | None  # the copy of the file as it was, if it existed
    replaced: bool  # an entry of that name was there and was replaced
    dropped_comments: bool  # the file had comments, which the rewritten file does not keep (the backup does)


def install_server(client: str, name: str, entry: dict[str, Any], config_path: Path | None = None) -> Installed:
    """Merge `entry` under `name` into the client's config.

    Other servers and settings are kept; an existing file is first copied to `<file>.bak-<UTC time>`, and
    the rewritten file keeps its mode. JSONC (comments, trailing commas) is read; comments are not written back.
    """
    path = Path(config_path) if config_path else default_config_path(client)
    config, had_comments = _load(path)
    fragment = client_config(client, name, entry)
    section = next(iter(fragment))
    servers = config.setdefault(section, {})
    if not isinstance(servers, dict):
        raise UsageError(f"{path}: '{section}' must be a JSON object of servers; nothing was changed")
    replaced = name in servers
    servers[name] = fragment[section][name]
    backup = None
    if path.exists():
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        backup = path.with_name(f"{path.name}.bak-{stamp}")
        shutil.copy2(path, backup)
    atomic_write_json(path, config)
    return Installed(path, backup, replaced, had_comments)

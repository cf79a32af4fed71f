"""`install`: merge a server into a client's config without clobbering anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envscaler_mcp.cli import app
from envscaler_mcp.errors import UsageError
from envscaler_mcp.launch.install import install_server

ENTRY = {"command": "/usr/bin/python3", "args": ["-m", "shop_mcp"], "env": {"PYTHONPATH": "/srv/shop"}}


def test_merge_keeps_other_servers_and_backs_up(tmp_path: Path) -> None:
    config = tmp_path / "claude_desktop_config.json"
    original = {"mcpServers": {"other": {"command": "x"}}, "globalShortcut": "Ctrl+Space"}
    config.write_text(json.dumps(original))
    path, backup = install_server("claude-desktop", "shop", ENTRY, config)
    merged = json.loads(path.read_text())
    assert merged["mcpServers"] == {"other": {"command": "x"}, "shop": ENTRY}
    assert merged["globalShortcut"] == "Ctrl+Space"
    assert backup is not None and json.loads(backup.read_text()) == original


def test_vscode_shape_and_new_file(tmp_path: Path) -> None:
    config = tmp_path / ".vscode" / "mcp.json"
    _path, backup = install_server("vscode", "shop", ENTRY, config)
    assert backup is None
    assert json.loads(config.read_text()) == {"servers": {"shop": {"type": "stdio", **ENTRY}}}


@pytest.mark.parametrize("text", ["{broken", "[1, 2]", '{"mcpServers": [1]}'])
def test_malformed_configs_are_refused_and_untouched(tmp_path: Path, text: str) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(text)
    with pytest.raises(UsageError, match=r"(?i)nothing was changed"):
        install_server("cursor", "shop", ENTRY, config)
    assert config.read_text() == text
    assert list(tmp_path.iterdir()) == [config]


def test_install_command(tmp_path: Path) -> None:
    from envscaler_mcp.launch import resolve_target
    from tests.render.fixture_env import scenarios, skeleton

    server = resolve_target(skeleton(), scenarios())
    config = tmp_path / "cursor.json"
    result = CliRunner().invoke(app, ["install", str(server.path), "--client", "cursor", "--config", str(config)])
    assert result.exit_code == 0, result.output
    entry = json.loads(config.read_text())["mcpServers"]["fixture-shop"]
    assert entry["args"] == ["-m", "fixture_shop_mcp"] and entry["env"] == {"PYTHONPATH": str(server.path)}

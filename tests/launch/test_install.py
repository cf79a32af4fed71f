"""`install`: merge a server into a client's config without clobbering anything."""

from __future__ import annotations

import json
import os
import stat
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
    done = install_server("claude-desktop", "shop", ENTRY, config)
    path, backup = done.path, done.backup
    assert not done.replaced and not done.dropped_comments
    merged = json.loads(path.read_text())
    assert merged["mcpServers"] == {"other": {"command": "x"}, "shop": ENTRY}
    assert merged["globalShortcut"] == "Ctrl+Space"
    assert backup is not None and json.loads(backup.read_text()) == original


def test_vscode_shape_and_new_file(tmp_path: Path) -> None:
    config = tmp_path / ".vscode" / "mcp.json"
    assert install_server("vscode", "shop", ENTRY, config).backup is None
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


VSCODE_JSONC = """{
  // servers this workspace uses
  "servers": {
    "shop": {"type": "stdio", "command": "old", "args": ["a//b", "/*not a comment*/"],},
    /* kept */ "other": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
  },
}
"""


def test_jsonc_config_is_read_and_a_replaced_entry_is_reported(tmp_path: Path) -> None:
    config = tmp_path / ".vscode" / "mcp.json"
    config.parent.mkdir()
    config.write_text(VSCODE_JSONC)
    done = install_server("vscode", "shop", ENTRY, config)
    assert done.replaced and done.dropped_comments
    servers = json.loads(config.read_text())["servers"]
    assert servers == {"shop": {"type": "stdio", **ENTRY}, "other": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}
    assert done.backup is not None and done.backup.read_text() == VSCODE_JSONC


def test_a_broken_jsonc_config_is_refused_with_the_line_of_the_fault(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    text = '{\n  // servers\n  "servers": {},,\n}\n'
    config.write_text(text)
    with pytest.raises(UsageError, match=r"not valid JSON \(line 3, column .*Nothing was changed"):
        install_server("vscode", "shop", ENTRY, config)
    assert config.read_text() == text


def test_trailing_commas_alone_are_read_and_reported_as_not_kept(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{"servers": {"other": {"type": "http", "url": "http://127.0.0.1:9/mcp",},},}')
    done = install_server("vscode", "shop", ENTRY, config)
    assert done.dropped_comments and not done.replaced
    assert set(json.loads(config.read_text())["servers"]) == {"other", "shop"}


def test_the_config_keeps_its_mode_and_a_new_file_follows_the_umask(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text("{}")
    config.chmod(0o644)
    install_server("cursor", "shop", ENTRY, config)
    assert stat.S_IMODE(config.stat().st_mode) == 0o644
    old = os.umask(0o027)
    try:
        fresh = tmp_path / "new" / "mcp.json"
        install_server("cursor", "shop", ENTRY, fresh)
    finally:
        os.umask(old)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o640


def test_install_command_says_when_it_replaces_an_entry(tmp_path: Path) -> None:
    from envscaler_mcp.launch import resolve_target
    from tests.render.fixture_env import scenarios, skeleton

    server = resolve_target(skeleton(), scenarios())
    config = tmp_path / "cursor.json"
    args = ["install", str(server.path), "--client", "cursor", "--config", str(config)]
    first = CliRunner().invoke(app, args)
    second = CliRunner().invoke(app, args)
    assert first.exit_code == second.exit_code == 0
    assert "replaced" not in first.output and "replaced the existing entry 'fixture-shop'" in second.output

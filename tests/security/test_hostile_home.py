"""A data home (--home) from elsewhere, as an attacker would ship it: a catalog index that lies, and symlinks
that lead out of the home. Shown by effect: the command does not crash, a folder outside the home keeps its
files."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envscaler_mcp.catalog.paths import package_root, set_home
from envscaler_mcp.cli import app
from envscaler_mcp.errors import UsageError

ENV = "ecommerce_orders"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.delenv("ENVSCALER_MCP_HOME", raising=False)
    root = package_root()
    out = tmp_path / "home"
    shutil.copytree(root / "environments" / ENV, out / "environments" / ENV)
    (out / "scenarios").mkdir()
    shutil.copy(root / "scenarios" / f"{ENV}.jsonl", out / "scenarios" / f"{ENV}.jsonl")
    try:
        yield out
    finally:
        set_home(None)


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A folder outside the home, with a file that must survive."""
    folder = tmp_path / "victim" / ENV
    folder.mkdir(parents=True)
    (folder / "precious.txt").write_text("keep me")
    return folder


@pytest.mark.parametrize("rows", [[1, "x"], [{"id": {"a": 1}, "title": "t", "checks": "many", "solution_calls": 0}],
                                  [{"id": "s", "title": "t", "checks": -1, "solution_calls": 0}]])
def test_a_malformed_index_is_not_trusted(home: Path, rows: list[object]) -> None:
    scenarios = home / "scenarios" / f"{ENV}.jsonl"
    stat = scenarios.stat()  # the index claims to describe the file as it is (same size and mtime)
    (home / "scenarios" / f"{ENV}.index.json").write_text(
        json.dumps({"file": [stat.st_size, stat.st_mtime_ns], "scenarios": rows}))
    first = json.loads(scenarios.read_text().splitlines()[0])["id"]
    result = CliRunner().invoke(app, ["show", ENV, "--home", str(home)])
    assert result.exception is None, result.output
    assert result.exit_code == 0 and first in result.output


def test_render_does_not_follow_a_symlinked_servers_folder_out_of_the_home(home: Path, victim: Path) -> None:
    (home / "generated_servers").symlink_to(victim.parent, target_is_directory=True)
    result = CliRunner().invoke(app, ["render", ENV, "--home", str(home)])
    assert (victim / "precious.txt").read_text() == "keep me"
    assert sorted(p.name for p in victim.iterdir()) == ["precious.txt"]
    assert isinstance(result.exception, UsageError), result.output  # main(): one line, exit code 2


def test_render_replaces_a_symlinked_server_folder_not_its_target(home: Path, victim: Path) -> None:
    (home / "generated_servers").mkdir()
    link = home / "generated_servers" / ENV
    link.symlink_to(victim, target_is_directory=True)
    result = CliRunner().invoke(app, ["render", ENV, "--home", str(home)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in victim.iterdir()) == ["precious.txt"]
    assert not link.is_symlink() and (link / "manifest.json").is_file()

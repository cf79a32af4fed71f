"""`envscaler-mcp render`: renders skeleton paths or catalog ids, and `--check` reports stale servers."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from envscaler_mcp.catalog.store import save_skeleton
from envscaler_mcp.cli import app
from tests.render.fixture_env import skeleton


def test_render_and_check(tmp_path: Path) -> None:
    path = save_skeleton(skeleton(), tmp_path / "envs")
    out = tmp_path / "servers"
    runner = CliRunner()
    stale = runner.invoke(app, ["render", str(path), "--out", str(out), "--check"])
    assert stale.exit_code == 1 and "STALE" in stale.output
    first = runner.invoke(app, ["render", str(path), "--out", str(out)])
    assert first.exit_code == 0, first.output
    assert "rendered" in first.output and (out / "fixture_shop" / "manifest.json").is_file()
    again = runner.invoke(app, ["render", str(path), "--out", str(out)])
    assert "up to date" in again.output
    check = runner.invoke(app, ["render", str(path), "--out", str(out), "--check"])
    assert check.exit_code == 0 and "current" in check.output


def test_render_needs_a_target() -> None:
    result = CliRunner().invoke(app, ["render"])
    assert result.exit_code != 0

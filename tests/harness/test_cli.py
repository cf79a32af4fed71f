"""The `eval` command line: option checks."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from envscaler_mcp.cli import app

runner = CliRunner()


@pytest.mark.parametrize(("args", "message"), [
    (["--env", "x"], "--agent"),
    (["--env", "x", "--agent", "oracle", "--mode", "conversation"], "--user"),
    (["--env", "x", "--agent", "oracle", "--resume"], "--out"),
    (["--env", "x", "--agent", "oracle", "--transport", "pigeon"], "--transport"),
    (["--agent", "oracle"], "--env ENV"),
    (["--agent", "oracle", "--url", "http://127.0.0.1:9/mcp"], "--scenarios"),
])
def test_bad_options_are_usage_errors(args: list[str], message: str, tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", *args, "--out", str(tmp_path / "run"), "--no-progress"]
                           if "--resume" not in args else ["eval", *args])
    assert result.exit_code != 0
    assert message in str(result.exception)

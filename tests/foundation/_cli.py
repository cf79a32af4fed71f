"""Test helper: run the command line in this process and keep its exit code and printed output."""

from __future__ import annotations

import pytest

from envscaler_mcp.cli import main


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """(exit code, stdout) of `envscaler-mcp ARGS`."""
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    return code, capsys.readouterr().out

"""The root command lists the stages' commands from a table and imports a stage only to run its command."""

from __future__ import annotations

import subprocess
import sys

import pytest

from envscaler_mcp.cli import COMMANDS, load_command


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_table_matches_the_registered_command(name: str) -> None:
    command = load_command(name)
    assert command.name == name
    first_line = " ".join((command.help or "").strip().split("\n\n")[0].split())
    assert COMMANDS[name][1] == first_line


def test_help_and_version_import_no_stage() -> None:
    probe = (
        "import sys\n"
        "from envscaler_mcp.cli import main\n"
        "for args in (['--help'], ['--version']):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = [m for m in ('mcp', 'envscaler_mcp.harness', 'envscaler_mcp.providers', 'envscaler_mcp.launch',"
        " 'pydantic') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert "HEAVY []" in result.stdout


def test_eval_choices_equal_the_harness_types() -> None:
    from typing import get_args

    from envscaler_mcp.cli import eval as eval_cli
    from envscaler_mcp.harness.models import ObservationMode, SuccessRule
    from envscaler_mcp.launch import EpisodeProcess, Transport

    assert get_args(eval_cli.EpisodeProcess) == get_args(EpisodeProcess)
    assert get_args(eval_cli.SuccessRule) == get_args(SuccessRule)
    assert get_args(eval_cli.ObservationMode) == get_args(ObservationMode)
    assert get_args(eval_cli.Transport) == get_args(Transport)

"""Help texts print as written: square brackets in them are text, not rich markup to be dropped."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from typer._click.core import Command
from typer.testing import CliRunner

from envscaler_mcp.cli import COMMANDS, app, load_command

runner = CliRunner()


def _paths(command: Command, path: list[str]) -> Iterator[tuple[list[str], Command]]:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _paths(sub, [*path, name])


def _bracketed(command: Command) -> list[str]:
    """The `[...]` pieces of a command's help and its options' help, as the source writes them."""
    texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
    return [piece.replace("\\[", "[") for text in texts for piece in re.findall(r"\\?\[[^\]\s]*\]", text)]


def _with_brackets() -> list[tuple[list[str], Command]]:
    """Every command (subcommands included) whose help holds a bracket."""
    every = [found for name in COMMANDS for found in _paths(load_command(name), [name])]
    return [(path, command) for path, command in every if _bracketed(command)]


def test_the_commands_with_brackets_are_found() -> None:
    # The test below would pass vacuously if none were found: eval's and synth's --ray name the [ray] extra.
    found = {" ".join(path): _bracketed(command) for path, command in _with_brackets()}
    assert "[ray]" in found["eval"] and "[ray]" in found["synth envs"]


@pytest.mark.parametrize(("path", "command"), _with_brackets(), ids=lambda v: " ".join(v) if isinstance(v, list) else "")
@pytest.mark.parametrize("width", ["80", "120"])
def test_brackets_in_help_survive_rendering(path: list[str], command: Command, width: str) -> None:
    pieces = _bracketed(command)
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": width})
    assert result.exit_code == 0, result.output
    for piece in pieces:
        assert piece in result.output, f"{' '.join(path)} --help lost {piece!r}"

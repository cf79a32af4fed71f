"""The README's `synth` command lines are commands the CLI accepts (every option exists, the environment is
positional) and the files they name are in the repository."""

from __future__ import annotations

import shlex
from pathlib import Path

from typer.testing import CliRunner

from envscaler_mcp.cli import app

ROOT = Path(__file__).resolve().parents[2]


def readme_commands(prefix: str) -> list[list[str]]:
    """Each README line (continuations joined) starting with `envscaler-mcp <prefix>`, split, comment cut."""
    text = (ROOT / "README.md").read_text(encoding="utf-8").replace("\\\n", " ")
    lines = [line.split("  #")[0].strip() for line in text.splitlines()]
    return [shlex.split(line)[1:] for line in lines if line.startswith(f"envscaler-mcp {prefix}")]


def test_the_readme_synth_lines_parse() -> None:
    commands = readme_commands("synth ")
    assert len(commands) >= 4
    for args in commands:
        # --help is eager, but every option is parsed first: an unknown option or a misplaced argument fails
        result = CliRunner().invoke(app, [*args, "--help"])
        assert result.exit_code == 0, (args, result.output)
        assert "Usage: envscaler-mcp synth" in result.output


def test_the_readme_corpus_is_shipped_and_usable() -> None:
    from envscaler_mcp.synth.skel.corpus import collect_tasks

    [envs] = [args for args in readme_commands("synth envs")]
    corpus = ROOT / envs[envs.index("--tasks") + 1]
    tasks, stats = collect_tasks(corpus, limit=None)
    assert len(tasks) >= 30 and stats["kept"] == stats["records"]  # every record passes the cheap filters
    assert {t.source for t in tasks} == {"api-bank"} and all("TIME:" not in t.task for t in tasks)

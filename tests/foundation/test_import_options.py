"""`import envscaler`'s options are one typed dataclass: every option reaches the import and the replay of
trajectories, and the choices are the stages' own types."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any, get_args, get_type_hints

import pytest
from typer.testing import CliRunner

from envscaler_mcp import launch
from envscaler_mcp._outcome import ConventionChoice
from envscaler_mcp.cli import app, importing, load_command
from envscaler_mcp.cli.import_options import ImportOptions
from envscaler_mcp.errors import InputFileError
from envscaler_mcp.interop import stream_import
from envscaler_mcp.qa import solutions


def test_the_command_declares_exactly_the_dataclass_fields() -> None:
    command = load_command("import").commands["envscaler"]  # type: ignore[attr-defined]
    assert [p.name for p in command.params] == [f.name for f in dataclasses.fields(ImportOptions)]
    assert [p.name for p in command.params if p.required] == ["envs"]


def test_the_choices_are_the_stages_own_types() -> None:
    hints = {name: get_args(hint)[0] for name, hint in get_type_hints(ImportOptions, include_extras=True).items()}
    assert hints["success_convention"] is ConventionChoice is get_type_hints(stream_import.stream_import)["convention"]
    assert hints["transport"] is launch.Transport is get_type_hints(solutions.attach_solutions)["transport"]


def test_every_option_reaches_the_import_and_the_replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    env = SimpleNamespace(id="shop", source_id="Shop", queries=1, state_changes=1, provenance=None)

    def fake_import(envs: Path, scenarios: Path | None, out: Path, **kwargs: Any) -> Any:
        seen["import"] = (envs, scenarios, out, kwargs)
        return SimpleNamespace(envs=[env], counts={"shop": 1}, duplicates=0, skipped=[], errors=[])

    def fake_attach(out: Path, env_ids: list[str], trajectories: Path, transport: str, coerce: bool) -> Any:
        seen["attach"] = (out, env_ids, trajectories, transport, coerce)
        return SimpleNamespace(skipped=[], unusable=[])

    monkeypatch.setattr(stream_import, "stream_import", fake_import)
    monkeypatch.setattr(importing, "_attach", fake_attach)
    monkeypatch.setattr(importing, "_os_layers_on", lambda: True)
    monkeypatch.setattr("envscaler_mcp.catalog.findings.findings_lines", lambda provenance, verbose: [f"v={verbose}"])
    envs, scenarios, trajectories, out = (tmp_path / name for name in ("e.json", "s.json", "t.jsonl", "out"))
    trajectories.write_text("")
    result = CliRunner().invoke(app, [
        "import", "envscaler", "--envs", str(envs), "--scenarios", str(scenarios), "--out", str(out), "--skip-checks",
        "--trajectories", str(trajectories), "--transport", "pipe", "--success-convention", "no-error",
        "--coerce-arguments", "--verbose"])
    assert result.exit_code == 0, result.output
    assert seen["import"] == (envs, scenarios, out, {"skip_checks": True, "convention": "no-error", "contained": True})
    assert seen["attach"] == (out, ["shop"], trajectories, "pipe", True)
    assert "v=True" in result.output


def test_a_trajectories_path_that_is_no_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="file not found"):
        ImportOptions(envs=tmp_path / "e.json", trajectories=tmp_path / "none.jsonl").check()
    with pytest.raises(InputFileError, match="not a file"):
        ImportOptions(envs=tmp_path / "e.json", trajectories=tmp_path).check()
    ImportOptions(envs=tmp_path / "e.json").check()  # no trajectories: nothing to check

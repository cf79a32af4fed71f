"""Checklist item ids are unique in every scenario: the model refuses duplicates, so loading, importing,
`eval` and the gate all stop with one clear line instead of letting one verdict stand for two items."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from envscaler_mcp.catalog.store import load_scenarios
from envscaler_mcp.cli import main
from envscaler_mcp.errors import InputFileError
from envscaler_mcp.scenario.models import Scenario
from tests.qa.test_gate import scenario


def duplicated(tmp_path: Path) -> Path:
    """A scenario file whose one scenario has two items with the id 'c1' (written as raw JSON)."""
    record = json.loads(scenario().model_dump_json())
    record["checklist"] = [record["checklist"][0], {**record["checklist"][0], "description": "Another fact?"}]
    path = tmp_path / "dup.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return path


def test_the_model_refuses_repeated_item_ids(tmp_path: Path) -> None:
    record = json.loads(duplicated(tmp_path).read_text())
    with pytest.raises(ValidationError, match=r"checklist item ids must be unique within a scenario; repeated: 'c1' \(2 times\)"):
        Scenario.model_validate(record)


def test_loading_a_scenario_file_names_the_file_line_and_id(tmp_path: Path) -> None:
    path = duplicated(tmp_path)
    with pytest.raises(InputFileError, match=r"dup.jsonl: line 1: .*'c1' \(2 times\)"):
        load_scenarios(path)


@pytest.mark.parametrize("command", [["scenarios", "check", "--scenarios"], ["eval", "--agent", "oracle", "--scenarios"]])
def test_the_gate_and_eval_stop_with_one_clear_line(tmp_path: Path, command: list[str],
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = duplicated(tmp_path)
    monkeypatch.setattr(sys, "argv", ["envscaler-mcp", *command, str(path)])
    with pytest.raises(SystemExit) as stopped:
        main()
    err = capsys.readouterr().err
    assert stopped.value.code == 2, err
    assert err.startswith("error: ") and "checklist item ids must be unique" in err
    assert "Traceback" not in err

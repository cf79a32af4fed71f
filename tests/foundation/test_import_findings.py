"""`import envscaler` and `show` print what an import kept in provenance: static-check findings, tools whose
kind EnvScaler and our analysis disagree on, and the rest, as a count per group and the first few
(`--verbose`: all)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envscaler_mcp.catalog.findings import findings_lines
from envscaler_mcp.skeleton.models import Provenance
from tests.foundation._cli import os_layers, run_cli

ES = Path(__file__).resolve().parents[1] / "fixtures" / "envscaler"

LOUD = '''import os
import socket


class Loud:
    def __init__(self):
        self.items = {}

    def peek(self, key: str) -> dict:
        """Read an item."""
        open("/tmp/x").close()
        input()
        return {"success": True, "data": self.items.get(key)}

    def put(self, key: str) -> dict:
        """Store an item."""
        exit()
        self.items[key] = 1
        return {"success": True}
'''


def _envs(tmp_path: Path) -> Path:
    path = tmp_path / "envs.json"
    path.write_text(json.dumps({"loud": {
        "env_class_name": "Loud", "env_class_code": LOUD, "environment_summary": "Loud",
        "operation_list": [{"operation_name": "peek", "operation_type": "state_change"}]}}), encoding="utf-8")
    return path


def test_import_and_show_print_the_findings(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    os_layers(monkeypatch, on=False)  # every problem is a refusal, imported with --skip-checks
    out = tmp_path / "data"
    code, text = run_cli(["import", "envscaler", "--envs", str(_envs(tmp_path)), "--out", str(out), "--skip-checks"],
                      capsys)
    assert code == 0
    block = text.split("loud -> loud", 1)[1].split("imported 1 environment", 1)[0]
    lines = block.splitlines()[1:]
    (static,) = [i for i, line in enumerate(lines) if "static-check" in line]
    assert lines[static].startswith("  5 static-check")
    shown = [line for line in lines[static + 1:static + 4]]
    assert all(line.startswith("    - static check: line ") for line in shown)
    assert lines[static + 4] == "    ... 2 more (--verbose shows all)"
    assert "  1 tool-kind disagreement(s):" in lines
    assert any("tool 'peek': EnvScaler says state_change, static analysis says query" in line for line in lines)

    code, verbose = run_cli(["import", "envscaler", "--envs", str(_envs(tmp_path)), "--out", str(tmp_path / "d2"),
                          "--skip-checks", "--verbose"], capsys)
    assert code == 0 and verbose.count("    - static check: line ") == 5 and "more (--verbose" not in verbose

    code, shown_text = run_cli(["show", "loud", "--home", str(out)], capsys)
    assert code == 0 and "Findings" in shown_text and "... 2 more (--verbose shows all)" in shown_text
    assert "1 tool-kind disagreement(s)" in shown_text
    code, all_text = run_cli(["show", "loud", "--home", str(out), "--verbose"], capsys)
    assert all_text.count("- static check: line ") == 5


def test_an_environment_without_notes_prints_no_findings(capsys: pytest.CaptureFixture[str]) -> None:
    assert findings_lines(Provenance(source="hand-authored")) == []
    code, text = run_cli(["show", "library_loans"], capsys)  # bundled, hand-authored: no notes
    assert code == 0 and "Tools" in text and "Findings" not in text


def test_notes_are_grouped_by_kind() -> None:
    provenance = Provenance(source="envscaler-import", notes=[
        "determinism: line 3: uuid.uuid4() is not deterministic", "static check (warning): line 1: import of 'random'",
        "default state does not fit", "static check: line 2: call of 'eval()'"])
    assert findings_lines(provenance) == [
        "  1 static-check refusal(s) (imported with --skip-checks):", "    - static check: line 2: call of 'eval()'",
        "  1 static-check warning(s) (contained by the OS layers):",
        "    - static check (warning): line 1: import of 'random'",
        "  1 nondeterministic call(s):", "    - determinism: line 3: uuid.uuid4() is not deterministic",
        "  1 other note(s):", "    - default state does not fit"]

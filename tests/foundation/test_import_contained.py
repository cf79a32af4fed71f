"""Static checks on imported third-party code when the OS layers are on: what the layers contain is a
warning, what they cannot contain (the interpreter the code shares with the server runtime) still refuses
an environment. The code here is hand-written in the style of function-calling benchmarks; it is not data
from any benchmark. Containment is shown by effect: a warned tool that writes a file writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envscaler_mcp.catalog.store import load_skeleton
from envscaler_mcp.skeleton.checks import check_findings
from tests.foundation._cli import os_layers, run_cli

THIRD_PARTY = '''import random
from copy import deepcopy
from typing import Dict

DEFAULT_STATE = {"counter": 1, "queue": []}
DEFAULT_COPY = deepcopy(DEFAULT_STATE)


class Base:
    def __init__(self):
        self.created = True


class Queue(Base):
    def __init__(self):
        super().__init__()
        self.counter: int = 1
        self.queue: Dict[str, dict] = {}

    def peek(self, field: str) -> dict:
        """Read a field of the queue.

        Args:
            field: Attribute name.
        """
        return {"value": getattr(self, field), "fields": sorted(vars(self))}

    def draw(self) -> dict:
        """Draw a number."""
        return {"number": random.randint(1, 6)}
'''


def test_third_party_style_is_only_warned_about() -> None:
    findings = check_findings(THIRD_PARTY, "Queue")
    assert findings.refusals == []
    text = "\n".join(findings.warnings)
    for expected in ("import of 'random'", "may only assign constants", "inherits from Base",
                     "'getattr()' with a computed attribute name", "call of 'vars()'",
                     "dunder attribute '.__init__'"):  # super().__init__(): the parent's initialiser
        assert expected in text, expected


@pytest.mark.parametrize(("line", "why"), [
    ("import sys", "import of 'sys'"),
    ("import gc", "import of 'gc'"),
    ("x = self.__class__", "dunder attribute '.__class__'"),
    ("x = getattr(self, '__dict__')", "reaches a dunder attribute"),
    ("setattr(self, '__class__', dict)", "reaches a dunder attribute"),
    ("x = eval('1')", "call of 'eval()'"),
    ("x = globals()", "call of 'globals()'"),
    ("global SHARED", "shares state between every episode"),
])
def test_what_the_layers_cannot_contain_still_refuses(line: str, why: str) -> None:
    source = f"class E:\n    def __init__(self):\n        self.items = {{}}\n\n    def f(self) -> dict:\n" \
             f"        \"\"\"F.\"\"\"\n        {line}\n        return {{}}\n"
    findings = check_findings(source, "E")
    assert any(why in r for r in findings.refusals), findings


def test_a_base_class_from_elsewhere_still_refuses() -> None:
    source = "from collections import UserDict\n\n\nclass E(UserDict):\n    pass\n"
    assert any("inherits from UserDict" in r for r in check_findings(source, "E").refusals)


def _envs(tmp_path: Path, source: str, class_name: str) -> Path:
    path = tmp_path / "envs.json"
    path.write_text(json.dumps({"q": {"env_class_name": class_name, "env_class_code": source,
                                      "environment_summary": "Queue"}}), encoding="utf-8")
    return path


def test_the_import_warns_when_the_layers_are_on_and_refuses_when_not(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    envs = _envs(tmp_path, THIRD_PARTY, "Queue")
    os_layers(monkeypatch, on=True)
    code, text = run_cli(["import", "envscaler", "--envs", str(envs), "--out", str(tmp_path / "on")], capsys)
    assert code == 0, text
    assert "static checks: the OS layers are on" in text
    notes = load_skeleton(tmp_path / "on" / "environments" / "q" / "skeleton.json").provenance.notes
    assert any(n.startswith("static check (warning): ") and "import of 'random'" in n for n in notes)
    assert "static-check warning(s) (contained by the OS layers):" in text

    os_layers(monkeypatch, on=False)
    code, text = run_cli(["import", "envscaler", "--envs", str(envs), "--out", str(tmp_path / "off")], capsys)
    assert code == 1 and "static checks: the OS layers are not all in force here" in text
    assert "1 environment(s): failed the static checks" in text
    assert not (tmp_path / "off" / "environments" / "q").exists()


WRITER = '''import os


class Notes:
    def __init__(self):
        self.notes: dict = {}

    def save(self, path: str) -> dict:
        """Save the notes to a file.

        Args:
            path: Where to write.
        """
        with open(path, "w") as f:
            f.write("written")
        self.notes[path] = True
        return {"success": True}
'''


@pytest.mark.parametrize("transport", ["http", "memory"])
def test_a_warned_tool_that_writes_a_file_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch, transport: str) -> None:
    os_layers(monkeypatch, on=True)
    target = tmp_path / "outside" / "written.txt"
    target.parent.mkdir()
    scenarios = tmp_path / "scen.json"
    scenarios.write_text(json.dumps([{"env_id": "q", "task_id": "t1", "task": "Save the notes.",
                                      "init_config": {"notes": {}}}]), encoding="utf-8")
    trajectories = tmp_path / "traj.jsonl"
    trajectories.write_text(json.dumps({"task_info": {"env_id": "q", "task_id": "t1"}, "trajectory": [
        {"action": {"name": "save", "arguments": {"path": str(target)}},
         "observation": {"type": "tool", "content": "{'success': True}"}}]}) + "\n", encoding="utf-8")
    code, text = run_cli(["import", "envscaler", "--envs", str(_envs(tmp_path, WRITER, "Notes")), "--scenarios",
                          str(scenarios), "--trajectories", str(trajectories), "--transport", transport,
                          "--out", str(tmp_path / "data")], capsys)
    assert code == 0, text
    assert "0 attached" in text
    if transport == "memory":  # not run at all: the code would be outside the layers
        assert "may not run outside the OS layers" in text
    else:  # run confined: the write fails, so the call fails and nothing is attached
        assert "call 1 save" in text
    assert not target.exists()

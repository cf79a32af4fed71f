"""The authoring module: spec helpers, and gate-then-write through a real generated server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envscaler_mcp import authoring
from envscaler_mcp.authoring import call, item
from envscaler_mcp.catalog.store import load_scenarios
from envscaler_mcp.errors import UsageError
from envscaler_mcp.scenario.models import Scenario

COUNTER_SOURCE = '''"""A counter whose oversized bumps are refused after they were applied (the server must roll them back)."""


class Counter:
    """One counter."""

    def __init__(self):
        self.count: int = 0

    def bump(self, n: int) -> dict:
        """Add n to the counter.

        Args:
            n (int): How much to add; at most 5.

        Returns:
            dict: {"success": True, "message": str} or {"success": False, "error": str}
        """
        self.count += n
        if n > 5:
            return {"success": False, "error": "at most 5 at a time"}
        return {"success": True, "message": f"count is {self.count}"}

    def get_count(self) -> dict:
        """The counter's value.

        Returns:
            dict: {"success": True, "data": int}
        """
        return {"success": True, "data": self.count}
'''

META = {"id": "counter", "name": "Counter", "summary": "One counter", "class_name": "Counter",
        "introduction": "A single counter that can be bumped by small steps. It exists for the authoring tests."}


@pytest.fixture
def env_dir(tmp_path: Path) -> Path:
    """A catalog root in tmp_path with one authoring folder, environments/counter/."""
    folder = tmp_path / "environments" / "counter"
    folder.mkdir(parents=True)
    (folder / "environment.py").write_text(COUNTER_SOURCE, encoding="utf-8")
    (folder / "meta.json").write_text(json.dumps(META), encoding="utf-8")
    (folder / "default_state.json").write_text('{"count": 0}', encoding="utf-8")
    return folder


def reach_three(state: dict) -> Scenario:
    return authoring.scenario("counter", "Reach three", "Please bring the counter to 3.", state,
                              [item(1, "Is the counter at 3?", 'return final_state["count"] == 3')],
                              [call("get_count"), call("bump", n=3)])


def test_validator_sources_are_exact() -> None:
    assert authoring.body_validator('x = final_state["a"]\nreturn x == 1\n') == (
        'def check_func(final_state) -> bool:\n    x = final_state["a"]\n    return x == 1\n')
    helpers = {"new_a": "[1]", "new_b": "[2]"}
    assert authoring.expression_validator("len(new_b) == 1", helpers) == (
        "def check_func(final_state):\n    new_b = [2]\n    return bool(len(new_b) == 1)\n")
    [sc] = authoring.from_specs("counter", [{"title": "t", "task": "do it", "checklist": [
        ("Has a changed?", 'final_state["a"] == 2'), ("Has b stayed?", authoring.unchanged('["b"]'), False)],
        "solution": [("set_a", {"value": 2})]}], {"a": 1, "b": 0})
    assert [c.claims_change for c in sc.checklist] == [True, False]
    assert sc.checklist[1].validator == ("def check_func(final_state):\n"
                                         '    return bool(final_state["b"] == initial_state["b"])\n')
    assert sc.difficulty == 1 and sc.reference_solution[0].tool == "set_a" and sc.id == sc.compute_id()


def test_wrong_solutions_attach_by_title_and_refuse_typos() -> None:
    sc = reach_three({"count": 0})
    [with_wrong] = authoring.with_wrong_solutions([sc], {"Reach three": [("bump", {"n": 2})]})
    assert [[c.tool for c in w] for w in with_wrong.wrong_solutions] == [["bump"]]
    assert with_wrong.id == sc.id  # the content hash does not cover wrong solutions
    with pytest.raises(UsageError, match="no scenario has: \\['Reach 3'\\]"):
        authoring.with_wrong_solutions([sc], {"Reach three": [], "Reach 3": []})
    with pytest.raises(UsageError, match="no plausible wrong solution"):
        authoring.with_wrong_solutions([sc], {})
    assert authoring.with_wrong_solutions([sc], {}, require=False) == [sc]
    with pytest.raises(UsageError, match="repeated"):
        authoring.with_wrong_solutions([sc, sc], {"Reach three": []})


def test_main_gates_through_the_server_and_writes(env_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = env_dir.parents[1] / "scenarios" / "counter.jsonl"
    code = authoring.main(env_dir, [reach_three(authoring.default_state(env_dir))],
                          {"Reach three": [call("bump", n=2)]}, argv=["--transport", "memory"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "wrote 1 scenarios" in printed
    [saved] = load_scenarios(out)
    assert [[(c.tool, c.arguments) for c in w] for w in saved.wrong_solutions] == [[("bump", {"n": 2})]]


def test_a_refused_call_is_rolled_back_so_a_lenient_checklist_is_caught(
        env_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # bump(10) writes before it refuses; replayed in process without rollback the count would be 13 and the
    # checklist would look strict. Through the server the refused call leaves no trace, the count is 3, and
    # the wrong solution passes every validator: the gate rejects the scenario and nothing is written.
    out = env_dir.parents[1] / "scenarios" / "counter.jsonl"
    out.parent.mkdir()
    out.write_text("previous\n", encoding="utf-8")
    code = authoring.main(env_dir, [reach_three({"count": 0})], {"Reach three": [call("bump", n=10), call("bump", n=3)]},
                          argv=["--transport", "memory"])
    printed = capsys.readouterr().out
    assert code == 1
    assert "wrong_solutions: wrong solution 1 passes every validator; the checklist is too lenient" in printed
    assert "1 of 1 scenario(s) failed the gate; nothing written." in printed
    assert out.read_text(encoding="utf-8") == "previous\n"


def test_bad_input_is_one_line_and_exit_1(env_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = env_dir.parents[1] / "scenarios" / "counter.jsonl"
    code = authoring.main(env_dir, [reach_three({"count": 0})], {"Reach 3": [call("bump", n=2)]},
                          argv=["--check"])
    printed = capsys.readouterr().out
    assert code == 1 and not out.exists()
    assert printed.strip().splitlines() == ["error: wrong solutions for titles no scenario has: ['Reach 3']"]

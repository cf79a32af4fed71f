"""Importing third-party environments whose tools answer errors their own way: the success convention is
guessed from the code (or given), kept in the skeleton, and used by the replay that verifies trajectories.
The environment below is hand-written in the style of function-calling benchmarks (results without a
`success` key, errors as `{"error": ...}`); it is not data from any benchmark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envscaler_mcp.catalog.store import load_scenarios, load_skeleton
from tests.foundation._cli import run_cli

DESK = '''from typing import Dict


class TicketDesk:
    def __init__(self):
        self.tickets: Dict[str, dict] = {}

    def get_ticket(self, ticket_id: int) -> dict:
        """Get a ticket.

        Args:
            ticket_id: The ticket's number.
        """
        ticket = self.tickets.get(str(ticket_id))
        if ticket is None:
            return {"error": f"Ticket {ticket_id} not found."}
        return ticket

    def close_ticket(self, ticket_id: int) -> dict:
        """Close a ticket.

        Args:
            ticket_id: The ticket's number.
        """
        ticket = self.tickets.get(str(ticket_id))
        if ticket is None:
            return {"error": f"Ticket {ticket_id} not found."}
        ticket["status"] = "closed"
        return {"status": f"Ticket {ticket_id} has been closed successfully."}
'''
CLOSED = "def check_func(final_state):\n    return final_state['tickets']['1']['status'] == 'closed'\n"


def write_inputs(tmp_path: Path, calls: list[tuple[str, dict[str, object], str]]) -> list[str]:
    """env, scenario and trajectory files for the ticket desk; `calls`: (tool, arguments, recorded result)."""
    envs, scenarios, trajectories = tmp_path / "envs.json", tmp_path / "scen.json", tmp_path / "traj.jsonl"
    envs.write_text(json.dumps({"desk": {"env_class_name": "TicketDesk", "env_class_code": DESK,
                                         "environment_summary": "Ticket desk"}}), encoding="utf-8")
    scenarios.write_text(json.dumps([{
        "env_id": "desk", "task_id": "t1", "task": "Close ticket 1.",
        "init_config": {"tickets": {"1": {"id": 1, "status": "open"}}},
        "checklist_with_func": [{"check_item": "Ticket 1 is closed", "check_func": CLOSED}]}]), encoding="utf-8")
    steps = [{"step": 0, "observation": "Close ticket 1."}] + [
        {"action": {"name": tool, "arguments": args}, "observation": {"type": "tool", "content": result}}
        for tool, args, result in calls]
    trajectories.write_text(json.dumps({"task_info": {"env_id": "desk", "task_id": "t1"}, "trajectory": steps})
                            + "\n", encoding="utf-8")
    return ["import", "envscaler", "--envs", str(envs), "--scenarios", str(scenarios), "--trajectories",
            str(trajectories), "--transport", "memory"]


RECORDED = [("get_ticket", {"ticket_id": 9}, "{'error': 'Ticket 9 not found.'}"),
            ("get_ticket", {"ticket_id": 1}, "{'id': 1, 'status': 'open'}"),
            ("close_ticket", {"ticket_id": 1}, "{'status': 'Ticket 1 has been closed successfully.'}")]


def test_results_without_a_success_key_attach_under_the_guessed_convention(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "data"
    code, text = run_cli([*write_inputs(tmp_path, RECORDED), "--out", str(out)], capsys)
    assert code == 0, text
    skeleton = load_skeleton(out / "environments" / "desk" / "skeleton.json")
    assert skeleton.success_convention == "error-field"
    assert "success convention: error-field" in text  # shown with the findings
    assert "1 attached" in text
    (scenario,) = load_scenarios(out / "scenarios" / "desk.jsonl")
    # the call whose recorded result was an error is left out, as the server rolls failed calls back
    assert [(c.tool, c.arguments) for c in scenario.reference_solution] == [
        ("get_ticket", {"ticket_id": 1}), ("close_ticket", {"ticket_id": 1})]


def test_the_convention_given_at_import_is_the_one_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "data"
    code, text = run_cli([*write_inputs(tmp_path, RECORDED), "--out", str(out), "--success-convention", "envscaler"],
                      capsys)
    assert code == 0, text
    assert load_skeleton(out / "environments" / "desk" / "skeleton.json").success_convention == "envscaler"
    assert "0 attached" in text
    # under EnvScaler's convention every recorded result here is a failure, so no call is left: the initial
    # state fails the checklist
    assert "the final state fails c1" in text


def test_an_error_the_replay_gets_is_a_failed_call_under_error_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the trajectory recorded success for closing ticket 2, which this scenario's state does not have
    calls = [("close_ticket", {"ticket_id": 2}, "{'status': 'Ticket 2 has been closed successfully.'}")]
    code, text = run_cli([*write_inputs(tmp_path, calls), "--out", str(tmp_path / "data")], capsys)
    assert code == 0
    assert "0 attached" in text and "call 1 close_ticket" in text and "error: Ticket 2 not found." in text


def test_arguments_that_do_not_fit_are_a_data_problem_naming_call_argument_and_types(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    calls = [("get_ticket", {"ticket_id": 1}, "{'id': 1, 'status': 'open'}"),
             ("close_ticket", {"ticket_id": "ticket_001"}, "{'status': 'Ticket 1 has been closed successfully.'}")]
    code, text = run_cli([*write_inputs(tmp_path, calls), "--out", str(tmp_path / "data"), "--coerce-arguments"],
                         capsys)
    assert code == 0
    assert "0 attached" in text
    assert ("data problem: call 2 close_ticket: argument 'ticket_id': expected integer, given 'ticket_001' (str)"
            in text)
    assert "1 trajectory(ies): a call's arguments do not fit its tool's schema" in text


def test_coercion_is_opt_in_lossless_and_recorded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    calls = [("close_ticket", {"ticket_id": "001"}, "{'status': 'Ticket 1 has been closed successfully.'}")]
    code, text = run_cli([*write_inputs(tmp_path, calls), "--out", str(tmp_path / "plain")], capsys)
    assert code == 0 and "0 attached" in text
    assert "argument 'ticket_id': expected integer, given '001' (str) (--coerce-arguments converts" in text

    out = tmp_path / "coerced"
    code, text = run_cli([*write_inputs(tmp_path, calls), "--out", str(out), "--coerce-arguments"], capsys)
    assert code == 0 and "1 attached" in text, text
    assert "converted: scenario sc-" in text and "ticket_id: '001' (str) -> 1" in text
    (scenario,) = load_scenarios(out / "scenarios" / "desk.jsonl")
    assert [(c.tool, c.arguments) for c in scenario.reference_solution] == [("close_ticket", {"ticket_id": 1})]
    assert scenario.provenance.notes == [
        "argument: call 1 close_ticket: ticket_id: '001' (str) -> 1 (--coerce-arguments)"]


@pytest.mark.parametrize(("value", "wanted", "expected"), [
    ("001", "int", 1), ("-12", "int", -12), ("2.50", "float", 2.5), ("TRUE", "bool", True), (7, "str", "7")])
def test_lossless_conversions(value: object, wanted: str, expected: object) -> None:
    assert _coerce(value, wanted) == (expected, True)


@pytest.mark.parametrize(("value", "wanted"), [
    ("ticket_001", "int"), ("1e3", "int"), (" 1", "int"), ("1.5", "int"), (2.5, "int"), ("yes", "bool"),
    (True, "int"), ("", "float")])
def test_lossy_conversions_are_refused(value: object, wanted: str) -> None:
    assert _coerce(value, wanted) == (value, False)


def _coerce(value: object, wanted: str) -> tuple[object, bool]:
    from envscaler_mcp.skeleton.arguments import argument_problems, coerce_arguments
    from envscaler_mcp.skeleton.schema import extract_tools

    source = (f"class T:\n    def __init__(self):\n        self.x = 0\n\n    def f(self, v: {wanted}) -> dict:\n"
              "        \"\"\"F.\n\n        Args:\n            v: A value.\n        \"\"\"\n        return {}\n")
    (tool,) = extract_tools(source, "T")
    coerced, changes = coerce_arguments(tool, {"v": value})
    assert bool(changes) == (not argument_problems(tool, coerced)) or coerced == {"v": value}
    return coerced["v"], bool(changes)

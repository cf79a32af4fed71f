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

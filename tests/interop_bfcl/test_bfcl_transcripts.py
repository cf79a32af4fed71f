"""`bfcl_agreement.py --transcripts RUN_DIR`: a run's recorded episodes on the BFCL pack, cut into BFCL's shape
(per user turn, per model step) and judged by BFCL's own checker beside the run's verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.bfcl_checker import bfcl_checker
from benchmarks.bfcl_transcripts import (
    bfcl_decoded,
    judge_run,
    our_first_failing_turn,
    steps_of,
    transcript_report,
)
from envscaler_mcp.interop.bfcl.importer import import_bfcl
from envscaler_mcp.interop.bfcl.source import BfclSource
from tests.foundation.test_cli_errors import run_main

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "bfcl"
ENVS = "bfcl_gorillafilesystem_mathapi,bfcl_ticketapi_travelapi"


def call(name: str, rejected: str | None = None, **arguments: Any) -> dict[str, Any]:
    return {"id": name, "name": name, "arguments": arguments, "rejected": rejected}


def test_calls_are_cut_per_user_turn_and_per_step() -> None:
    record = {"messages": [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "turn 1"},
        {"role": "assistant", "tool_calls": [call("ls", a=True), call("cd", folder="x")]},
        {"role": "tool", "content": "{}"}, {"role": "tool", "content": "{}"},
        {"role": "assistant", "tool_calls": [call("cat", file_name="f"), call("wc", rejected="not an object")]},
        {"role": "tool", "content": "{}"},
        {"role": "assistant", "content": "done", "tool_calls": []},
        {"role": "user", "content": "turn 2"},
        {"role": "assistant", "content": "I cannot", "tool_calls": []},
        {"role": "user", "content": "turn 3"},
        {"role": "assistant", "tool_calls": [call("mean", numbers=[1, 2.5])]},
    ]}
    steps = steps_of(record, 4)  # the fourth turn was never reached
    assert [[[c.tool for c in s] for s in turn] for turn in steps] == [[["ls", "cd"], ["cat"]], [], [["mean"]], []]
    assert bfcl_decoded(steps) == [[["ls(a=True)", "cd(folder='x')"], ["cat(file_name='f')"]], [],
                                   [["mean(numbers=[1, 2.5])"]], []]


def test_our_first_failing_turn_is_the_earliest_failed_response_or_state_check() -> None:
    record = {"checks": [{"id": "turn1", "status": "pass"}, {"id": "turn3", "status": "fail"},
                         {"id": "other", "status": "fail"}],
              "turns": [{"turn": 1, "state_check": "pass"}, {"turn": 2, "state_check": "fail"},
                        {"turn": 3, "state_check": "fail"}]}
    assert our_first_failing_turn(record) == 2
    record["turns"][1]["state_check"] = "pass"
    assert our_first_failing_turn(record) == 3
    assert our_first_failing_turn({"checks": [{"id": "turn1", "status": "pass"}], "turns": []}) is None


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_recorded_run_is_judged_by_both_checkers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home, run = tmp_path / "home", tmp_path / "run"
    import_bfcl(FIXTURE, home, ["base"])
    code, out, err = run_main(["eval", "--home", str(home), "--env", ENVS, "--agent", "oracle", "--no-progress",
                               "--out", str(run)], capsys)
    assert code == 0, out + err
    checker = bfcl_checker(FIXTURE)
    judged, skipped = judge_run(run, home, BfclSource(FIXTURE), checker)
    assert skipped == 0 and sorted(j.task for j in judged) == ["multi_turn_base_15", "multi_turn_base_173"]
    assert all(j.ours and j.bfcl for j in judged), judged  # the ground truth, MathAPI's and task 173's, passes both
    assert all(j.our_turn is None and j.bfcl_turn is None for j in judged)
    assert "accuracy: ours 2/2, BFCL's checker 2/2; agreement 2/2" in transcript_report(judged, skipped)
    # the same run with the last turn's calls gone (an agent that answered without acting): BFCL fails it too
    records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    for record in records:
        last_user = max(n for n, m in enumerate(record["messages"]) if m["role"] == "user")
        record["messages"] = [*record["messages"][:last_user + 1], {"role": "assistant", "content": "done"}]
        record["success"] = False
    records.append({**records[0], "status": "infra_error", "scorable": False})
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    judged, skipped = judge_run(run, home, BfclSource(FIXTURE), checker)
    assert skipped == 1 and len(judged) == 2
    assert not any(j.bfcl for j in judged) and {j.bfcl_reason for j in judged} == {
        "multi_turn:empty_turn_model_response"}
    turns = {"multi_turn_base_15": 5, "multi_turn_base_173": 4}  # BFCL fails the last turn, the emptied one
    assert {j.task: j.bfcl_turn for j in judged} == turns
    assert "agreement 2/2" in transcript_report(judged, skipped)

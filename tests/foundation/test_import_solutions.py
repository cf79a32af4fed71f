"""`import envscaler --trajectories`: reference solutions from EnvScaler trajectories, attached only when a replay
reproduces them. The trajectory file (tests/fixtures/envscaler/trajectories.json) is hand-written in the shapes
EnvScaler's code writes; it is not EnvScaler data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from envscaler_mcp._json import initial_states
from envscaler_mcp.catalog.store import load_scenarios, scenario_index
from envscaler_mcp.cli import main
from envscaler_mcp.interop.trajectories import iter_trajectories, trajectory_from_item

ES = Path(__file__).resolve().parents[1] / "fixtures" / "envscaler"
ENVS, SCENARIOS, TRAJECTORIES = ES / "env_metadata.json", ES / "scenario_metadata.json", ES / "trajectories.json"


def _import(out: Path, trajectories: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    args = ["import", "envscaler", "--envs", str(ENVS), "--scenarios", str(SCENARIOS), "--out", str(out),
            "--trajectories", str(trajectories), "--transport", "memory"]
    try:
        main(args)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out_text, err = capsys.readouterr()
    return code, out_text, err


def _by_task(out: Path, env: str) -> dict[str, list[tuple[str, dict[str, object]]]]:
    return {s.task: [(c.tool, c.arguments) for c in s.reference_solution]
            for s in load_scenarios(out / "scenarios" / f"{env}.jsonl")}


def test_verified_solutions_are_attached_and_the_rest_reported(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "data"
    code, text, err = _import(out, TRAJECTORIES, capsys)
    assert code == 0, err
    assert "2 attached" in text and "2 not verified" in text
    assert "skipped 3 item(s):" in text  # 2 not verified (each with its reason), 1 of no imported scenario
    assert "  1 trajectory(ies): no imported scenario has its task" in text and "1 trajectory(ies) of no imported scenario" in text
    library = _by_task(out, "env_1")
    (solution,) = library.values()
    # the first trajectory (borrow only) fails the checklist's fine item; the second is attached without its
    # failed call (M2 has fines)
    assert solution == [("get_book", {"book_id": "B1"}), ("borrow_book", {"member_id": "M1", "book_id": "B1"}),
                        ("add_fine", {"member_id": "M2", "amount": 1.5})]
    parking = _by_task(out, "env_2")
    assert parking["Park car CD-456 in S1."] == [("list_free_spots", {}),
                                                 ("park", {"spot_id": "S1", "plate": "CD-456"})]
    assert parking["Park the car with plate AB-123 in a free spot."] == []
    lines = [line for line in text.splitlines() if line.startswith("  not attached:")]
    assert len(lines) == 2
    assert "trajectory #0 (task_id 0923-141502)" in lines[0] and "the final state fails c2" in lines[0]
    assert "trajectory #2" in lines[1] and "Spot taken" in lines[1]
    rows = {r["title"]: r["solution_calls"] for r in scenario_index(out / "scenarios" / "env_2.jsonl")}
    assert rows == {"Park the car with plate AB-123 in a free spot": 0, "Park car CD-456 in S1": 2}  # titles from tasks
    assert json.loads((out / "scenarios" / "env_2.index.json").read_text())["scenarios"]  # the index was rewritten
    assert not list(out.rglob(".*.tmp"))


def test_a_recorded_result_the_replay_does_not_reproduce_is_not_attached(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    items = json.loads(TRAJECTORIES.read_text(encoding="utf-8"))
    item = items[3]
    item["trajectory"][1]["observation"]["content"] = "{'success': True, 'data': ['S1', 'S9']}"
    path = tmp_path / "t.json"
    path.write_text(json.dumps([item]), encoding="utf-8")
    code, text, err = _import(tmp_path / "data", path, capsys)
    assert code == 0, err
    assert "0 attached" in text
    assert "call 1 list_free_spots returned" in text and "'S9'" in text
    assert all(not calls for calls in _by_task(tmp_path / "data", "env_2").values())


def test_an_item_that_is_not_a_trajectory_is_skipped_and_counted(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.jsonl"
    good = json.loads(TRAJECTORIES.read_text(encoding="utf-8"))[3]
    path.write_text(json.dumps({"messages": []}) + "\n" + json.dumps(good) + "\n", encoding="utf-8")
    code, text, err = _import(tmp_path / "data", path, capsys)
    assert code == 0, err  # one bad item does not fail the import
    assert "Traceback" not in err
    assert [line for line in err.splitlines() if line.startswith("skipped:")] == [
        f"skipped: {path}: item #0: no task_info.env_id"]
    assert "1 attached" in text  # the good line still counts
    assert "skipped 1 item(s):\n  1 trajectory(ies): no task_info.env_id" in text


def test_a_trajectory_file_with_no_trajectory_is_counted_not_fatal(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"messages": []}) + "\n" + json.dumps({"task_info": {}}) + "\n", encoding="utf-8")
    code, text, err = _import(tmp_path / "data", path, capsys)
    assert code == 0  # the environments and scenarios were imported: something usable
    assert "error:" not in err and len([line for line in err.splitlines() if line.startswith("skipped:")]) == 2
    assert "skipped 2 item(s):\n  2 trajectory(ies): no task_info.env_id" in text
    assert "imported 2 environment(s)" in text


def test_a_trajectory_without_calls_is_a_reference_that_makes_none(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.jsonl"
    nothing_needed = {"task_info": {"env_id": "env_2", "task_id": "0923-141503"},
                      "trajectory": [{"step": 0, "observation": "Park the car with plate AB-123 in a free spot."}]}
    nothing_done = {"task_info": {"env_id": "env_1", "task_id": "0923-141502"}, "messages": [
        {"role": "user", "content": "Ada wants Dune."}, {"role": "assistant", "content": "Done."}]}
    path.write_text(json.dumps(nothing_needed) + "\n" + json.dumps(nothing_done) + "\n", encoding="utf-8")
    code, text, err = _import(tmp_path / "data", path, capsys)
    assert code == 0, err
    assert "1 attached" in text and "1 not verified" in text
    # the library task needs calls: making none leaves a state its validators reject
    assert "trajectory #1 (task_id 0923-141502)" in text and "the final state fails" in text
    assert "1 trajectory(ies): the replayed final state fails the checklist" in text
    (parked,) = [s for s in load_scenarios(tmp_path / "data" / "scenarios" / "env_2.jsonl")
                 if s.provenance.source_id == "0923-141503"]
    assert parked.reference_solution == [] and parked.reference_makes_no_calls and parked.has_reference()
    (library,) = load_scenarios(tmp_path / "data" / "scenarios" / "env_1.jsonl")
    assert not library.has_reference()
    assert "reference_makes_no_calls" not in (tmp_path / "data" / "scenarios" / "env_1.jsonl").read_text()


def test_trajectory_shapes() -> None:
    parsed = dict(iter_trajectories(TRAJECTORIES))
    assert [c.tool for c in parsed[1].calls] == ["get_book", "borrow_book", "borrow_book", "add_fine"]  # type: ignore[union-attr]
    assert parsed[1].calls[2].result == "{'success': True, 'message': 'Book borrowed'}"  # type: ignore[union-attr]
    conversation = trajectory_from_item(0, {"task_info": {"env_id": "e"}, "messages": [
        {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "chat_with_user",
                                                                      "arguments": {"content": "hi"}}}]},
        {"role": "assistant", "tool_calls": [{"id": "b", "function": {"name": "f", "arguments": "{}"}}]}]})
    assert not isinstance(conversation, str)
    assert [(c.tool, c.result) for c in conversation.calls] == [("f", None)]
    assert trajectory_from_item(0, {"task_info": {"env_id": "e"}}) == "neither 'messages' nor 'trajectory' holds the calls"
    no_calls = trajectory_from_item(0, {"task_info": {"env_id": "e"}, "trajectory": [{"step": 0}]})
    assert not isinstance(no_calls, str) and no_calls.calls == []
    bad_args = trajectory_from_item(0, {"task_info": {"env_id": "e"}, "trajectory": [
        {"action": {"name": "f", "arguments": "not json"}}]})
    assert bad_args == "step 0 has an action without a name or with arguments that are not an object"


def test_prompt_mode_conversation() -> None:
    # hand-written, in the shape EnvScaler's agent writes in prompt mode
    item = {"task_info": {"env_id": "env_2", "task": "Park car CD-456 in S1."}, "messages": [
        {"role": "user", "content": "Park car CD-456 in S1."},
        {"role": "assistant", "content": 'Free spots first.\n<tool_call>\n{"name": "list_free_spots", '
                                         '"arguments": {}}\n</tool_call>'},
        {"role": "user", "content": "<tool_response>\n{'success': True, 'data': ['S1']}\n</tool_response>"},
        {"role": "assistant", "content": '<tool_call>{"name": "park", "arguments": {"spot_id": "S1", '
                                         '"plate": "CD-456"}}</tool_call>'},
        {"role": "user", "content": "<tool_response>\n{'success': True, 'message': 'Parked'}\n</tool_response>"},
        {"role": "assistant", "content": "Task Completed"}]}
    parsed = trajectory_from_item(0, item)
    assert not isinstance(parsed, str)
    assert [(c.tool, c.arguments, c.result) for c in parsed.calls] == [
        ("list_free_spots", {}, "{'success': True, 'data': ['S1']}"),
        ("park", {"spot_id": "S1", "plate": "CD-456"}, "{'success': True, 'message': 'Parked'}")]
    broken = trajectory_from_item(0, {"task_info": {"env_id": "e"}, "messages": [
        {"role": "assistant", "content": "<tool_call>{not json}</tool_call>"}]})
    assert broken == "message 0 has a tool call without a name or with arguments that are not an object"


def test_a_server_that_does_not_start_leaves_the_files_and_is_reported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import anyio

    from envscaler_mcp.interop.stream_import import stream_import
    from envscaler_mcp.qa import solutions

    out = tmp_path / "data"
    stream_import(ENVS, SCENARIOS, out)
    before = {p: p.read_bytes() for p in sorted((out / "scenarios").iterdir())}

    def no_server(*_args: object, **_kwargs: object) -> object:
        raise RuntimeError("port in use")

    monkeypatch.setattr(solutions, "launch_server", no_server)
    report = anyio.run(lambda: solutions.attach_solutions(out, ["env_1", "env_2"], TRAJECTORIES,
                                                          transport="memory"))
    assert report.attached == []
    assert report.unverified == [
        "environment env_1: its trajectories were not replayed (RuntimeError: port in use)",
        "environment env_2: its trajectories were not replayed (RuntimeError: port in use)"]
    assert report.unmatched == 1  # only the trajectory of an environment that was not imported
    assert {p: p.read_bytes() for p in sorted((out / "scenarios").iterdir())} == before


def test_skipped_items_are_counted_by_kind_and_reason() -> None:
    from envscaler_mcp.interop.skips import Skipped, reason_group, summary_lines

    skips = [Skipped("trajectory", reason_group("message 3 is not an object"), "a"),
             Skipped("trajectory", reason_group("message 12 is not an object"), "b"),
             Skipped("scenario", "env_id not in the env file", "c", count=4),
             Skipped("environment", "failed the static checks", "d")]
    assert summary_lines(skips) == ["skipped 7 item(s):", "  4 scenario(s): env_id not in the env file",
                                    "  2 trajectory(ies): message N is not an object",
                                    "  1 environment(s): failed the static checks"]
    assert summary_lines([]) == []


# The child's peak RSS is its VmHWM: its ru_maxrss would count the memory of this process before the exec.
_ATTACH = """
import asyncio, sys
from pathlib import Path
from envscaler_mcp.interop.stream_import import stream_import
from envscaler_mcp.qa.solutions import attach_solutions
out, envs, scenarios, trajectories = (Path(a) for a in sys.argv[1:5])
envs_written = [e.id for e in stream_import(envs, scenarios, out).envs]
report = asyncio.run(attach_solutions(out, envs_written, trajectories, transport="memory"))
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:")).split()[1]
print(len(report.attached), report.unmatched, int(hwm) * 1024)
"""
RESULT_MB = 1


def _attach_peak(root: Path, others: int) -> tuple[int, int, int]:
    """(attached, unmatched, peak RSS in bytes) of a child process that imports the fixture set and attaches the
    fixture's trajectories read from a file that also holds `others` rollout records of env_1 for tasks no
    scenario has, each with a recorded result of RESULT_MB MB."""
    items = json.loads(TRAJECTORIES.read_text(encoding="utf-8"))
    path = root / f"t{others}.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for item in items:
            f.write(json.dumps(item) + "\n")
        for k in range(others):
            f.write(json.dumps({"task_info": {"env_id": "env_1", "task_id": f"other-{k}", "task": f"Task {k}."},
                                "trajectory": [{"step": 1, "action": {"name": "get_book", "arguments": {"book_id": "B1"}},
                                                "observation": {"type": "tool",
                                                                "content": f"{k}" + "x" * RESULT_MB * 10**6}}]}) + "\n")
    proc = subprocess.run([sys.executable, "-c", _ATTACH, str(root / f"data{others}"), str(ENVS), str(SCENARIOS),
                           str(path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    attached, unmatched, peak = proc.stdout.split()
    return int(attached), int(unmatched), int(peak)


@pytest.mark.timeout(600)
def test_the_trajectory_file_is_not_held_in_memory(tmp_path: Path) -> None:
    """Trajectories of imported environments wait on disk, not in memory, until their environment's replay:
    48 extra records of 1 MB each leave the peak RSS where 2 leave it (+1 MB measured; +46 MB when they were
    kept in memory)."""
    few = _attach_peak(tmp_path, 2)
    many = _attach_peak(tmp_path, 48)
    assert few[:2] == (2, 3) and many[:2] == (2, 49)  # the fixture's 2 attached; its 1 and the others unmatched
    assert many[2] - few[2] < 16 * RESULT_MB * 10**6, (few[2] / 1e6, many[2] / 1e6)


def test_replayed_scenarios_leave_no_state_in_the_encoded_cache(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Each scenario is read with its initial state's text (a ParsedState), which the process's cache of
    encoded states does not remember: remembered, every replayed state stayed alive (up to 64 MB of text, about
    ten times that in objects: the import's memory grew to hundreds of MB on 1.3 MB states)."""
    remembered = len(initial_states())
    code, text, err = _import(tmp_path / "data", TRAJECTORIES, capsys)
    assert code == 0, err
    assert "2 attached" in text and "2 not verified" in text  # four replays, each checked by the validators
    assert len(initial_states()) == remembered

"""A run plans from the scenario file's index and reads each scenario's initial state only when its episode
starts; the lines it does not run are never parsed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from envscaler_mcp.catalog.paths import environments_dir, scenarios_dir
from envscaler_mcp.catalog.store import index_path, load_scenarios, save_scenarios
from envscaler_mcp.errors import InputFileError, UsageError
from envscaler_mcp.harness.config import RunConfig, build_plan

ENV = "library_loans"


@pytest.fixture
def skeleton_dir(tmp_path: Path) -> Path:
    """A skeleton folder with its scenarios beside it, and the scenario file's index."""
    folder = tmp_path / ENV
    shutil.copytree(environments_dir() / ENV, folder)
    save_scenarios(load_scenarios(scenarios_dir() / f"{ENV}.jsonl"), folder / "scenarios.jsonl", index=True)
    return folder


def load_scenarios_from_index(path: Path) -> list[dict[str, object]]:
    """The index's rows (its headers), in file order."""
    return [dict(row["header"], id=row["id"]) for row in json.loads(index_path(path).read_text())["scenarios"]]


def _garble_line(path: Path, number: int) -> None:
    """Replace line `number` (1-based) with invalid JSON of the same length, keeping the file's size and mtime
    (so the index still describes it)."""
    stat = path.stat()
    lines = path.read_bytes().split(b"\n")
    lines[number - 1] = b"{" * len(lines[number - 1])
    path.write_bytes(b"\n".join(lines))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_plan_holds_headers_and_reads_full_scenarios_on_demand(skeleton_dir: Path) -> None:
    full = load_scenarios(skeleton_dir / "scenarios.jsonl")
    (plan,) = build_plan(RunConfig(envs=[str(skeleton_dir)], agent="mock", limit=3))
    assert plan.scenarios == [] and plan.scenario_ids() == [s.id for s in full[:3]] and plan.count() == 3
    headers = plan.headers()  # read back when the environment's turn comes
    assert [s.id for s in headers] == [s.id for s in full[:3]]
    assert all(s.initial_state == {} for s in headers)  # the large part is not held
    assert [plan.full(s) for s in headers] == full[:3]


def test_lines_outside_the_selection_are_not_parsed(skeleton_dir: Path) -> None:
    path = skeleton_dir / "scenarios.jsonl"
    wanted = load_scenarios(path)[1].id
    _garble_line(path, 4)
    (plan,) = build_plan(RunConfig(envs=[str(skeleton_dir)], agent="mock", limit=3))
    assert len(plan.headers()) == 3
    (plan,) = build_plan(RunConfig(envs=[str(skeleton_dir)], agent="mock", scenario_ids=[wanted]))
    assert [s.id for s in plan.headers()] == [wanted]
    (plan,) = build_plan(RunConfig(envs=[str(skeleton_dir)], agent="mock"))  # the index has every header
    assert [s.id for s in plan.headers()] == [str(row["id"]) for row in load_scenarios_from_index(path)]
    # the garbled line is read only when its episode starts, and its bytes are not what the index says
    with pytest.raises(UsageError, match=r"changed while the run was using it or since its index"):
        plan.full(plan.headers()[3])
    index_path(path).unlink()
    with pytest.raises(InputFileError, match="line 4"):  # without the index every line is parsed
        build_plan(RunConfig(envs=[str(skeleton_dir)], agent="mock"))


def test_a_file_changed_during_the_run_is_an_error_not_another_scenario(skeleton_dir: Path) -> None:
    path = skeleton_dir / "scenarios.jsonl"
    (plan,) = build_plan(RunConfig(envs=[str(skeleton_dir)], agent="mock", limit=2))
    headers = plan.headers()
    scenarios = load_scenarios(path)
    save_scenarios([scenarios[1], scenarios[0], *scenarios[2:]], path)
    with pytest.raises(UsageError, match="changed while the run was using it"):
        plan.full(headers[0])
    with pytest.raises(UsageError, match="changed while the run was using it"):  # nor are its headers read again
        plan.headers()


def test_plan_hashes_follow_the_initial_states(skeleton_dir: Path) -> None:
    path = skeleton_dir / "scenarios.jsonl"
    before = build_plan(RunConfig(envs=[str(skeleton_dir)], agent="mock"))[0].hashes
    scenarios = load_scenarios(path)
    changed = scenarios[0].model_copy(update={"initial_state": {**scenarios[0].initial_state, "extra": 1}})
    save_scenarios([changed, *scenarios[1:]], path)
    after = build_plan(RunConfig(envs=[str(skeleton_dir)], agent="mock"))[0].hashes
    assert after["scenarios"] != before["scenarios"] and after["validators"] == before["validators"]


def test_trials_of_a_scenario_read_its_line_once(skeleton_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's trials of one scenario come one after another: the line read for the first is kept (up to a total
    of line bytes; a line over a quarter of it never is), so the others neither read nor parse it again."""
    from envscaler_mcp.catalog import store

    monkeypatch.setattr(store, "_RECENT", store._Recent(4 << 20))
    (plan,) = build_plan(RunConfig(envs=[str(skeleton_dir)], agent="mock", limit=3))
    headers = plan.headers()
    first = plan.full(headers[0])
    (skeleton_dir / "scenarios.jsonl").unlink()  # a second read would fail now
    again = plan.full(headers[0])
    assert again is first and again.initial_state == first.initial_state and first.initial_state
    with pytest.raises(InputFileError):  # never read: not kept
        plan.full(headers[1])

    monkeypatch.setattr(store, "_RECENT", store._Recent(4 * plan.lines[headers[0].id].length - 1))
    shutil.copy(scenarios_dir() / f"{ENV}.jsonl", skeleton_dir / "scenarios.jsonl")
    (plan,) = build_plan(RunConfig(envs=[str(skeleton_dir)], agent="mock", limit=3))
    headers = plan.headers()
    plan.full(headers[0])  # over a quarter of the bound: read each time
    (skeleton_dir / "scenarios.jsonl").unlink()
    with pytest.raises(InputFileError):
        plan.full(headers[0])


def test_a_line_parsed_for_the_listing_is_not_parsed_again_for_its_episode(
        skeleton_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an index the run's listing of an environment parses its lines; each scenario is kept in full
    then (within the bound of lines read lately), so its episode neither reads nor parses the line again, and
    gets what reading it would give."""
    from envscaler_mcp._json import ParsedState
    from envscaler_mcp.catalog import store

    path = skeleton_dir / "scenarios.jsonl"
    index_path(path).unlink()
    expected = {s.id: s for s in load_scenarios(path)}
    monkeypatch.setattr(store, "_RECENT", store._Recent(4 << 20))
    (plan,) = build_plan(RunConfig(envs=[str(skeleton_dir)], agent="mock", limit=3))
    headers = plan.headers()
    assert all(h.initial_state == {} for h in headers)
    path.unlink()  # a read would fail now
    for header in headers:
        full = plan.full(header)
        assert isinstance(full.initial_state, ParsedState)
        assert full == expected[header.id] and full.model_copy(update={"initial_state": {}}) == header

    monkeypatch.setattr(store, "_RECENT", store._Recent(0))  # nothing kept: the episode reads its line
    shutil.copy(scenarios_dir() / f"{ENV}.jsonl", path)
    (plan,) = build_plan(RunConfig(envs=[str(skeleton_dir)], agent="mock", limit=3))
    headers = plan.headers()
    path.unlink()
    with pytest.raises(InputFileError):
        plan.full(headers[0])


def test_kept_lines_stay_within_their_byte_bound() -> None:
    from envscaler_mcp.catalog import store

    recent = store._Recent(100)
    scenarios = load_scenarios(scenarios_dir() / f"{ENV}.jsonl")[:4]
    for k, scenario in enumerate(scenarios):
        recent.put(("f", k, "d"), scenario, 24)  # 96 bytes: all four kept
    assert recent.get(("f", 1, "d")) is scenarios[1]  # now the most recently used
    recent.put(("f", 9, "d"), scenarios[0], 24)  # 120 bytes: the least recently used (0) goes
    recent.put(("f", 10, "d"), scenarios[0], 24)  # and then 2
    assert [recent.get(("f", k, "d")) is not None for k in (0, 1, 2, 3, 9, 10)] == [False, True, False, True,
                                                                                    True, True]
    recent.put(("f", 11, "d"), scenarios[0], 26)  # over a quarter of the bound: never kept
    assert recent.get(("f", 11, "d")) is None


def test_an_episode_gets_its_initial_state_with_the_text_read(skeleton_dir: Path) -> None:
    """The state file and the validators get the initial state's bytes as the line holds them, never a fresh
    encoding of every episode's copy."""
    from envscaler_mcp._json import ParsedState, encode_json

    (plan,) = build_plan(RunConfig(envs=[str(skeleton_dir)], agent="mock", limit=2))
    scenario = plan.full(plan.headers()[1])
    line = plan.lines[scenario.id]
    with open(skeleton_dir / "scenarios.jsonl", "rb") as f:
        f.seek(line.offset)
        raw = f.read(line.length)
    state = scenario.initial_state
    assert isinstance(state, ParsedState) and encode_json(state) in raw
    assert state == json.loads(raw)["initial_state"] and scenario.id == plan.scenario_ids()[1]


def test_a_plan_made_from_an_index_with_line_places_reads_no_scenario_file(skeleton_dir: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = skeleton_dir / "scenarios.jsonl"
    rows = json.loads(index_path(path).read_text())["scenarios"]
    assert all(len(row["line"]) == 3 for row in rows)  # written with the index
    opened: list[str] = []
    real_open = Path.open

    def spy(self: Path, *args: object, **kwargs: object) -> object:
        opened.append(self.name)
        return real_open(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "open", spy)
    (plan,) = build_plan(RunConfig(envs=[str(skeleton_dir)], agent="mock"))
    assert plan.count() == len(rows) and "scenarios.jsonl" not in opened
    headers = plan.headers()
    assert "scenarios.jsonl" not in opened
    third = plan.full(headers[2])  # the episode reads its line, checked against its digest
    assert opened.count("scenarios.jsonl") == 1
    assert third == load_scenarios(path)[2]


def test_an_index_whose_places_name_other_lines_runs_nothing_else(skeleton_dir: Path) -> None:
    """An index edited by hand (its stamp still current) that swaps two rows' places: each episode is refused, never
    run with the other scenario."""
    path = skeleton_dir / "scenarios.jsonl"
    data = json.loads(index_path(path).read_text())
    rows = data["scenarios"]
    rows[0]["line"], rows[1]["line"] = rows[1]["line"], rows[0]["line"]
    index_path(path).write_text(json.dumps(data))
    (plan,) = build_plan(RunConfig(envs=[str(skeleton_dir)], agent="mock", limit=2))
    for header in plan.headers():
        with pytest.raises(UsageError, match="its index does not describe it"):
            plan.full(header)

"""Streaming import: memory bounded by the scenario file, output equal to the in-memory conversion, nothing
written when the file turns out bad half-way. The large-state set is generated from the hand-written fixtures
(tests/fixtures/envscaler/) by growing their record collections."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp.catalog.store import count_scenarios, save_scenarios, save_skeleton, scenario_index
from envscaler_mcp.cli import main
from envscaler_mcp.errors import InputFileError
from envscaler_mcp.interop.from_envscaler import import_envscaler
from envscaler_mcp.interop.stream_import import stream_import
from tests.foundation._cli import os_layers

ES = Path(__file__).resolve().parents[1] / "fixtures" / "envscaler"
ENVS, SCENARIOS = ES / "env_metadata.json", ES / "scenario_metadata.json"


def _grown(state: dict[str, Any], target: int) -> dict[str, Any]:
    """`state` with every keyed collection (a non-empty dict) grown by renamed copies of its entries to about
    `target` bytes of JSON."""
    tables = [k for k, v in state.items() if isinstance(v, dict) and v]
    assert tables, "the fixture state has no keyed collection to grow"
    per_round = sum(len(json.dumps(state[t])) for t in tables)
    rounds = max(1, (target - len(json.dumps(state))) // per_round + 1)
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in state.items()}
    for n in range(1, rounds + 1):
        for table in tables:
            for key, record in state[table].items():
                out[table][f"{key}_x{n}"] = {**record} if isinstance(record, dict) else record
    return out


def _large_set(folder: Path, count: int, state_bytes: int) -> Path:
    """A scenario file of `count` distinct scenarios cycling over the fixture's, each state ~state_bytes."""
    base = json.loads(SCENARIOS.read_text(encoding="utf-8"))
    items = []
    for i in range(count):
        item = dict(base[i % len(base)])
        item["task"] = f"[{i}] {item['task']}"
        item["init_config"] = _grown(item["init_config"], state_bytes)
        items.append(item)
    path = folder / "scenario_metadata.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_peak_memory_stays_within_three_times_the_file(tmp_path: Path) -> None:
    scenarios = _large_set(tmp_path, count=24, state_bytes=150_000)
    size = scenarios.stat().st_size
    assert size > 3_000_000
    tracemalloc.start()
    try:
        written = stream_import(ENVS, scenarios, tmp_path / "out")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sum(written.counts.values()) == 24
    assert peak <= 3 * size, f"peak {peak / 1e6:.1f} MB for a {size / 1e6:.1f} MB file"


def test_the_in_memory_conversion_needs_more_than_that(tmp_path: Path) -> None:
    # the bound above is one the former import (whole file parsed, every scenario held) does not meet
    scenarios = _large_set(tmp_path, count=24, state_bytes=150_000)
    tracemalloc.start()
    try:
        import_envscaler(ENVS, scenarios)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak > 3 * scenarios.stat().st_size


def test_output_equals_the_in_memory_conversion(tmp_path: Path) -> None:
    scenarios = _large_set(tmp_path, count=7, state_bytes=20_000)
    reference = import_envscaler(ENVS, scenarios)
    expected = tmp_path / "expected"
    for skeleton in reference.skeletons:
        save_skeleton(skeleton, expected / "environments")
        if reference.scenarios.get(skeleton.id):
            save_scenarios(reference.scenarios[skeleton.id], expected / "scenarios" / f"{skeleton.id}.jsonl",
                           index=True)
    written = stream_import(ENVS, scenarios, tmp_path / "streamed")
    assert written.errors == reference.errors
    assert written.counts == {k: len(v) for k, v in reference.scenarios.items()}
    ours, theirs = _files(tmp_path / "streamed"), _files(expected)
    assert sorted(ours) == sorted(theirs)
    jsonl = [name for name in ours if name.endswith(".jsonl")]
    skeletons = [name for name in ours if name.endswith("skeleton.json")]
    assert len(jsonl) == 2 and len(skeletons) == 2
    for name in skeletons:
        assert ours[name] == theirs[name], name
    for name in jsonl:  # the same scenarios in the same order (pydantic may spell a number differently)
        assert [json.loads(line) for line in ours[name].splitlines()] == [
            json.loads(line) for line in theirs[name].splitlines()]
    for name in jsonl:  # the indexes differ only in the files' modification times
        index = tmp_path / "streamed" / name.replace(".jsonl", ".index.json")
        assert json.loads(index.read_text())["scenarios"] == json.loads(theirs[name.replace(".jsonl", ".index.json")])["scenarios"]
        env_id = Path(name).stem
        assert count_scenarios(tmp_path / "streamed" / name) == len(reference.scenarios[env_id])
        assert [r["id"] for r in scenario_index(tmp_path / "streamed" / name)] == [
            s.id for s in reference.scenarios[env_id]]


@pytest.mark.parametrize("tail", ["", ', {"env_id": "env_1"}]', "] trailing"])
def test_a_file_bad_half_way_writes_nothing(tmp_path: Path, tail: str) -> None:
    good = _large_set(tmp_path, count=5, state_bytes=5_000).read_text(encoding="utf-8")
    bad = tmp_path / "bad.json"
    bad.write_text(good[: good.rindex("]")] + tail, encoding="utf-8")  # cut short / a bad last item / garbage
    out = tmp_path / "out"
    with pytest.raises(InputFileError):
        stream_import(ENVS, bad, out)
    assert not out.exists()


def test_a_bad_file_leaves_an_earlier_import_as_it_was(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = _large_set(tmp_path, count=5, state_bytes=5_000)
    out = tmp_path / "out"
    stream_import(ENVS, good, out)
    before = _files(out)
    bad = tmp_path / "bad.json"
    bad.write_text(good.read_text(encoding="utf-8")[:-200], encoding="utf-8")
    with pytest.raises(SystemExit) as exit_:
        main(["import", "envscaler", "--envs", str(ENVS), "--scenarios", str(bad), "--out", str(out)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert "not valid JSON after scenario #3" in err
    assert _files(out) == before
    assert not [p for p in out.rglob(".*.tmp")]


def test_a_scenario_file_that_is_not_a_list_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{"env_id": "env_1"}', encoding="utf-8")
    with pytest.raises(InputFileError, match="expected a list of scenario items, got dict"):
        stream_import(ENVS, path, tmp_path / "out")


def test_a_failed_environment_is_one_line_and_counted_by_the_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    os_layers(monkeypatch, on=False)  # env_5's `import os` refuses it
    bad_envs = ES / "env_metadata_bad.json"
    scenarios = tmp_path / "s.json"
    scenarios.write_text(json.dumps([{"env_id": "env_3", "task": f"t{i}", "init_config": {}} for i in range(7)]
                                    + [{"env_id": "env_404", "task": f"u{i}", "init_config": {}} for i in range(4)]
                                    + [{"env_id": "env_9", "task": "park", "init_config": {}}]))
    with pytest.raises(SystemExit) as exit_:
        main(["import", "envscaler", "--envs", str(bad_envs), "--scenarios", str(scenarios),
              "--out", str(tmp_path / "out")])
    assert exit_.value.code == 0  # something usable was imported
    out, err = capsys.readouterr()
    errors = [line for line in err.splitlines() if line.startswith("skipped:")]
    about_env_3 = [line for line in errors if "env 'env_3'" in line]
    assert len(about_env_3) == 1 and "its 7 scenario(s) were skipped" in about_env_3[0]
    assert len([line for line in errors if "env_404" in line]) == 1
    assert "Traceback" not in err and "error:" not in err
    assert "imported 1 environment(s) and 1 scenario(s)" in out  # the good environment is still imported
    assert ("skipped 13 item(s):\n  7 scenario(s): their environment was skipped\n"
            "  4 scenario(s): env_id not in the env file\n  1 environment(s): code the extractor cannot use\n"
            "  1 environment(s): failed the static checks") in out
    assert (tmp_path / "out" / "scenarios" / "env_9.jsonl").is_file()

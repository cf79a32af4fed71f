"""What `scenarios check` keeps per scenario for its final table and --json is a small verdict, not the report:
the memory held for 400 judged scenarios is within a fixed budget of that for 40, and --json is the same text."""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from envscaler_mcp.cli import app
from envscaler_mcp.qa.cli import _json_lines
from envscaler_mcp.qa.results import ResultsFile
from tests.qa.test_cli import fake_launch, write_set  # noqa: F401 (fake_launch is a fixture)


@pytest.fixture
def line(tmp_path: Path, fake_launch: Any) -> dict[str, Any]:  # noqa: F811
    """One scenario's report line as the gate writes it, with its replay and checks."""
    path, good, _ = write_set(tmp_path)
    results = tmp_path / "gate.jsonl"
    CliRunner().invoke(app, ["scenarios", "check", "--scenarios", str(path), "--results", str(results)])
    record: dict[str, Any] = next(r for r in map(json.loads, results.read_text().splitlines())
                                  if r["scenario_id"] == good)
    return record


def _file(path: Path, record: dict[str, Any], n: int) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({**record, "scenario_id": f"sc-{i:04d}", "title": f"scenario {i}"}) + "\n")
    return path


def _held(path: Path) -> tuple[int, ResultsFile]:
    gc.collect()
    tracemalloc.start()
    try:
        results = ResultsFile(path, resume=True)
        gc.collect()
        return tracemalloc.get_traced_memory()[0], results
    finally:
        tracemalloc.stop()


def test_the_gate_keeps_a_small_verdict_per_scenario(tmp_path: Path, line: dict[str, Any]) -> None:
    line = {**line, "replay": line["replay"] * 100}  # a report of a long reference solution (~tens of kB)
    small, _ = _held(_file(tmp_path / "small.jsonl", line, 40))
    large, results = _held(_file(tmp_path / "large.jsonl", line, 400))
    assert len(results.judged) == 400
    assert len(json.dumps(line)) > 10_000
    assert large - small < 360 * 2_000, (small, large)  # the reports themselves would be over 10 kB each


def test_the_json_output_is_the_array_of_the_lines(tmp_path: Path, line: dict[str, Any]) -> None:
    results = ResultsFile(_file(tmp_path / "gate.jsonl", line, 3), resume=True)
    verdicts = list(results.judged.values())
    every = [json.loads(raw) for raw in (tmp_path / "gate.jsonl").read_text().splitlines()]
    assert "\n".join(_json_lines(verdicts, results)) == json.dumps(every, indent=2)
    assert "\n".join(_json_lines(verdicts[::-1], results)) == json.dumps(every[::-1], indent=2)
    assert "\n".join(_json_lines([], results)) == json.dumps([], indent=2)


def test_check_groups_without_keep_hands_each_report_on_and_holds_none(fake_launch: Any) -> None:  # noqa: F811
    import anyio

    from envscaler_mcp.qa.batch import check_groups
    from tests.qa.test_gate import CANCELLED, O2_UNTOUCHED, scenario

    scenarios = [scenario(), scenario([(CANCELLED, True), (O2_UNTOUCHED, True)])]
    kept = anyio.run(lambda: check_groups([("fake_shop", scenarios)]))
    handed: list[Any] = []
    returned = anyio.run(lambda: check_groups([("fake_shop", scenarios)], on_report=handed.append, keep=False))
    assert returned == []
    assert sorted((r.scenario_id, r.passed) for r in handed) == sorted((r.scenario_id, r.passed) for r in kept)
    assert len(handed) == 2 and {r.passed for r in handed} == {True, False}

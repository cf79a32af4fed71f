"""`scenarios check --results FILE [--resume]`: one line per judged scenario, streamed; a resumed gate judges
only the scenarios without a line, and reports them all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import envscaler_mcp.qa.batch
import envscaler_mcp.qa.gate
from envscaler_mcp.cli import app
from envscaler_mcp.errors import UsageError
from tests.qa.test_cli import fake_launch, write_set  # noqa: F401 (fake_launch is a fixture)

runner = CliRunner()


@pytest.fixture
def judged(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The scenario ids the gate judges, in order."""
    seen: list[str] = []
    real = envscaler_mcp.qa.gate.check_scenario

    async def counting(sc: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(sc.id)
        return await real(sc, *args, **kwargs)

    monkeypatch.setattr(envscaler_mcp.qa.batch, "check_scenario", counting)
    return seen


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.usefixtures("fake_launch")
def test_results_are_streamed_and_resume_judges_only_the_missing(tmp_path: Path, judged: list[str]) -> None:
    path, good, bad = write_set(tmp_path)
    results = tmp_path / "gate.jsonl"
    first = runner.invoke(app, ["scenarios", "check", "--scenarios", str(path), "--results", str(results), "--json"])
    assert first.exit_code == 1, first.output
    assert sorted(judged) == sorted([good, bad])
    written = lines(results)
    assert sorted(r["scenario_id"] for r in written) == sorted([good, bad])
    assert {r["scenario_id"]: r for r in written} == {r["scenario_id"]: r for r in json.loads(first.stdout)}

    # the gate stopped after `good` (its line marked, to see it reported from the file), mid-write of `bad`
    kept = next(r for r in written if r["scenario_id"] == good)
    kept["title"] = "judged in the first run"
    results.write_text(json.dumps(kept) + "\n" + '{"env_id": "fake_shop", "scenario_id": "' + bad[:3])
    judged.clear()
    again = runner.invoke(app, ["scenarios", "check", "--scenarios", str(path), "--results", str(results), "--resume",
                                "--json"])
    assert again.exit_code == 1, again.output
    assert judged == [bad]  # only the scenario without a whole line
    reports = {r["scenario_id"]: r for r in json.loads(again.stdout)}
    assert list(reports) == [good, bad] and reports[good]["title"] == "judged in the first run"
    assert reports[good]["passed"] is True and reports[bad]["passed"] is False
    assert [r["scenario_id"] for r in lines(results)] == [good, bad]  # the torn line cut off, `bad` once

    judged.clear()
    done = runner.invoke(app, ["scenarios", "check", "--scenarios", str(path), "--results", str(results), "--resume"])
    assert done.exit_code == 1 and judged == [] and "1/2 scenarios passed the gate" in done.output


@pytest.mark.usefixtures("fake_launch")
def test_results_file_misuse_is_one_line(tmp_path: Path) -> None:
    path, _, _ = write_set(tmp_path)
    results = tmp_path / "gate.jsonl"
    results.write_text('{"kept": true}\n')
    over = runner.invoke(app, ["scenarios", "check", "--scenarios", str(path), "--results", str(results)])
    assert isinstance(over.exception, UsageError) and "pass --resume" in str(over.exception)
    assert results.read_text() == '{"kept": true}\n'  # nothing lost
    bare = runner.invoke(app, ["scenarios", "check", "--scenarios", str(path), "--resume"])
    assert isinstance(bare.exception, UsageError) and "--results" in str(bare.exception)
    workers = runner.invoke(app, ["scenarios", "check", "--scenarios", str(path), "--ray-workers", "2"])
    assert isinstance(workers.exception, UsageError) and "--ray-workers needs --ray" in str(workers.exception)

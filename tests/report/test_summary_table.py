"""The summary table (printed by `eval` and `report`) fits the terminal and counts scored and unscored
episodes beside the scores."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from envscaler_mcp.cli import app
from envscaler_mcp.harness.checks import NO_ADMIN_REASON
from envscaler_mcp.harness.models import CheckOutcome, EpisodeResult
from envscaler_mcp.report.summary import summarize
from envscaler_mcp.report.table import summary_notes, summary_table
from tests.report.runs import make_run
from tests.tables import assert_fits, left_out, render

LONG = "hospital_appointment_scheduling_system"
DROPPABLE = ["state check", "observation", "pass@3", "pass^3", "steps", "tokens", "cost", "latency"]


def _episode(env: str, n: int, trial: int, status: str, score: float | None) -> EpisodeResult:
    checks = [] if score is not None else [
        CheckOutcome(id="c", description="d", kind="state", status="not_scorable", reason=NO_ADMIN_REASON)]
    return EpisodeResult(run_id="r", env_id=env, scenario_id=f"s{n}", trial=trial, mode="task", status=status,
                         checks=checks, score=score, scorable=score is not None,
                         success=None if score is None else score == 1.0, state_check="not_available")


def _summary() -> object:
    """Two environments, three trials: 6 scored, 1 without a score, 2 lost to infrastructure."""
    results = [_episode(LONG, n, t, "completed", 1.0) for n in range(2) for t in range(3)]
    results += [_episode("clinic_appointments", 0, 0, "completed", None)]
    results += [_episode("clinic_appointments", 1, t, "infra_error", None) for t in range(2)]
    return summarize(results, run_id="run-20261128T000000Z", agent="openai-compatible/qwen3-8b", user=None,
                     mode="task", trials=3)


@pytest.mark.parametrize("width", [80, 120])
def test_the_summary_table_fits_with_ids_whole_and_counts(width: int) -> None:
    summary = _summary()
    output = render(summary_table(summary, width), width)  # type: ignore[arg-type]
    headers = ["environment", "n", "scored", "not scored", "score", "success", "infra", *DROPPABLE]
    assert_fits(output, width, [LONG, "clinic_appointments", "overall"], headers, droppable=DROPPABLE)
    row = next(line for line in output.splitlines() if "overall" in line).split()
    assert row[1:4] == ["9", "6", "1"]  # episodes, scored, not scored
    assert row[-2:] == ["2", "(22.2%)"]  # infra errors and their share
    if width == 120:
        assert not {"pass@3", "state check"} & left_out(output)  # the least valuable go first


def test_the_notes_say_why_episodes_had_no_score(tmp_path: Path) -> None:
    notes = [str(n) for n in summary_notes(_summary(), tmp_path)]  # type: ignore[arg-type]
    assert f"1 episode(s) could not be scored: {NO_ADMIN_REASON}." in notes
    assert any(n.startswith("2 of 9 episode(s) (22.2%) failed on infrastructure errors") for n in notes)


@pytest.mark.parametrize("width", [80, 120])
def test_report_prints_the_fitted_table_and_the_notes(tmp_path: Path, width: int) -> None:
    import anyio

    run = anyio.run(make_run, tmp_path / "run")
    result = CliRunner().invoke(app, ["report", str(run)], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    table = result.output.split("report: ")[0]
    assert_fits(table, width, ["mini_shop"], ["environment", "n", "scored", "score", "success", "infra"],
                droppable=DROPPABLE)
    assert "state check: 1 episode(s) changed the state unlike the reference solution" in result.output


def test_the_html_summary_counts_scored_and_not_scored_episodes(tmp_path: Path) -> None:
    import json

    import anyio

    from envscaler_mcp.report.html import render_report
    from tests.harness.shop import BOB

    run = anyio.run(make_run, tmp_path / "run")
    path = run / "results.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for r in records:
        if r["scenario_id"] != BOB.id:  # Alice's episode as one whose checks could not run
            r.update(score=None, success=None, scorable=False)
            for c in r["checks"]:
                c.update(status="not_scorable", reason=NO_ADMIN_REASON)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    html = render_report(run)
    assert "<th>scored</th><th>not scored</th>" in html
    assert "<td>mini_shop</td><td>2</td><td>1</td><td>1</td><td>100.0%</td>" in html
    assert f"1 episode(s) without a score: {NO_ADMIN_REASON}" in html

"""The state check in the report stage: the HTML report shows unexpected changes beside the checklist, the
summary counts state-check failures, and `export run` filters on the checklist and the state check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envscaler_mcp.cli import app
from envscaler_mcp.harness.rundir import RunDir
from envscaler_mcp.report.export import export_run
from envscaler_mcp.report.html import render_report
from envscaler_mcp.report.summary import finish_run
from tests.harness.shop import ALICE, BOB
from tests.report.runs import make_run

pytestmark = pytest.mark.anyio


async def test_report_shows_the_state_check_and_unexpected_changes(tmp_path: Path) -> None:
    run = await make_run(tmp_path / "run")
    results = {r.scenario_id: r for r in RunDir(run).read_results()}
    assert results[BOB.id].state_check == "pass"  # the same changes as the reference (and a failed call)
    assert results[ALICE.id].state_check == "fail"  # nothing done: both cancellations are missing
    assert [(c.path, c.kind) for c in results[ALICE.id].unexpected_changes] == [
        ("orders['O-1001'].status", "mismatch"), ("orders['O-1004'].status", "mismatch")]
    summary = finish_run(run)
    assert (summary.overall.state_check_passed, summary.overall.state_check_failed) == (1, 1)
    assert (results[BOB.id].observation.status, results[ALICE.id].observation.status) == ("passed", "failed")
    assert (summary.overall.observation_passed, summary.overall.observation_failed) == (1, 1)
    html = render_report(run)
    assert "success rule <b>checklist+state+observation</b>" in html
    assert "Observation check: <span class=\"obs-failed\">failed</span>" in html
    assert "Observation check: <span class=\"obs-passed\">passed</span>" in html
    assert "0 of 2 result(s) of the reference solution's read-only calls" in html  # Alice's two orders
    assert "turn 1, reference call 1 list_orders(" in html
    assert "State check: <span class=\"fail\">fail</span>" in html
    assert "<code>orders[&#39;O-1004&#39;].status</code></td><td>mismatch</td>" in html
    assert "The final state matches the reference solution" in html


async def test_export_filters_on_checklist_and_state_check(tmp_path: Path) -> None:
    run = await make_run(tmp_path / "run")

    def exported(**filters: str) -> int:
        return len(export_run(run, "openai", **filters).path.read_text().splitlines())  # type: ignore[arg-type]

    assert exported() == 2
    assert exported(checklist="pass") == 1 and exported(state_check="pass") == 1
    assert exported(state_check="not-fail") == 1
    assert exported(observation="pass") == 1 and exported(observation="not-fail") == 1  # Alice's never looked
    result = CliRunner().invoke(app, ["export", "run", str(run), "--format", "sharegpt", "--state-check", "pass",
                                      "--checklist", "pass", "--observation", "pass", "--out", str(tmp_path / "x.jsonl")])
    assert result.exit_code == 0, result.output
    [record] = [json.loads(line) for line in (tmp_path / "x.jsonl").read_text().splitlines()]
    assert "Customer changed mind" in json.dumps(record)  # Bob's episode
    bad = CliRunner().invoke(app, ["export", "run", str(run), "--format", "openai", "--state-check", "maybe"])
    assert bad.exit_code == 2 and "maybe" in bad.output

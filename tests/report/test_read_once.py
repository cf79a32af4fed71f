"""eval's and `report`'s summary and HTML report come from one pass over results.jsonl (then the page reads each
episode back by its offset), and say what reading it twice says."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from envscaler_mcp.cli import app
from envscaler_mcp.report.html import finish_and_load, write_report
from envscaler_mcp.report.summary import finish_run
from tests.report.runs import make_run

pytestmark = pytest.mark.anyio


async def test_summary_and_report_from_one_reading(tmp_path: Path, reads: list[Path]) -> None:
    run = await make_run(tmp_path / "run")
    alone = write_report(run, tmp_path / "alone.html").read_text()  # the report reading the run itself
    summary_alone = finish_run(run)
    reads.clear()
    (run / "summary.json").unlink()
    finished = finish_and_load(run)
    html = write_report(run, run=finished).read_text()
    assert reads == [run]  # results.jsonl scanned once for both
    assert html == alone
    assert finished.summary == summary_alone and summary_alone.overall.episodes == 2
    assert (run / "summary.json").exists()


async def test_report_command_reads_the_run_once(tmp_path: Path, reads: list[Path]) -> None:
    run = await make_run(tmp_path / "run")
    alone = write_report(run, tmp_path / "alone.html").read_text()
    reads.clear()
    out = CliRunner().invoke(app, ["report", str(run)])
    assert out.exit_code == 0, out.output
    assert reads == [run]
    assert (run / "report.html").read_text() == alone

"""The HTML report and the `report` command on a finished run folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envscaler_mcp.cli import app
from envscaler_mcp.report.html import write_report
from tests.report.runs import make_run

pytestmark = pytest.mark.anyio


async def test_report_has_summary_transcript_checklist_and_diff(tmp_path: Path) -> None:
    run = await make_run(tmp_path / "run")
    html = write_report(run).read_text()
    assert "<script" not in html and not re.search(r"(src|href)=\"https?:", html)  # self-contained
    assert "Evaluation report" in html and "50.0%" in html  # one success of two
    assert "add_note({&#34;order_id&#34;: &#34;O-7&#34;})" in html  # tool call with arguments
    assert "is-error" in html and "text" in html  # the error result (missing argument), highlighted
    assert "Has order O-1002 been cancelled?" in html and 'class="fail"' in html and 'class="pass"' in html
    assert "<code>orders[&#39;O-1002&#39;].status</code>" in html  # the state diff
    assert "Look first." in html  # reasoning
    assert "Nothing to do &lt;here&gt;." in html  # escaped model text


def test_report_command_prints_table_and_writes_html(tmp_path: Path) -> None:
    import anyio

    run = anyio.run(make_run, tmp_path / "run")
    out = CliRunner().invoke(app, ["report", str(run)])
    assert out.exit_code == 0, out.output
    assert "mini_shop" in out.output and "report.html" in out.output
    assert (run / "report.html").exists()

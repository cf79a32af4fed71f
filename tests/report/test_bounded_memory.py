"""The end of a run (summary.json, the table, the HTML report) reads the results one at a time: its memory does
not grow with the number of episodes, and the page is the one rendered from every record at once."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import anyio
import pytest

from envscaler_mcp.harness.rundir import RunDir
from envscaler_mcp.report.html import _environment, load_run, write_report
from envscaler_mcp.report.summary import finish_run
from tests.report.bigrun import grow_run
from tests.report.runs import make_run


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return anyio.run(make_run, tmp_path_factory.mktemp("base") / "run")


def _peak(run: Path) -> int:
    """Peak bytes allocated by eval's end of run: summary.json, then the HTML report."""
    tracemalloc.start()
    try:
        finish_run(run)
        write_report(run)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_end_of_a_run_holds_the_same_memory_for_50_or_400_episodes(base: Path, tmp_path: Path) -> None:
    small = _peak(grow_run(base, tmp_path / "small", 50))
    large_run = grow_run(base, tmp_path / "large", 400)
    large = _peak(large_run)
    # 350 more records of ~9 KB each: holding them would add over 3 MB; the index and the per-scenario
    # outcomes add about 150 bytes an episode
    assert large - small < 1_000_000, (small, large)
    assert (large_run / "report.html").read_text().count('<details class="episode') == 400


def test_the_streamed_page_is_the_one_rendered_from_every_record_at_once(base: Path, tmp_path: Path) -> None:
    run = grow_run(base, tmp_path / "run", 120, envs=7)
    loaded = load_run(run)
    every = sorted(RunDir(run).read_results(), key=lambda r: (r.env_id, r.scenario_id, r.trial))
    summary = loaded.summary
    whole = _environment().get_template("report.html.j2").render(
        manifest=loaded.manifest, summary=summary, results=every, groups=[*summary.per_env, summary.overall])
    assert write_report(run).read_text() == whole
    assert whole.index("env000 / s0000 #0") < whole.index("env000 / s0000 #1") < whole.index("env001 / s0000 #0")

"""eval builds its report as the run goes (report/live.py): the summary, the table and each episode's section are
made as each record is appended, and the page is written at the end without reading results.jsonl again. The page
and summary.json must be exactly what `envscaler-mcp report` makes from results.jsonl, on every transport, with
episodes finishing out of the page's order, passing and failing; and where the run's records are not all the
ones this process saw (a resumed run) or a section could not be rendered, the page comes from results.jsonl."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from envscaler_mcp._choices import Transport
from envscaler_mcp.catalog.paths import environments_dir
from envscaler_mcp.catalog.store import load_skeleton, scenarios_for
from envscaler_mcp.cli import app
from envscaler_mcp.harness.config import EnvPlan, RunConfig, scenario_hashes
from envscaler_mcp.harness.oracle import OraclePolicy
from envscaler_mcp.harness.prompts import EnvInfo
from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.rundir import RunDir
from envscaler_mcp.harness.seats import Seat
from envscaler_mcp.report import live as live_module
from envscaler_mcp.report.html import render_report, write_report
from envscaler_mcp.report.live import LiveReport
from envscaler_mcp.report.summary import finish_run
from envscaler_mcp.scenario.models import Scenario, ToolCall
from tests.harness.shop import MINI_SHOP
from tests.report.runs import make_run

pytestmark = pytest.mark.anyio

ENVS = ("ecommerce_orders", "clinic_appointments")  # run in this order: the page lists clinic_appointments first


def _solutions(scenarios: list[Scenario]) -> dict[str, list[ToolCall]]:
    """The reference solution, nothing, or the reference with its last call made twice, by turns: passing and
    failing episodes, state diffs and unexpected changes on the page."""
    out: dict[str, list[ToolCall]] = {}
    for i, s in enumerate(scenarios):
        calls = list(s.reference_solution)
        out[s.id] = [calls, [], [*calls, *calls[-1:]]][i % 3]
    return out


async def _run(out: Path, transport: Transport, live: LiveReport) -> None:
    plans = []
    solutions: dict[str, list[ToolCall]] = {}
    for env_id in ENVS:
        skeleton = load_skeleton(environments_dir() / env_id)
        scenarios = scenarios_for(env_id)[:4]
        solutions.update(_solutions(scenarios))
        plans.append(EnvPlan(env_id=env_id, env_info=EnvInfo(name=skeleton.name), scenarios=scenarios,
                             hashes={"environment": skeleton.content_hash(), **scenario_hashes(scenarios)}))
    config = RunConfig(envs=list(ENVS), agent="oracle", trials=2, concurrency=4, transport=transport, progress=False)
    agent = Seat("oracle", factory=lambda sc: OraclePolicy(sc, solution=solutions[sc.id]))
    await run_eval(config, out, plans=plans, agent=agent, on_result=live.add)


@pytest.mark.parametrize("transport", ["memory", "pipe", "http", "stdio"])
async def test_the_page_made_as_the_run_goes_is_the_one_made_from_results_jsonl(tmp_path: Path,
                                                                                 transport: Transport) -> None:
    out = tmp_path / "run"
    with LiveReport(out, "oracle") as live:
        await _run(out, transport, live)
        finished = live.finish(out)
        assert finished is not None
        page = write_report(out, tmp_path / "live.html", run=finished).read_text()
    from_file = write_report(out, tmp_path / "file.html").read_text()
    assert page == from_file
    assert finished.summary == finish_run(out)
    order = [(r.env_id, r.scenario_id, r.trial) for r in RunDir(out).read_results()]
    assert order != sorted(order)  # the records came in another order than the page's
    passed, failed = page.count('<details class="episode passed"'), page.count('<details class="episode"')
    assert passed + failed == 16 and passed >= 4 and failed >= 4
    assert '<table class="diff">' in page and 'class="kind-' in page  # state diffs and unexpected changes shown
    assert page.index("clinic_appointments / ") < page.index("ecommerce_orders / ")


def _eval(out: Path, *extra: str) -> None:
    result = CliRunner().invoke(app, ["eval", "--env", str(MINI_SHOP), "--agent", "oracle", "--transport", "pipe",
                                      "--trials", "2", "--out", str(out), "--no-progress", *extra])
    assert result.exit_code == 0, result.output


def test_eval_writes_its_page_and_summary_without_reading_results_jsonl(tmp_path: Path, reads: list[Path]) -> None:
    out = tmp_path / "run"
    _eval(out)
    assert reads == []
    page, summary = (out / "report.html").read_text(), json.loads((out / "summary.json").read_text())
    assert page == write_report(out, tmp_path / "again.html").read_text()
    assert summary == json.loads(finish_run(out).model_dump_json()) and summary["overall"]["episodes"] == 4
    assert [p.name for p in out.iterdir() if p.name.startswith(".") or p.suffix == ".tmp"] == []


def test_a_resumed_run_s_page_holds_the_episodes_of_before(tmp_path: Path, reads: list[Path]) -> None:
    out = tmp_path / "run"
    _eval(out)
    results = out / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    results.write_text("".join(lines[:1]))  # as if the run had been stopped after its first episode
    reads.clear()
    _eval(out, "--resume")
    assert reads.count(out) >= 1  # read back: this process saw three of the four records
    page = (out / "report.html").read_text()
    assert page.count('<details class="episode') == 4
    assert page == write_report(out, tmp_path / "again.html").read_text()


def test_a_section_that_cannot_be_rendered_leaves_the_page_to_results_jsonl(tmp_path: Path, reads: list[Path],
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    real = live_module.section_renderer

    def failing_on_the_third() -> Any:
        section = real()
        seen: list[int] = []

        def render(r: Any, prompts: Any) -> str:
            seen.append(1)
            if len(seen) == 3:
                raise TypeError("a value the template cannot show")
            return str(section(r, prompts))
        return render

    monkeypatch.setattr(live_module, "section_renderer", failing_on_the_third)
    out = tmp_path / "run"
    _eval(out)
    assert reads == [out]
    page = (out / "report.html").read_text()
    assert page.count('<details class="episode') == 4
    assert page == write_report(out, tmp_path / "again.html").read_text()


async def test_a_local_model_s_labels_are_shown_as_labels_in_the_page_made_as_the_run_goes(tmp_path: Path) -> None:
    run = await make_run(tmp_path / "run")
    manifest = json.loads((run / "run.json").read_text())
    manifest["config"]["agent"] = "local/qwen2.5-coder-1.5b"  # its labels were kept as reasoning then
    (run / "run.json").write_text(json.dumps(manifest))
    with LiveReport(run, "local/qwen2.5-coder-1.5b") as live:
        for record in RunDir(run).read_results():
            live.add(record)
        finished = live.finish(run)
        assert finished is not None
        page = write_report(run, tmp_path / "live.html", run=finished).read_text()
    assert "decision label: Look first." in page
    assert page == render_report(run)


def test_a_run_killed_midway_leaves_no_spooled_page_and_its_resumed_page_holds_every_episode(tmp_path: Path) -> None:
    """SIGKILL while the page is being made: no file of the spool is left in the run folder (it never had a
    name), and the resumed run's page, made from results.jsonl, holds every episode."""
    import os
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "run"
    argv = [sys.executable, "-m", "envscaler_mcp", "eval", "--env", str(MINI_SHOP), "--agent", "oracle",
            "--transport", "pipe", "--trials", "15", "--concurrency", "1", "--out", str(out), "--no-progress"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    results = out / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if results.is_file() and results.read_bytes().count(b"\n") >= 2:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = results.read_bytes().count(b"\n")
    assert 2 <= kept < 30
    assert sorted(p.name for p in out.iterdir()) in (["isolation.jsonl", "results.jsonl", "run.json"],
                                                     ["results.jsonl", "run.json"])
    _eval_resumed = CliRunner().invoke(app, [*argv[3:], "--resume"])
    assert _eval_resumed.exit_code == 0, _eval_resumed.output
    page = (out / "report.html").read_text()
    assert page.count('<details class="episode') == 30
    assert page == write_report(out, tmp_path / "again.html").read_text()

"""The end of a run (summary.json, the table, the HTML report) reads the results one at a time: its memory does
not grow with the number of episodes, and the page is the one rendered from every record at once."""

from __future__ import annotations

import re
import tracemalloc
from pathlib import Path

import anyio
import pytest

from envscaler_mcp._io import jsonl_line
from envscaler_mcp.harness.rundir import RunDir
from envscaler_mcp.report.html import EpisodeRow, _environment, load_run, section_renderer, write_report
from envscaler_mcp.report.prompts import PromptIndex
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
    # 350 more records of ~9 KB each: holding them would add over 3 MB; the per-scenario outcomes and the index
    # (each episode's row of the table: about 350 bytes with its title) add under 1 KB an episode
    assert large - small < 1_000_000, (small, large)
    assert (large_run / "report.html").read_text().count('<details class="episode') == 400


def test_the_streamed_page_is_the_one_rendered_from_every_record_at_once(base: Path, tmp_path: Path) -> None:
    run = grow_run(base, tmp_path / "run", 120, envs=7)
    loaded = load_run(run)
    every = sorted(RunDir(run).read_results(), key=lambda r: (r.env_id, r.scenario_id, r.trial))
    summary = loaded.summary
    prompts = PromptIndex()
    for r in RunDir(run).read_results():  # in the file's order, as the summary's pass meets them
        prompts.add(r.env_id, r.messages)
    section = section_renderer()
    whole = _environment().get_template("report.html.j2").render(
        manifest=loaded.manifest, summary=summary, rows=[EpisodeRow.of(r) for r in every],
        sections=[section(r, prompts) for r in every], groups=[*summary.per_env, summary.overall], prompts=prompts)
    assert write_report(run).read_text() == whole
    assert whole.index("env000 / s0000 #0") < whole.index("env000 / s0000 #1") < whole.index("env001 / s0000 #0")


def test_each_row_of_the_table_says_what_its_record_says(base: Path, tmp_path: Path) -> None:
    """The table of episodes is written from what the summary's pass kept of each record: every cell is
    checked against the record itself, each field with values no other field has."""
    run = grow_run(base, tmp_path / "run", 12, envs=3, pad=10)
    records = RunDir(run).read_results()
    varied = []
    for i, r in enumerate(records):
        record = r.model_dump(mode="json")
        record.update(steps=10 + i, tool_calls=40 + i, tool_errors=i % 3, score=None if i % 4 == 1 else i / 16,
                      success=None if i % 4 == 1 else i % 2 == 0, latency_s=1.001 + i,
                      state_check=["pass", "fail", "not_available"][i % 3], status="completed",
                      unexpected_changes=[{"path": f"p{k}", "kind": "collateral"} for k in range(i % 4)],
                      observation={"status": ["passed", "failed", "not_applicable"][i % 3],
                                   "evidence": [f"e{k}" for k in range(i % 5)]})
        varied.append(record)
    (run / "results.jsonl").write_text("".join(jsonl_line(v) for v in varied), encoding="utf-8")
    html = write_report(run).read_text()
    table = html[html.index("<th>episode</th>"):html.index("</table>", html.index("<th>episode</th>"))]
    for v in varied:
        anchor = f'href="#ep-{v["env_id"]}--{v["scenario_id"]}--{v["trial"]}"'
        row = table[table.index(anchor):].split("</tr>")[0]
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)  # the cells after the one the link is in
        state = "n/a" if v["state_check"] == "not_available" else v["state_check"]
        changes = len(v["unexpected_changes"])
        observed = v["observation"]["status"]
        evidence = len(v["observation"]["evidence"])
        assert cells == [
            "completed",
            "-" if v["score"] is None else f"{v['score']:.2f}",
            state + (f" ({changes})" if changes else ""),
            ("n/a" if observed == "not_applicable" else observed) + (f" ({evidence})" if evidence else ""),
            "-" if v["success"] is None else ("yes" if v["success"] else "no"),
            str(v["steps"]),
            f"{v['tool_calls']} ({v['tool_errors']})",
            f"{v['latency_s']:.2f} s",
        ], (v["env_id"], v["scenario_id"], v["trial"])

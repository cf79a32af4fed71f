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
    assert html.count("<script") == 1 and "<script src" not in html  # self-contained: one inline script
    assert not re.search(r"(src|href)=\"https?:", html)
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
    # wide enough for the whole path of report.html on one line (a longer tmp_path would wrap it)
    out = CliRunner().invoke(app, ["report", str(run)], env={"COLUMNS": "400"})
    assert out.exit_code == 0, out.output
    assert "mini_shop" in out.output and "report.html" in out.output
    assert (run / "report.html").exists()


async def test_report_shows_infra_errors_with_their_reasons(tmp_path: Path) -> None:
    from envscaler_mcp.harness.config import RunConfig
    from envscaler_mcp.harness.run import run_eval
    from envscaler_mcp.harness.seats import Seat
    from envscaler_mcp.providers.mock import MockProvider
    from tests.harness.shop import BOB, MINI_SHOP, replay_agent

    config = RunConfig.model_validate(
        {
            "envs": [str(MINI_SHOP)],
            "agent": "mock",
            "transport": "memory",
            "progress": False,
            "episode": {"infra_retries": 0},
        }
    )
    agent = Seat("mock", factory=lambda s: replay_agent(s) if s.id == BOB.id else MockProvider([]))
    await run_eval(config, tmp_path / "run", agent=agent)
    html = write_report(tmp_path / "run").read_text()
    assert "Infrastructure error" in html and "ProviderError" in html and "status-infra_error" in html


async def test_index_titles_anchors_failure_reasons_and_filter(tmp_path: Path) -> None:
    from tests.harness.shop import ALICE, BOB

    run = await make_run(tmp_path / "run")
    html = write_report(run).read_text()
    # the index shows each scenario's title and links to its episode's section, by an id that exists
    assert BOB.title and ALICE.title
    links = re.findall(r'<a href="#(ep-[^"]+)">([^<]+)</a>', html)
    assert {title for _, title in links} == {BOB.title.replace("'", "&#39;"), ALICE.title.replace("'", "&#39;")}
    for anchor, _ in links:
        assert '<details class="episode' in html and f'id="{anchor}"' in html
        assert "mini_shop" in anchor  # the environment is part of the id: one scenario id in two envs differs
    # the script that opens a linked (closed) episode
    assert "hashchange" in html and "el.open = true" in html
    # every failed item says why; a validator that returned False shows the values its source read
    failed = re.findall(r'<td class="fail">fail</td>\n<td>([^<]*)', html)
    assert failed and all(reason.strip() for reason in failed)
    assert any("check_func returned False; it read final_state" in reason for reason in failed)
    # failures only: a checkbox and a :has() rule hiding what passed (no server, no script needed)
    assert 'id="failures-only"' in html and "body:has(#failures-only:checked) .passed { display: none; }" in html
    episode = r'<details class="episode([^"]*)" id="[^"]*'
    solved = re.search(episode + re.escape(BOB.id), html)
    unsolved = re.search(episode + re.escape(ALICE.id), html)
    assert solved and unsolved and solved.group(1) == " passed" and unsolved.group(1) == ""


async def test_an_episode_without_a_title_shows_one_derived_from_its_task(tmp_path: Path) -> None:
    import json

    from envscaler_mcp.report.html import render_report
    from envscaler_mcp.scenario.titles import title_from_task

    run = await make_run(tmp_path / "run")
    path = run / "results.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    titles = [r["title"] for r in records]
    for r in records:
        r["title"] = ""  # as a scenario imported before titles were derived records it
        r["task"] = f"Handle case {r['scenario_id']} now. Then say so."
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    html = render_report(run)
    for r, old in zip(records, titles, strict=True):
        derived = title_from_task(r["task"])
        assert derived == f"Handle case {r['scenario_id']} now" and old not in html
        assert f'">{derived}</a>' in html  # in the episode index


def test_each_system_prompt_is_shown_once_and_every_transcript_links_to_its_own(tmp_path: Path) -> None:
    """Episodes of two environments with two system prompts: the page holds each prompt's text once, in the
    section of system prompts, and each episode's transcript links to the one its record holds. Past the cap a
    prompt stays in its transcripts."""
    import anyio

    from envscaler_mcp._io import jsonl_line
    from envscaler_mcp.harness.rundir import RunDir
    from envscaler_mcp.report import prompts as shared

    run = anyio.run(make_run, tmp_path / "run")
    records = RunDir(run).read_results()
    texts = {"env_a": "You work the <desk> of env A.\nRule one.", "env_b": "You work the desk of env B.\nRule two."}
    lines = []
    for i in range(8):
        record = records[i % len(records)].model_dump(mode="json")
        env = "env_a" if i % 2 else "env_b"
        record.update(env_id=env, scenario_id=f"s{i}", trial=0)
        record["messages"] = [{"role": "system", "content": texts[env]},
                              *(m for m in record["messages"] if m["role"] != "system")]
        lines.append(jsonl_line(record))
    (run / "results.jsonl").write_text("".join(lines), encoding="utf-8")
    html = write_report(run).read_text()
    section = html[html.index("<h2>System prompts</h2>"):html.index('<details class="episode')]
    anchors: dict[str, str] = {}
    for env, text in texts.items():
        escaped = text.replace("<", "&lt;").replace(">", "&gt;")
        assert html.count(escaped) == 1 and escaped in section
        anchor = re.search(r'<details class="prompt" id="(prompt-[0-9a-f]{16})"><summary>\d\. 4 episodes of ' + env,
                           section)
        assert anchor is not None, section
        anchors[env] = anchor.group(1)
        episodes = [part for part in html.split('<details class="episode')[1:] if f'id="ep-{env}--' in part[:60]]
        assert len(episodes) == 4
        for episode in episodes:
            assert f'<a href="#{anchor.group(1)}">system prompt' in episode
    assert html.count("system prompt (shown once above") == 8
    assert section.index("episodes of env_a") < section.index("episodes of env_b")  # by environment
    capped = shared.PromptIndex(max_prompts=1)
    for r in RunDir(run).read_results():
        capped.add(r.env_id, r.messages)
    assert len(capped) == 1 and capped.anchor_of(texts["env_b"]) == anchors["env_b"]
    assert capped.anchor_of(texts["env_a"]) is None  # past the cap: shown in its transcripts

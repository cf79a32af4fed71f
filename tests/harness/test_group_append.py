"""results.jsonl written off the event loop, many records per fsync (harness/rundir.py GroupAppender): every
record handed in is on disk once `append` returns, in one piece, and a failed write loses nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from envscaler_mcp.harness import rundir
from envscaler_mcp.harness.rundir import GroupAppender

pytestmark = pytest.mark.anyio


async def test_concurrent_records_share_writes_and_all_reach_the_disk(tmp_path: Path, monkeypatch: Any) -> None:
    writes: list[int] = []
    real = rundir.append_lines

    def counted(path: Path, lines: list[str]) -> None:
        writes.append(len(lines))
        real(path, lines)

    monkeypatch.setattr(rundir, "append_lines", counted)
    path = tmp_path / "results.jsonl"
    appender = GroupAppender(path)
    done: list[int] = []

    async def one(n: int) -> None:
        await appender.append({"n": n, "text": "x" * 20000})  # longer than one write buffer
        assert n in {json.loads(line)["n"] for line in path.read_text().splitlines()}  # on disk on return
        done.append(n)

    async with anyio.create_task_group() as tg:
        for n in range(60):
            tg.start_soon(one, n)
    lines = path.read_text().splitlines()
    assert sorted(json.loads(line)["n"] for line in lines) == list(range(60)) and len(done) == 60
    assert sum(writes) == 60 and len(writes) < 60  # grouped: fewer writes (and fsyncs) than records


async def test_a_failed_write_keeps_its_records_for_the_next(tmp_path: Path, monkeypatch: Any) -> None:
    real = rundir.append_lines
    failures = [1]

    def flaky(path: Path, lines: list[str]) -> None:
        if failures:
            failures.pop()
            raise OSError(28, "No space left on device")
        real(path, lines)

    monkeypatch.setattr(rundir, "append_lines", flaky)
    path = tmp_path / "results.jsonl"
    appender = GroupAppender(path)
    with pytest.raises(OSError):
        await appender.append({"n": 1})
    await appender.append({"n": 2})
    assert [json.loads(line)["n"] for line in path.read_text().splitlines()] == [1, 2]


async def test_an_episode_record_is_written_with_the_values_of_its_json_dump(tmp_path: Path) -> None:
    from envscaler_mcp.harness.models import EpisodeResult
    from envscaler_mcp.harness.rundir import RunDir

    result = EpisodeResult(run_id="r", env_id="e", scenario_id="s1", trial=0, mode="task", status="completed",
                           title="Café \u2028 order", task="Ship O-1 ✓", agent_model="oracle", latency_s=4.4e-05,
                           score=0.3333, success=False)
    run = RunDir(tmp_path)
    await run.appender().append(result)
    line = run.results_path.read_text(encoding="utf-8")
    assert line.endswith("\n") and line.count("\n") == 1 and "Café" in line  # UTF-8 kept, one line
    assert json.loads(line) == result.model_dump(mode="json")
    assert run.read_results() == [result]
    run.append(result)  # a worker's result, appended one at a time: the same line
    assert run.results_path.read_text(encoding="utf-8") == line + line

"""`--workers N`: a run's episodes and the gate's scenarios on local worker processes (adapters/local_run.py) give
exactly a one-process run's records and verdicts (timings aside), lose no finished episode when interrupted,
re-run a killed worker's episodes elsewhere (each episode recorded once), report a worker's usage error as the
command's own one line, and leave no worker behind."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from envscaler_mcp.adapters.local_run import LocalEpisodes, LocalGate
from envscaler_mcp.cli import app
from envscaler_mcp.errors import UsageError
from envscaler_mcp.harness.config import EnvPlan, RunConfig
from envscaler_mcp.harness.run import Finished, run_eval
from envscaler_mcp.harness.rundir import RunDir
from envscaler_mcp.qa.batch import GateSettings
from envscaler_mcp.qa.results import ResultsFile
from tests.harness.shop import BOB, MINI_SHOP

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

TIMINGS = {"latency_s", "started_at", "timings", "run_id", "duration_s"}


def untimed(value: Any) -> Any:
    """A record without what two runs of the same episode may differ in (timings, the run id)."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def records(run: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    lines = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    found = {(r["env_id"], r["scenario_id"], r["trial"]): r for r in lines}
    assert len(found) == len(lines), "an episode was recorded twice"
    return found


def config(transport: str, workers: int, **kw: Any) -> RunConfig:
    return RunConfig.model_validate({"envs": [str(MINI_SHOP), "library_loans"], "limit": 3, "trials": 2,
                                     "agent": "oracle", "transport": transport, "progress": False,
                                     "concurrency": 4, "workers": workers, **kw})


def gone(pids: list[int], wait_s: float = 30) -> bool:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if not any(Path(f"/proc/{pid}").exists() and _state(pid) != "Z" for pid in pids):
            return True
        time.sleep(0.05)
    return False


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


@pytest.mark.parametrize("transport", ["memory", "pipe"])
async def test_two_workers_write_the_records_of_one_process(tmp_path: Path, transport: str) -> None:
    await run_eval(config(transport, 1), tmp_path / "one")
    remote = LocalEpisodes(2)
    await run_eval(config(transport, 2), tmp_path / "two", remote=remote)
    one, two = records(tmp_path / "one"), records(tmp_path / "two")
    assert len(one) == 10 and one.keys() == two.keys()
    for key in one:  # field by field, so that a difference names its field
        a, b = untimed(one[key]), untimed(two[key])
        assert a.keys() == b.keys()
        for name in a:
            assert a[name] == b[name], (key, name)
    assert all(r["success"] for r in two.values())
    assert remote.pool is not None
    pids = remote.pool.started
    assert len(pids) == 2 and gone(pids), "a worker outlived the run"
    isolation = RunDir(tmp_path / "two").read_manifest().isolation
    assert {f"worker:{pid}/validators" for pid in pids} <= set(isolation)  # each worker's sandbox, per worker
    assert {k.split("/", 1)[1] for k in isolation if "/server:" in k} == {"server:mini_shop", "server:library_loans"}


class KillingOne(LocalEpisodes):
    """Kills a worker that has episodes in flight (by pid, SIGKILL) when the first result comes in."""

    killed: int | None = None
    warnings: list[str]

    async def run(self, config: RunConfig, plans: list[EnvPlan], todo: list[tuple[str, str, int]], run_id: str,
                  finished: Finished, warn: Any) -> None:
        def on_result(*args: Any) -> None:
            finished(*args)
            if self.killed is None and self.pool is not None:
                busy = [w for w in self.pool.workers if w.in_flight and not w.lost]
                if busy:
                    self.killed = busy[0].proc.pid
                    os.kill(self.killed, signal.SIGKILL)

        await super().run(config, plans, todo, run_id, on_result, self.warnings.append)


async def test_a_killed_worker_costs_only_its_episodes_in_flight(tmp_path: Path) -> None:
    remote = KillingOne(2)
    remote.warnings = []
    await run_eval(config("pipe", 2, trials=4), tmp_path / "run", remote=remote)
    found = records(tmp_path / "run")  # each once
    assert len(found) == 20 and all(r["success"] for r in found.values())
    assert remote.killed is not None and remote.pool is not None and remote.pool.lost_workers == 1
    assert any(f"worker process {remote.killed} was lost" in w for w in remote.warnings)
    assert len(remote.pool.started) == 3  # a replacement started
    assert gone(remote.pool.started)


class Stopping(LocalEpisodes):
    """Cancels the run (as Ctrl-C or SIGTERM cancel the command's root task) when its third result is in."""

    scope: anyio.CancelScope
    kept = 0

    async def run(self, config: RunConfig, plans: list[EnvPlan], todo: list[tuple[str, str, int]], run_id: str,
                  finished: Finished, warn: Any) -> None:
        def on_result(*args: Any) -> None:
            finished(*args)
            self.kept += 1
            if self.kept == 3:  # `finished` is called in a worker thread, as Ray's driver calls it
                anyio.from_thread.run_sync(self.scope.cancel)

        await super().run(config, plans, todo, run_id, on_result, warn)


async def test_an_interrupted_run_keeps_its_finished_episodes_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    remote = Stopping(2)
    remote.scope = anyio.CancelScope()
    with remote.scope:
        await run_eval(config("pipe", 2), out, remote=remote)
    assert remote.scope.cancelled_caught and remote.pool is not None
    assert gone(remote.pool.started), "a worker outlived the interrupted run"
    assert len(records(out)) == remote.kept >= 3  # every result that came back is in results.jsonl
    await run_eval(config("pipe", 2), out, resume=True, remote=LocalEpisodes(2))
    assert len(records(out)) == 10


def test_the_gate_on_two_workers_gives_the_verdicts_of_one_process(tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["scenarios", "check", "library_loans", "it_helpdesk", "--json", "--concurrency", "4"]
    one = runner.invoke(app, [*base, "--workers", "1"])
    two = runner.invoke(app, [*base, "--workers", "2", "--results", str(tmp_path / "gate.jsonl")])
    assert one.exit_code == two.exit_code == 0, two.output
    reports = json.loads(two.stdout)
    assert len(reports) == 27 and untimed(reports) == untimed(json.loads(one.stdout))  # same reports, same order
    streamed = [json.loads(line) for line in (tmp_path / "gate.jsonl").read_text().splitlines()]
    assert sorted(r["scenario_id"] for r in streamed) == sorted(r["scenario_id"] for r in reports)


def test_a_usage_error_on_a_worker_is_the_command_usage_error(tmp_path: Path) -> None:
    gate = LocalGate(2)
    with pytest.raises(UsageError, match="no_such_env"):
        gate.run([("no_such_env", BOB), ("no_such_env", BOB)], ResultsFile(tmp_path / "gate.jsonl", resume=False),
                 GateSettings(transport="memory"))
    assert gate.pool is not None and gone(gate.pool.started)
    assert not (tmp_path / "gate.jsonl").exists()

"""Each environment's isolation report is recorded once, before its first result, without rewriting run.json
(appended to isolation.jsonl), and folded into run.json when the run ends; a killed run's folder still says it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from envscaler_mcp.harness.config import EnvPlan, RunConfig, RunManifest, versions
from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.rundir import ISOLATION_FILE, RunDir
from envscaler_mcp.harness.seats import Seat
from envscaler_mcp.isolation.report import IsolationReport, Layer
from tests.harness.shop import shop_server
from tests.harness.test_pool_on_demand import _copies

pytestmark = pytest.mark.anyio


def _report(detail: str) -> IsolationReport:
    return IsolationReport(subject="servers", layers=[Layer(name="seccomp", active=True, detail=detail)])


async def test_each_environment_is_recorded_before_its_results_and_run_json_is_written_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    envs = _copies(tmp_path / "envs", 4)
    out = tmp_path / "run"
    rewrites: list[int] = []
    appended: list[tuple[set[str], set[str]]] = []  # (names appended, environments with a result by then)
    write_manifest, append_isolation = RunDir.write_manifest, RunDir.append_isolation

    def counting_write(self: RunDir, manifest: RunManifest) -> None:
        rewrites.append(len(manifest.isolation))
        write_manifest(self, manifest)

    def watching_append(self: RunDir, reports: dict[str, IsolationReport]) -> None:
        results = self.results_path.read_text().splitlines() if self.results_path.exists() else []
        appended.append((set(reports), {json.loads(line)["env_id"] for line in results}))
        append_isolation(self, reports)

    monkeypatch.setattr(RunDir, "write_manifest", counting_write)
    monkeypatch.setattr(RunDir, "append_isolation", watching_append)

    @asynccontextmanager
    async def factory(plan: EnvPlan, config: RunConfig) -> AsyncIterator[Any]:
        async with shop_server("memory") as server:
            server.isolation = _report(f"server of {plan.env_id}")
            yield server

    config = RunConfig.model_validate({"envs": envs, "agent": "oracle", "transport": "memory", "concurrency": 2,
                                       "trials": 2, "progress": False})
    await run_eval(config, out, agent=Seat.oracle(), source_factory=factory)

    names = [name for batch, _ in appended for name in batch]
    assert sorted(n for n in names if n.startswith("server:")) == [f"server:shop_{k}" for k in range(4)]  # once each
    for batch, with_results in appended:
        for name in batch - {"validators"}:
            assert name.removeprefix("server:") not in with_results  # before any result of its environment
    assert rewrites == [0, 5]  # created, then once at the end with the four servers and the validators
    isolation = json.loads((out / "run.json").read_text())["isolation"]
    assert {name: r["layers"][0]["detail"] for name, r in isolation.items() if name.startswith("server:")} == {
        f"server:shop_{k}": f"server of shop_{k}" for k in range(4)}
    assert not (out / ISOLATION_FILE).exists()


def _manifest() -> RunManifest:
    config = RunConfig.model_validate({"envs": ["x"], "agent": "oracle", "progress": False})
    return RunManifest(run_id="run-1", created_at="2026-11-28T00:00:00+00:00", config=config, versions=versions(),
                       hashes={}, scenario_ids={})


def test_a_killed_runs_reports_are_read_with_run_json_and_a_torn_line_is_left_apart(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    manifest = _manifest()
    run_dir.write_manifest(manifest)
    run_dir.append_isolation({"server:a": _report("a")})
    with open(tmp_path / ISOLATION_FILE, "ab") as f:  # a write cut short by kill -9
        f.write(b'{"server:b": {"subject": "serv')
    assert set(run_dir.read_manifest().isolation) == {"server:a"}  # run.json alone has none
    run_dir.append_isolation({"server:c": _report("c")})  # resumed: the next line is not glued to the torn one
    again = run_dir.read_manifest()
    assert {name: r.layers[0].detail for name, r in again.isolation.items()} == {"server:a": "a", "server:c": "c"}
    run_dir.fold_isolation(again)
    assert set(json.loads((tmp_path / "run.json").read_text())["isolation"]) == {"server:a", "server:c"}
    assert not (tmp_path / ISOLATION_FILE).exists()
    assert set(run_dir.read_manifest().isolation) == {"server:a", "server:c"}

"""eval --ray: a local Ray cluster on loopback (2 CPUs) runs the oracle like a local run, and survives a lost worker."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable
from pathlib import Path

import anyio
import pytest

from envscaler_mcp.adapters.ray_run import RayEpisodes
from envscaler_mcp.harness.config import RunConfig
from envscaler_mcp.harness.run import run_eval
from envscaler_mcp.harness.rundir import RunDir
from tests.cluster.conftest import killing_one

ray = pytest.importorskip("ray", reason="Ray is the optional extra .[ray]: pip install -e '.[ray]'")

ENVS = ["ecommerce_orders", "library_loans"]


def scored(out: Path) -> list[tuple[str, int, float | None, str]]:
    return sorted((r.scenario_id, r.trial, r.score, r.status) for r in RunDir(out).read_results())


def ray_eval(cfg: RunConfig, out: Path) -> Awaitable[RunDir]:
    """`eval --ray`: the run's episodes on Ray actors."""
    return run_eval(cfg, out, remote=RayEpisodes())


def config(**extra: object) -> RunConfig:
    return RunConfig.model_validate({"envs": ENVS, "agent": "oracle", "transport": "memory", "progress": False,
                                     "limit": 4, "trials": 2, "concurrency": 2, **extra})


def test_oracle_on_ray_scores_like_the_local_run(cluster: None, tmp_path: Path) -> None:
    anyio.run(run_eval, config(), tmp_path / "local")
    anyio.run(ray_eval, config(ray="auto", ray_workers=2), tmp_path / "ray")
    local, on_ray = scored(tmp_path / "local"), scored(tmp_path / "ray")
    assert len(local) == 2 * 4 * len(ENVS)
    assert on_ray == local
    assert all(status == "completed" for *_, status in on_ray)
    # run.json: each worker's own isolation reports, the same layers as the local run's
    local_iso = json.loads((tmp_path / "local" / "run.json").read_text())["isolation"]
    ray_iso = json.loads((tmp_path / "ray" / "run.json").read_text())["isolation"]
    workers = {key.split("/")[0] for key in ray_iso}
    assert len(workers) == 2 and all(w.startswith("worker:") for w in workers)
    for worker in workers:
        assert ray_iso[f"{worker}/validators"] == local_iso["validators"]
    servers = {key.split("/")[1]: report for key, report in ray_iso.items() if "/server:" in key}
    assert set(servers) == {f"server:{env}" for env in ENVS} and all(servers[k] == local_iso[k] for k in servers)


def test_a_worker_lost_mid_run_loses_no_episode(cluster: None, tmp_path: Path) -> None:
    out = tmp_path / "run"
    results = out / "results.jsonl"
    planned = 2 * 4 * len(ENVS)
    # one episode at a time per worker, so the run is still going when the first results land
    with killing_one("EpisodeWorker", results, 60) as killed:
        anyio.run(ray_eval, config(ray="auto", ray_workers=2, concurrency=1), out)
    assert killed and killed[0][1] < planned, "the worker was not stopped mid-run"
    pid = killed[0][0]
    assert not Path(f"/proc/{pid}").exists() or b"zombie" in Path(f"/proc/{pid}/status").read_bytes().lower()
    records = scored(out)
    pairs = [(sid, trial) for sid, trial, *_ in records]
    assert len(pairs) == planned and len(set(pairs)) == planned
    assert all(status == "completed" for *_, status in records)


def test_nothing_imports_ray_unless_asked() -> None:
    import subprocess
    import sys

    code = "import sys, envscaler_mcp.cli, envscaler_mcp.harness.run; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_resume_after_a_driver_crash_runs_only_the_missing_episodes(cluster: None, tmp_path: Path) -> None:
    out = tmp_path / "run"
    anyio.run(ray_eval, config(ray="auto", ray_workers=2), out)
    full = scored(out)
    lines = (out / "results.jsonl").read_bytes().splitlines(keepends=True)
    # the driver died after 5 episodes, in the middle of writing the sixth
    (out / "results.jsonl").write_bytes(b"".join(lines[:5]) + lines[5][:20])
    anyio.run(lambda: run_eval(config(ray="auto", ray_workers=2), out, resume=True, remote=RayEpisodes()))
    assert scored(out) == full


def test_ray_rollout_example_runs_parallel_episodes(cluster: None) -> None:
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "examples" / "ray_rollouts.py"
    spec = importlib.util.spec_from_file_location("ray_rollouts", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = module.rollouts("ecommerce_orders", episodes=4, actors=2, transport="memory")
    assert len(results) == 4
    assert all(r["reward"] == 1.0 and r["steps"] >= 2 for r in results)


def test_cli_without_a_cluster_says_so_in_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {**os.environ, "RAY_ADDRESS": ""}
    proc = subprocess.run(
        [sys.executable, "-m", "envscaler_mcp", "eval", "--env", "ecommerce_orders", "--agent", "oracle",
         "--limit", "1", "--ray", "127.0.0.1:1", "--no-progress", "--out", str(tmp_path / "r")],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "--ray 127.0.0.1:1" in proc.stderr + proc.stdout
    assert not (tmp_path / "r" / "results.jsonl").exists()

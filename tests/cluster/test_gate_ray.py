"""`scenarios check --ray` on a local Ray cluster (loopback, 2 CPUs): the reports of the local gate, results
streamed by the driver one line per scenario, a resumed gate judging only what has no line, and a bad address
in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.conftest import killing_one

pytest.importorskip("ray", reason="Ray is the optional extra .[ray]: pip install -e '.[ray]'")

ENVS = ["flight_bookings", "it_helpdesk"]  # 28 scenarios, two servers


def untimed(value: Any) -> Any:
    """A report without its timings (the only fields two runs of the same gate may differ in)."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k != "duration_s"}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def gate(*args: str) -> tuple[int, list[dict[str, Any]]]:
    """The gate's `--json` run as a command of its own (joining the cluster with `--ray ADDR` and leaving it)."""
    proc = subprocess.run([sys.executable, "-m", "envscaler_mcp", "scenarios", "check", *ENVS, "--json", *args],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    # stdout is the JSON list and nothing else: what Ray's driver prints of the cluster (a worker's death) goes
    # to stderr, and the driver has left the cluster before the list is printed
    return proc.returncode, json.loads(proc.stdout)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_ray_gate_equals_the_local_gate_and_resumes(cluster_address: str, tmp_path: Path) -> None:
    local_code, local = gate()
    ray_results = tmp_path / "ray.jsonl"
    ray_code, on_ray = gate("--ray", cluster_address, "--ray-workers", "2", "--results", str(ray_results))
    assert len(local) == 28 and ray_code == local_code
    assert untimed(on_ray) == untimed(local)  # same reports, same order
    streamed = lines(ray_results)  # one line per scenario, as each came back
    assert sorted((r["env_id"], r["scenario_id"]) for r in streamed) == sorted(
        (r["env_id"], r["scenario_id"]) for r in local)
    assert untimed(sorted(streamed, key=lambda r: (r["env_id"], r["scenario_id"]))) == untimed(
        sorted(local, key=lambda r: (r["env_id"], r["scenario_id"])))

    # stopped after 10 scenarios: the first is marked, to tell a reported line from a judged scenario
    kept = streamed[:10]
    kept[0]["title"] = "judged in the first run"
    ray_results.write_text("".join(json.dumps(r) + "\n" for r in kept))
    code, resumed = gate("--ray", cluster_address, "--ray-workers", "2", "--results", str(ray_results), "--resume")
    assert code == local_code
    marked = next(r for r in resumed if r["scenario_id"] == kept[0]["scenario_id"])
    assert marked["title"] == "judged in the first run"  # reported from its line, not judged again
    marked["title"] = next(r["title"] for r in local if r["scenario_id"] == marked["scenario_id"])
    assert untimed(resumed) == untimed(local)
    after = lines(ray_results)
    assert after[:10] == kept  # the kept lines untouched, the others appended once each
    assert len(after) == 28 and len({(r["env_id"], r["scenario_id"]) for r in after}) == 28


def test_a_worker_lost_mid_gate_loses_no_scenario(cluster_address: str, tmp_path: Path) -> None:
    results = tmp_path / "gate.jsonl"
    # one scenario at a time per worker, so the gate is still going when the first line lands
    with killing_one("ItemWorker", results) as killed:
        code, reports = gate("--ray", cluster_address, "--ray-workers", "2", "--concurrency", "1", "--results",
                             str(results))
    assert killed and killed[0][1] < 28, "the worker was not stopped mid-gate"
    keys = [(r["env_id"], r["scenario_id"]) for r in lines(results)]
    assert len(keys) == 28 and len(set(keys)) == 28  # every scenario once: the lost ones sent again
    assert len(reports) == 28 and all(r["passed"] for r in reports) and code == 0


def test_a_bad_ray_address_is_one_line(tmp_path: Path) -> None:
    results = tmp_path / "gate.jsonl"
    proc = subprocess.run([sys.executable, "-m", "envscaler_mcp", "scenarios", "check", "flight_bookings",
                           "--ray", "127.0.0.1:1", "--results", str(results)],
                          capture_output=True, text=True, env={**os.environ, "RAY_ADDRESS": ""}, timeout=120)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output
    assert [line for line in output.splitlines() if line.strip()] == [
        next(line for line in output.splitlines() if line.startswith("error: "))]
    assert "--ray 127.0.0.1:1" in output and "Traceback" not in output
    assert not results.exists()


def test_a_worker_reads_each_environment_s_skeleton_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Items come one scenario each: the skeleton's free fields and convention are read on a worker's first
    scenario of an environment, not again for every scenario."""
    from envscaler_mcp.adapters import ray_gate
    from envscaler_mcp.catalog.store import get_skeleton

    read: list[str] = []
    real = ray_gate.target_of

    def reading(target: str) -> ray_gate.Target:
        read.append(target)
        return real(target)

    monkeypatch.setattr(ray_gate, "target_of", reading)
    job = ray_gate.GateJob("gate.jsonl")
    first = job._target("flight_bookings")
    assert job._target("flight_bookings") is first and job._target("it_helpdesk").key == "it_helpdesk"
    assert read == ["flight_bookings", "it_helpdesk"]
    assert first.free == list(get_skeleton("flight_bookings").free_fields)

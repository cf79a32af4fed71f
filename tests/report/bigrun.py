"""Test fixture: a run folder of many episodes, cloned from a small finished run's records (ids, trials,
latencies and scores varied; each record padded to about `pad` bytes of transcript)."""

from __future__ import annotations

import shutil
from pathlib import Path

from envscaler_mcp._io import jsonl_line
from envscaler_mcp.harness.rundir import RESULTS_FILE, RunDir


def grow_run(base: Path, path: Path, episodes: int, *, envs: int = 20, pad: int = 8000) -> Path:
    """A copy of the run in `base` with `episodes` records (environment i % envs, 3 trials per scenario)."""
    shutil.copytree(base, path)
    records = RunDir(base).read_results()
    with open(path / RESULTS_FILE, "w", encoding="utf-8") as f:
        for i in range(episodes):
            record = records[i % len(records)].model_dump(mode="json")
            record.update(env_id=f"env{i % envs:03d}", scenario_id=f"s{i // (3 * envs):04d}", trial=i // envs % 3,
                          latency_s=round(0.1 + 0.37 * (i % 7), 3))
            if i % 5 == 0:
                record.update(score=0.5, success=False)
            record["messages"].append({"role": "user", "content": f"note {i} " + "x" * pad})
            f.write(jsonl_line(record))
    return path

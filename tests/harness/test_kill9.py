"""`kill -9` of `eval` mid-run: finished episodes stay, and run.json already says which isolation they ran
under (it is recorded when first known, not only when the run ends)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envscaler_mcp.cli import app
from tests.harness.shop import MINI_SHOP


@pytest.mark.slow
def test_kill_9_keeps_finished_episodes_and_their_isolation(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["eval", "--env", str(MINI_SHOP), "--agent", "oracle", "--transport", "stdio", "--trials", "2",
            "--concurrency", "1", "--out", str(out), "--no-progress"]
    proc = subprocess.Popen([sys.executable, "-m", "envscaler_mcp", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=Path(__file__).resolve().parents[2],
                            start_new_session=True)
    results = out / "results.jsonl"
    deadline = time.monotonic() + 90
    while not (results.exists() and results.read_text().count("\n") >= 1) and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)  # eval, its servers and its validator workers: nothing cleans up
    proc.wait(timeout=30)
    kept = results.read_text().count("\n")
    assert kept >= 1
    manifest = json.loads((out / "run.json").read_text())
    assert "validators" in manifest["isolation"] and "server:mini_shop" in manifest["isolation"]
    assert manifest["isolation"]["validators"]["level"] in ("full", "partial", "off")
    again = CliRunner().invoke(app, [*args, "--resume"])
    assert again.exit_code == 0, again.output
    pairs = [(r["scenario_id"], r["trial"]) for r in map(json.loads, results.read_text().splitlines())]
    assert len(pairs) == len(set(pairs)) and len(pairs) >= kept

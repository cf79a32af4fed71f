"""`eval --workers 2` as a command: SIGTERM ends it with exit 130 and every worker (and what each started) gone,
the finished episodes kept and resumed to a complete run; a command killed with `kill -9` leaves no worker
behind either (each reads end-of-file on its stdin and stops with its servers)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envscaler_mcp.cli import app
from tests.harness.shop import MINI_SHOP
from tests.harness.test_kill9 import _alive, _cmdline, _descendants

pytestmark = pytest.mark.timeout(360)


def _start(out: Path) -> tuple[subprocess.Popen[bytes], list[str], set[int]]:
    args = ["eval", "--env", str(MINI_SHOP), "--agent", "oracle", "--transport", "pipe", "--trials", "30",
            "--concurrency", "2", "--workers", "2", "--out", str(out), "--no-progress"]
    proc = subprocess.Popen([sys.executable, "-m", "envscaler_mcp", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=Path(__file__).resolve().parents[2],
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    results = out / "results.jsonl"
    deadline = time.monotonic() + 90
    while not (results.exists() and results.read_text().count("\n") >= 1) and time.monotonic() < deadline:
        time.sleep(0.02)
    children = _descendants(proc.pid)
    workers = [pid for pid in children if "adapters.worker_main" in _cmdline(pid)]
    assert len(workers) == 2, "the run did not start its two workers: this test proved nothing"
    return proc, args, children


def _all_gone(children: set[int]) -> list[str]:
    deadline = time.monotonic() + 30  # a worker stops its servers first; slower on a loaded machine
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [_cmdline(pid) for pid in children if _alive(pid)]


def _pairs(out: Path) -> list[tuple[str, int]]:
    return [(r["scenario_id"], r["trial"]) for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())]


@pytest.mark.slow
def test_sigterm_stops_the_workers_and_the_run_resumes_complete(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc, args, children = _start(out)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=90) == 130
    assert _all_gone(children) == []
    kept = len(_pairs(out))
    assert kept >= 1
    again = CliRunner().invoke(app, [*args, "--resume"])
    assert again.exit_code == 0, again.output
    pairs = _pairs(out)
    assert len(pairs) == len(set(pairs)) == 60 and kept <= 60


@pytest.mark.slow
def test_a_command_killed_with_kill_9_leaves_no_worker_behind(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc, _args, children = _start(out)
    proc.kill()  # only the command: nothing in it cleans up
    proc.wait(timeout=30)
    assert _all_gone(children) == []

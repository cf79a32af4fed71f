"""`kill -9` of `eval` mid-run: finished episodes stay, and the run folder already says which isolation they ran
under (each report is appended to isolation.jsonl when first known, before the results it covers, and
RunDir.read_manifest reads it with run.json)."""

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
from envscaler_mcp.harness.rundir import RunDir
from tests.harness.shop import MINI_SHOP

# Each test runs `eval` (or `scenarios check`) as a process and waits for it with deadlines of its own (up to 90 s
# for a first result, 60 s to end) before resuming the run in this process: on a loaded machine (load 35) that is
# more than the suite's 120 s per test, which would cut the test before its own deadlines could say what failed.
pytestmark = pytest.mark.timeout(360)


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
    isolation = RunDir(out).read_manifest().isolation  # run.json and what the run appended to isolation.jsonl
    assert "validators" in isolation and "server:mini_shop" in isolation
    assert isolation["validators"].level in ("full", "partial", "off")
    again = CliRunner().invoke(app, [*args, "--resume"])
    assert again.exit_code == 0, again.output
    pairs = [(r["scenario_id"], r["trial"]) for r in map(json.loads, results.read_text().splitlines())]
    assert len(pairs) == len(set(pairs)) and len(pairs) >= kept


def _descendants(pid: int) -> set[int]:
    """Every process below `pid` now (Linux /proc)."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                children = Path(f"/proc/{parent}/task/{task}/children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if child not in found:
                    found.add(child)
                    todo.append(child)
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:200]
    except OSError:
        return f"pid {pid}"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_sigterm_stops_every_child_and_keeps_finished_episodes(tmp_path: Path, sigint: str) -> None:
    """`kill PID` (SIGTERM) of `eval` ends it as Ctrl-C does: exit 130, finished episodes kept, and no server or
    sandbox process it started is left running (by default SIGTERM would end eval alone and orphan them). Also
    when eval was started with SIGINT ignored, as a script's background job is."""
    out = tmp_path / "run"
    args = ["eval", "--env", str(MINI_SHOP), "--agent", "oracle", "--transport", "stdio", "--trials", "30",
            "--concurrency", "1", "--out", str(out), "--no-progress"]
    command = [sys.executable, "-m", "envscaler_mcp", *args]
    if sigint == "ignored":
        command = ["sh", "-c", 'trap "" INT; exec "$@"', "sh", *command]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=Path(__file__).resolve().parents[2],
                            # "default" means default, even when the suite runs with SIGINT ignored
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    results = out / "results.jsonl"
    deadline = time.monotonic() + 90
    while not (results.exists() and results.read_text().count("\n") >= 1) and time.monotonic() < deadline:
        time.sleep(0.02)
    children = _descendants(proc.pid)
    assert children, "eval started no server or sandbox process: this test proved nothing"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 130
    deadline = time.monotonic() + 10  # killed processes take a moment to go on a loaded machine
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [_cmdline(pid) for pid in children if _alive(pid)] == []
    assert results.read_text().count("\n") >= 1


@pytest.mark.slow
def test_a_second_sigterm_still_ends_the_run_with_every_child_and_nothing_lost(tmp_path: Path) -> None:
    """`kill PID; kill PID` (the second while the first is being handled interrupts at once, inside the event
    loop): eval still ends, leaves no server or sandbox process, and what it wrote resumes to a complete run."""
    out = tmp_path / "run"
    args = ["eval", "--env", str(MINI_SHOP), "--agent", "oracle", "--transport", "stdio", "--trials", "4",
            "--concurrency", "2", "--out", str(out), "--no-progress"]
    proc = subprocess.Popen([sys.executable, "-m", "envscaler_mcp", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=Path(__file__).resolve().parents[2],
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    results = out / "results.jsonl"
    deadline = time.monotonic() + 90
    while not (results.exists() and results.read_text().count("\n") >= 1) and time.monotonic() < deadline:
        time.sleep(0.02)
    children = _descendants(proc.pid)
    assert children, "eval started no server or sandbox process: this test proved nothing"
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    # 130, or killed by the second SIGTERM when it came as the interpreter was already exiting
    assert proc.wait(timeout=60) in (130, -signal.SIGTERM)
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [_cmdline(pid) for pid in children if _alive(pid)] == []
    again = CliRunner().invoke(app, [*args, "--resume"])
    assert again.exit_code == 0, again.output
    pairs = [(r["scenario_id"], r["trial"]) for r in map(json.loads, results.read_text().splitlines())]
    assert len(pairs) == len(set(pairs)) == 8


@pytest.mark.slow
def test_sigterm_ends_scenarios_check_and_its_servers(tmp_path: Path) -> None:
    """Every command's event loop goes through the same handling: `scenarios check` over the catalog (servers
    and a validator sandbox) ends on SIGTERM with exit 130 and leaves no process behind."""
    proc = subprocess.Popen([sys.executable, "-m", "envscaler_mcp", "scenarios", "check", "--transport", "http"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            cwd=Path(__file__).resolve().parents[2],
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    children: set[int] = set()
    while len(children) < 2 and time.monotonic() < deadline and proc.poll() is None:
        children |= _descendants(proc.pid)
        time.sleep(0.05)
    assert len(children) >= 2 and proc.poll() is None, "no servers seen while the check ran: this proved nothing"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 130
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [_cmdline(pid) for pid in children if _alive(pid)] == []

"""A run with large states: one validator process, and their buffers given back to the system when freed, in
eval's process and in every server process it starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from envscaler_mcp.catalog.store import ScenarioLine
from envscaler_mcp.harness.config import EnvPlan
from envscaler_mcp.harness.prompts import EnvInfo
from envscaler_mcp.harness.run import large_states, validator_workers
from envscaler_mcp.launch.server_process import server_env
from envscaler_mcp.launch.target import ServerDir

_PROBE = """
import sys
from envscaler_mcp._allocator import give_back_large_buffers
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
if sys.argv[1] == "fixed" and not give_back_large_buffers():
    print("unsupported"); sys.exit(0)
b = bytearray(3 << 20); del b  # a freed mapping: glibc raises its threshold past 3 MB
base = rss()
big, small = [], []
for _ in range(8):
    big.append(bytearray(3 << 20)); big[-1][::4096] = b"x" * len(big[-1][::4096])  # 3 MB, every page touched
    small.append(bytearray(b"y" * (100 << 10)))  # kept after each: the heap cannot shrink past it
del big
print(rss() - base)
"""


def _plan(*lengths: int) -> EnvPlan:
    return EnvPlan(env_id="e", env_info=EnvInfo(name="e"), scenarios=[], scenario_file="f.jsonl",
                   lines={f"s{i}": ScenarioLine(0, n, "d") for i, n in enumerate(lengths)})


def test_large_states_get_one_validator_process() -> None:
    small, large = _plan(120_000, 900_000), _plan(120_000, 3_000_000)
    assert not large_states([small]) and large_states([small, large])
    assert validator_workers(4, [small]) == min(4, os.cpu_count() or 1)
    assert validator_workers(4, [small, large]) == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator, /proc")
def test_freed_large_buffers_leave_the_process() -> None:
    def grown(mode: str) -> str:
        return subprocess.run([sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, check=True,
                              timeout=120).stdout.strip()

    fixed = grown("fixed")
    if fixed == "unsupported":
        pytest.skip("not glibc")
    # 24 MB of 3 MB buffers freed between kept 100 kB ones: given back, only the small ones stay resident
    assert int(fixed) < 2_000_000, (fixed, grown("default"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator, /proc")
def test_a_server_process_gives_freed_large_buffers_back(tmp_path: Path) -> None:
    def grown(env: dict[str, str]) -> int:
        return int(subprocess.run([sys.executable, "-c", _PROBE, "as started"], capture_output=True, text=True,
                                  check=True, timeout=120, env=env).stdout)

    if grown({**os.environ, "GLIBC_TUNABLES": ""}) < 10_000_000:
        pytest.skip("not glibc (freed buffers left the process without any setting)")
    # the environment every launched server (and what it forks) starts with
    assert grown(server_env(ServerDir(path=tmp_path, package="e_mcp"))) < 2_000_000

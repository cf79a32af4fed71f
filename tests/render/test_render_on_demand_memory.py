"""A server rendered on demand for a catalog environment (`scenarios check`, `eval` by env id) goes through the
environment's scenarios one at a time: measured by effect, as the peak RSS of a child process that resolves the
server of an environment with many large scenarios, against one with few."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.qa.test_gate_memory import _home

_RESOLVE = """
import sys
from envscaler_mcp.launch.target import resolve_target
server = resolve_target("mini_shop")
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:")).split()[1]
print(server.path.name, int(hwm) * 1024)
"""


def _peak(home: Path, cache: Path) -> tuple[str, int]:
    """(rendered folder's name, peak RSS in bytes: VmHWM, which unlike ru_maxrss counts nothing from before the
    exec) of a child process resolving mini_shop's server in `home`."""
    env = {**os.environ, "ENVSCALER_MCP_HOME": str(home), "ENVSCALER_MCP_CACHE": str(cache)}
    proc = subprocess.run([sys.executable, "-c", _RESOLVE], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    name, peak = proc.stdout.split()
    return name, int(peak)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_server_rendered_for_an_env_id_holds_one_scenario_at_a_time(tmp_path: Path) -> None:
    few, line = _home(tmp_path, 2)
    many, _ = _home(tmp_path, 6)
    name_few, peak_few = _peak(few, tmp_path / "cache")
    name_many, peak_many = _peak(many, tmp_path / "cache")
    assert name_few.startswith("mini_shop-") and name_many.startswith("mini_shop-") and name_few != name_many
    rendered = (tmp_path / "cache" / "servers" / name_many).rglob("scenarios.json")
    assert sum(f.stat().st_size for f in rendered) > 5 * line  # all six scenarios were rendered
    # Holding the file's scenarios grew the peak by about 3.4 lines per extra scenario (+41 MB for four);
    # one at a time it does not grow with their number (+5 MB).
    assert peak_many - peak_few < 3 * line, (peak_few / 1e6, peak_many / 1e6, line / 1e6)

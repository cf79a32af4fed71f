"""The gate's memory does not grow with the number of scenarios: measured by effect, as the peak RSS of the
`scenarios check` process (and its servers and sandbox) over a set of large states."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envscaler_mcp.catalog.store import load_scenarios, save_scenarios
from tests.harness.shop import MINI_SHOP

STATE_MB = 3


def _home(root: Path, count: int) -> tuple[Path, int]:
    """A data home with mini_shop and `count` scenarios (its two, cycled) whose states hold ~STATE_MB MB of
    shipped orders of other customers; (home, bytes of the largest scenario line)."""
    home = root / f"home{count}"
    (home / "environments" / "mini_shop").mkdir(parents=True)
    shutil.copy(MINI_SHOP / "skeleton.json", home / "environments" / "mini_shop" / "skeleton.json")
    filler = {f"F-{n}": {"order_id": f"F-{n}", "customer": f"filler{n}", "status": "shipped", "total": 1.0,
                         "notes": ["x" * 200]} for n in range(STATE_MB * 1000 * 1000 // 300)}
    base = load_scenarios(MINI_SHOP / "scenarios.jsonl")
    scenarios = []
    for k in range(count):
        sc = base[k % len(base)]
        state = {**sc.initial_state, "orders": {**sc.initial_state["orders"], **filler}}
        scenarios.append(sc.model_copy(update={"initial_state": state, "task": f"{sc.task} (call {k})"}).with_id())
    path = home / "scenarios" / "mini_shop.jsonl"
    save_scenarios(scenarios, path, index=True)
    return home, max(len(line) for line in path.read_bytes().splitlines())


_MEASURE = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:]); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode, file=sys.stderr)")


def _peak_rss(home: Path) -> tuple[int, str]:
    """Peak RSS (bytes) of the largest process of one `scenarios check` run (the gate, a server, a sandbox
    worker), read by an intermediate child of its own with getrusage; and the run's output."""
    proc = subprocess.run([sys.executable, "-c", _MEASURE, sys.executable, "-m", "envscaler_mcp", "scenarios",
                           "check", "--home", str(home), "--transport", "pipe", "--concurrency", "1", "--servers", "1"],
                          capture_output=True, text=True, timeout=1800, env={**os.environ, "COLUMNS": "200"})
    kb, _code = proc.stderr.strip().splitlines()[-1].split()
    return int(kb) * 1024, proc.stdout + proc.stderr


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_gate_holds_one_large_scenario_at_a_time(tmp_path: Path) -> None:
    one, line = _home(tmp_path, 1)
    many, _ = _home(tmp_path, 6)
    peak_one, out_one = _peak_rss(one)
    assert "1/1 scenarios passed the gate" in out_one, out_one
    peak_many, out_many = _peak_rss(many)
    assert "6/6 scenarios passed the gate" in out_many, out_many
    # Holding each scenario's final state in its report (the gate before) grew the gate's process by about 4.5
    # lines per scenario (201 MB against 134 MB); one at a time it grows by under 2 (158 MB). The bound leaves
    # room for the encoded-state caches (bounded by bytes of text, not by scenarios).
    assert peak_many <= peak_one + 3 * 5 * line, (peak_one / 1e6, peak_many / 1e6, line / 1e6)

"""Importing EnvScaler data at scale: a 115-scenario set with ~1.3 MB of state per scenario.

The set is made from a catalog environment exported in EnvScaler's format, its scenarios cycled (with
numbered tasks, so that each is distinct) and their states scaled: every collection of records gets copies
of its records under new keys until the state's JSON reaches --state-kb. Then, each command in its own
process with the project's Python:

* `import envscaler` (wall time, the process's peak RSS and that as a multiple of the scenario file);
* the CLI's start-up (`--help`), which every command below includes;
* `list --home` and `show --home` with the catalog index (what they do now), then with the index removed
  (list counts lines, show parses every scenario: what both did before the index, which parsed every
  scenario to count them);

Usage: python benchmarks/import_scale_bench.py [--env ecommerce_orders] [--scenarios 115] [--state-kb 1300]
       [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from envscaler_mcp.catalog.store import get_skeleton, index_path, scenarios_for
from envscaler_mcp.interop.to_envscaler import export_envscaler


def scaled(state: dict[str, Any], target: int) -> dict[str, Any]:
    """`state` with its record collections (dicts of dicts) grown by renamed copies to about `target` bytes."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in state.items()}
    tables = [k for k, v in out.items() if isinstance(v, dict) and v and all(isinstance(r, dict) for r in v.values())]
    if not tables:
        raise SystemExit("the environment's state has no record collections to scale")
    size, n = len(json.dumps(out)), 0
    while size < target:
        n += 1
        for table in tables:
            originals = list(state[table].items())
            for key, record in originals:
                copy = dict(record)
                out[table][f"{key}_x{n}"] = copy
        size = len(json.dumps(out))
    return out


def make_set(env: str, count: int, state_kb: int, folder: Path) -> tuple[Path, Path]:
    """Write env_metadata.json and scenario_metadata.json of the scaled set; return their paths."""
    skeleton = get_skeleton(env)
    base = scenarios_for(skeleton.id)
    env_items, scenario_items = export_envscaler([(skeleton, base)])
    states = [scaled(item["init_config"], state_kb * 1000) for item in scenario_items]
    items = []
    for i in range(count):
        item = dict(scenario_items[i % len(scenario_items)])
        item["task"] = f"[{i}] {item['task']}"
        item["task_id"] = f"{item['task_id']}-{i}"
        item["init_config"] = states[i % len(states)]
        items.append(item)
    envs_path, scenarios_path = folder / "env_metadata.json", folder / "scenario_metadata.json"
    envs_path.write_text(json.dumps(env_items), encoding="utf-8")
    with scenarios_path.open("w", encoding="utf-8") as f:
        json.dump(items, f)
    return envs_path, scenarios_path


def timed(args: list[str]) -> tuple[float, int, str]:
    """(wall seconds, peak RSS in bytes, stderr tail) of one CLI command in its own process."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "envscaler_mcp", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env={**os.environ, "COLUMNS": "200"})
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(args)} failed: {err[-2000:]}")
    return elapsed, usage.ru_maxrss * 1024, err


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="ecommerce_orders")
    parser.add_argument("--scenarios", type=int, default=115)
    parser.add_argument("--state-kb", type=int, default=1300)
    parser.add_argument("--keep", type=Path, default=None, help="Keep the set and the import in this folder.")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="import-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        start = time.perf_counter()
        envs_path, scenarios_path = make_set(args.env, args.scenarios, args.state_kb, work)
        size = scenarios_path.stat().st_size
        print(f"set: {args.scenarios} scenarios of {args.env}, {size / 1e6:.1f} MB scenario file "
              f"(made in {time.perf_counter() - start:.1f} s)")
        home = work / "home"
        shutil.rmtree(home, ignore_errors=True)
        seconds, rss, _ = timed(["import", "envscaler", "--envs", str(envs_path), "--scenarios",
                                 str(scenarios_path), "--out", str(home)])
        print(f"import: {seconds:.1f} s, peak RSS {rss / 1e6:.0f} MB = {rss / size:.1f}x the scenario file "
              "(goals: <=20 s, <=3x)")
        env_id = get_skeleton(args.env).id  # the export keeps the id, so the import gives it back
        base_s, base_rss, _ = timed(["--help"])
        print(f"CLI start-up (`--help`): {base_s:.2f} s, peak RSS {base_rss / 1e6:.0f} MB")
        rows = []
        for label in ("with the index", "without the index (before)"):
            if label.startswith("without"):
                index_path(home / "scenarios" / f"{env_id}.jsonl").unlink()
            list_s, list_rss, _ = timed(["list", "--home", str(home)])
            show_s, show_rss, _ = timed(["show", env_id, "--home", str(home)])
            rows.append((label, list_s, list_rss, show_s, show_rss))
        print("| list/show | list s | list peak RSS | show s | show peak RSS |")
        print("|---|---|---|---|---|")
        for label, list_s, list_rss, show_s, show_rss in rows:
            print(f"| {label} | {list_s:.2f} | {list_rss / 1e6:.0f} MB | {show_s:.2f} | {show_rss / 1e6:.0f} MB |")
        print("(goal: list/show <=1 s; each includes the CLI's start-up above)")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

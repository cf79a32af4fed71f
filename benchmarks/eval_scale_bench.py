"""Evaluating imported EnvScaler data at scale: time to the first episode, episode set-up, step latency, cache.

The set is the one of import_scale_bench.py (115 scenarios of a catalog environment, each state scaled to
~1.3 MB), imported into a data home with the import's own functions (in this process, not timed here: see
import_scale_bench.py), each scenario given its catalog original's reference solution (EnvScaler's files have
none) so that the oracle can run it. Then `eval --home HOME --env ENV --agent oracle --limit N` runs in its own process
with the project's Python and a private render cache (ENVSCALER_MCP_CACHE), and this script reports:

* time to the first episode: from starting the command to the first result in results.jsonl, minus that
  episode's own latency (so: when it started); and when it was written;
* episode set-up median (the "setup" timing of each episode: creating the episode on the server and listing
  its tools), and the p50/p90 of the state-changing tool calls over HTTP (the oracle's calls to tools whose
  kind is state_change);
* the render cache's size after the run (what the run left in the user's cache);
* the whole command's wall time.

`--before DIR` runs an older checkout's package the same way (PYTHONPATH=DIR, its own cache), interleaved
with this one, and prints the ratios: make DIR with `git archive OLD_COMMIT | tar -x -C DIR`.

`--work DIR` keeps the set, the home and the cache there and reuses them on the next run (making the full set
takes minutes). `--profile FILE` runs the command under cProfile (its numbers are then slower).

Usage: python benchmarks/eval_scale_bench.py [--env ecommerce_orders] [--scenarios 115] [--state-kb 1300]
       [--limit N] [--concurrency 1] [--first-only] [--before OLD_CHECKOUT] [--work DIR] [--profile FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from import_scale_bench import make_set

from envscaler_mcp.catalog.store import get_skeleton, save_scenarios, save_skeleton, scenarios_for
from envscaler_mcp.interop.from_envscaler import import_envscaler


def make_home(env: str, count: int, state_kb: int, work: Path) -> tuple[Path, str]:
    """The imported home of the scaled set (made once per --work folder); (home, env id)."""
    home = work / f"home-{env}-{count}x{state_kb}kb"
    env_id = get_skeleton(env).id
    if (home / "scenarios" / f"{env_id}.jsonl").is_file():
        return home, env_id
    start = time.perf_counter()
    envs_path, scenarios_path = make_set(env, count, state_kb, work)
    print(f"set made in {time.perf_counter() - start:.1f} s "
          f"({scenarios_path.stat().st_size / 1e6:.1f} MB scenario file)", flush=True)
    start = time.perf_counter()
    result = import_envscaler(envs_path, scenarios_path)
    staging = home.with_name(home.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    base = scenarios_for(env_id)
    for skeleton in result.skeletons:
        save_skeleton(skeleton, staging / "environments")
        # EnvScaler's files carry no reference solutions: give each scenario its catalog original's, so that
        # the oracle can run them (item i of the set is a copy of catalog scenario i % len(base)).
        imported = [s.model_copy(update={"reference_solution": base[i % len(base)].reference_solution})
                    for i, s in enumerate(result.scenarios.get(skeleton.id, []))]
        save_scenarios(imported, staging / "scenarios" / f"{skeleton.id}.jsonl", index=True)
    staging.rename(home)
    envs_path.unlink()
    scenarios_path.unlink()
    print(f"imported in {time.perf_counter() - start:.1f} s into {home}", flush=True)
    return home, env_id


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def run_eval(home: Path, env_id: str, limit: int, concurrency: int, cache: Path, out: Path,
             profile: Path | None, first_only: bool = False, source: Path | None = None) -> dict[str, float]:
    """Run `eval` once (with the package in `source` when given: an older checkout); the numbers of this run."""
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, *(["-m", "cProfile", "-o", str(profile)] if profile else []),
               "-m", "envscaler_mcp", "eval", "--home", str(home), "--env", env_id, "--agent", "oracle",
               "--limit", str(limit), "--concurrency", str(concurrency), "--out", str(out), "--no-progress"]
    results = out / "results.jsonl"
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=source,
                            env={**os.environ, "ENVSCALER_MCP_CACHE": str(cache), "COLUMNS": "200",
                                 **({"PYTHONPATH": str(source)} if source else {})})
    first_written = None
    while proc.poll() is None:
        if first_written is None and results.is_file() and results.stat().st_size:
            first_written = time.perf_counter() - start
            if first_only:
                proc.send_signal(signal.SIGINT)  # the run stops cleanly, its finished episode kept
        time.sleep(0.05)
    total = time.perf_counter() - start
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    if proc.returncode not in (0, 3) and not first_only:
        raise SystemExit(f"eval failed ({proc.returncode}): {err[-3000:]}")
    records = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines() if line.strip()]
    if first_written is None:
        first_written = total
    first = records[0]
    writes = _writes(home, env_id)
    setup = [t["seconds"] for r in records for t in r["timings"] if t["kind"] == "setup"]
    steps = [t["seconds"] for r in records for t in r["timings"]
             if t["kind"] == "tool" and t["name"] in writes and not t["is_error"]]
    return {"episodes": len(records), "successes": sum(bool(r.get("success")) for r in records),
            "first_started": first_written - float(first["latency_s"]), "first_written": first_written,
            "setup_median": statistics.median(setup), "step_p50": percentile(steps, 0.5),
            "step_p90": percentile(steps, 0.9), "steps": len(steps), "total": total,
            "cache_bytes": folder_size(cache)}


def _writes(home: Path, env_id: str) -> set[str]:
    skeleton = get_skeleton(str(home / "environments" / env_id))
    return {t.name for t in skeleton.tools if t.kind == "state_change"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="ecommerce_orders")
    parser.add_argument("--scenarios", type=int, default=115)
    parser.add_argument("--state-kb", type=int, default=1300)
    parser.add_argument("--limit", type=int, default=8, help="Scenarios the eval runs (default 8).")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--work", type=Path, default=None, help="Keep (and reuse) the set, home and cache here.")
    parser.add_argument("--first-only", action="store_true",
                        help="Stop each eval once its first result is written (for the time to the first episode "
                        "with a large --limit).")
    parser.add_argument("--before", type=Path, default=None,
                        help="Also run an older checkout's package (a folder holding its envscaler_mcp/ and "
                        "templates/, e.g. from `git archive`), interleaved, and print the ratios.")
    parser.add_argument("--profile", type=Path, default=None, help="Write a cProfile of the eval command here.")
    args = parser.parse_args()
    # A command started in the background by a shell inherits SIGINT ignored, and so would each eval below:
    # restore it, so that --first-only can stop them.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    work = args.work or Path(tempfile.mkdtemp(prefix="eval-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        home, env_id = make_home(args.env, args.scenarios, args.state_kb, work)
        scenario_file = home / "scenarios" / f"{env_id}.jsonl"
        print(f"set: {args.scenarios} scenarios of {env_id}, {args.state_kb} kB states, "
              f"{scenario_file.stat().st_size / 1e6:.1f} MB scenario file; load average "
              f"{os.getloadavg()[0]:.1f}", flush=True)
        versions: list[tuple[str, Path | None]] = [("this checkout", None)]
        if args.before:
            versions.insert(0, ("before", args.before.resolve()))
        runs = []
        for label in ("cold cache", "warm cache"):
            for version, source in versions:
                cache = work / f"cache-{version.replace(' ', '-')}"
                if label == "cold cache":
                    shutil.rmtree(cache, ignore_errors=True)
                numbers = run_eval(home, env_id, args.limit, args.concurrency, cache, work / "run", args.profile,
                                   args.first_only, source)
                runs.append((f"{version}, {label}", numbers))
        print(f"| eval --agent oracle --limit {args.limit} --concurrency {args.concurrency} | first episode "
              "started | first result written | set-up median | state-changing step p50 / p90 (n) | whole command "
              "| render cache after |")
        print("|---|---|---|---|---|---|---|")
        for label, n in runs:
            print(f"| {label} ({n['successes']:.0f}/{n['episodes']:.0f} succeeded) | {n['first_started']:.2f} s "
                  f"| {n['first_written']:.2f} s | {n['setup_median'] * 1000:.1f} ms "
                  f"| {n['step_p50'] * 1000:.2f} / {n['step_p90'] * 1000:.2f} ms ({n['steps']:.0f}) "
                  f"| {n['total']:.1f} s | {n['cache_bytes'] / 1e6:.1f} MB |")
        if args.before:
            for label in ("cold cache", "warm cache"):
                old_n = dict(runs)[f"before, {label}"]
                new_n = dict(runs)[f"this checkout, {label}"]
                ratios = ", ".join(f"{key} {old_n[key] / new_n[key]:.1f}x" for key in
                                   ("first_started", "setup_median", "step_p50", "total", "cache_bytes")
                                   if new_n[key] > 0)
                print(f"before / this checkout, {label}: {ratios}")
        print("(goals: first episode <=10 s, set-up <=50 ms median, state-changing step <=10 ms p50 at load <=4; "
              f"load average now {os.getloadavg()[0]:.1f})")
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

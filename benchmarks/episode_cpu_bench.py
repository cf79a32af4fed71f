"""CPU per oracle episode against the in-process EnvScaler-style replay, pipe and HTTP side by side in one run.

    python benchmarks/episode_cpu_bench.py [--repeat 3] [--concurrency 8] [--env ENV ...] [--workers 2]

Builds on `eval_bench.py`: the same in-process baseline (exec the environment class for each episode, replay
the reference calls, copy `vars()`, exec each validator on a deep copy of the initial state) and the same
`run_eval` rows (oracle agent, every catalog scenario as `eval` plans it, one server per environment started
once, validators in the sandbox with the OS layers on, results.jsonl fsync'd per episode). Each transport first
runs one unmeasured pass that stores the scenarios' reference final states (as a run's first pass does),
then `--repeat` measured passes; pipe and HTTP alternate so both see the same machine.

CPU is counted per process tree, so the numbers mean something on a loaded machine: the harness process
(`getrusage` of itself and of its reaped children), the server processes and the validator zygotes with
their batch processes (`/proc/PID/stat`, reaped children included); the baseline's is its own process time.
Page faults per episode are counted the same way: a count the machine's load does not change, and most of
what a fork and its copy-on-write faults cost (the validators' system time).
Episodes/s against the baseline's (wall time) is printed too: on a loaded machine only the CPU columns hold.
Each ratio is also printed paired by round (a round's transport rows against the replay measured just before
them, median of the rounds): a virtual machine's speed drifts between rounds minutes apart.

With `--workers N` (N > 1) each transport's passes run as `eval --workers N` does (adapters/local_run.py: N worker
processes, each starting its own servers and validator sandbox, `--concurrency` shared by them), start-up
included; the CPU is then that of this process and of the workers with everything they started (reaped
children), not split by part.

With root and a cgroup-v1 cpuacct controller (`--cgroup auto`, the default) this process runs in a cpuacct group
of its own, and each pass's servers and validator zygotes are moved into child groups before it is measured:
a second table then gives each side's whole-tree CPU (user + system, the kernel's time in forks and page
faults and processes reaped inside namespaces included), by kind of process, against the in-process replay's
measured the same way. Without the controller that table is left out, with a note.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import eval_bench
from cpuacct import Tree

from envscaler_mcp.catalog.store import get_skeleton, list_env_ids


def baseline_cpu(plans: list[Any], rounds: int, tree: Tree | None = None) -> dict[str, float]:
    """In-process EnvScaler-style episodes: seconds of this process's CPU and of wall time per episode (and
    of the whole tree's user and system CPU, with `tree`)."""
    pairs = [(get_skeleton(p.env_id), s) for p in plans for s in map(p.full, p.headers())]
    eval_bench.in_process_episode(pairs[0][0].class_source, pairs[0][0].class_name, pairs[0][1])  # warm imports
    if tree is not None:
        tree.settle()
    before = tree.read() if tree is not None else None
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(rounds):
        for sk, s in pairs:
            eval_bench.in_process_episode(sk.class_source, sk.class_name, s)
    n = rounds * len(pairs)
    got = {"cpu": (time.process_time() - cpu) / n, "wall": (time.perf_counter() - wall) / n}
    if tree is not None and before is not None:
        used = tree.read() - before
        got |= {"tree_user": used.user[""] / 1e9 / n, "tree_system": used.system[""] / 1e9 / n}
    return got


def measure(args: argparse.Namespace, tree: Tree | None = None
            ) -> tuple[dict[str, float], dict[str, list[dict[str, Any]]]]:
    env_ids = args.env or list_env_ids()
    plans = eval_bench._plans(env_ids, args.episodes)
    eval_plans = eval_bench._eval_plans(env_ids)
    print(f"catalog: {len(env_ids)} environments, {sum(p.count() for p in plans)} scenarios; "
          f"{os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}", flush=True)
    rows: dict[str, list[dict[str, Any]]] = {"pipe": [], "http": []}
    bases: list[dict[str, float]] = []
    for n in range(args.repeat):
        bases.append(baseline_cpu(plans, args.baseline_rounds, tree))
        for transport in rows:
            levels = [args.concurrency] * (2 if n == 0 else 1)  # pass 1 of the first round stores references
            if args.workers > 1:
                got = [anyio.run(on_workers, eval_plans, transport, args.concurrency, args.episodes, args.workers,
                                 tree) for _ in levels]
            else:
                got = anyio.run(eval_bench.harness, eval_plans, transport, levels, args.episodes, True, True, "auto",
                                tree)
            got[-1]["base"] = bases[-1]  # this round's replay, measured just before (`_paired`)
            rows[transport].extend(got[-1:])
            print(f"round {n + 1}, {transport}: {1000 * got[-1]['cpu_per_episode']:.1f} ms CPU per episode, "
                  f"load {got[-1]['load']:.1f}", flush=True)
    base = {k: statistics.median(b[k] for b in bases) for k in bases[0]}
    return base, rows


async def on_workers(plans: list[Any], transport: str, concurrency: int, episodes: int, workers: int,
                     tree: Tree | None = None) -> dict[str, Any]:
    """One pass of run_eval on `workers` local worker processes (their start-up included)."""
    import tempfile

    from envscaler_mcp.adapters.local_run import LocalEpisodes
    from envscaler_mcp.harness.config import RunConfig
    from envscaler_mcp.harness.run import run_eval
    from envscaler_mcp.harness.seats import Seat

    per_env = max(1, episodes // max(1, len(plans)))
    trials = max(1, -(-per_env // max(p.count() for p in plans)))
    config = RunConfig(envs=[p.env_id for p in plans], agent="oracle", trials=trials, concurrency=concurrency,
                       transport=transport, progress=False, workers=workers)  # type: ignore[arg-type]
    with tempfile.TemporaryDirectory() as tmp:
        before = tree.read() if tree is not None else None
        cpu, t = eval_bench._cpu_seconds([]), time.perf_counter()
        run_dir = await run_eval(config, Path(tmp) / "run", plans=plans, agent=Seat.oracle(),
                                 remote=LocalEpisodes(workers))
        elapsed, cpu = time.perf_counter() - t, eval_bench._cpu_seconds([]) - cpu
        used = tree.read() - before if tree is not None and before is not None else None
        records = run_dir.read_results()
    n = len(records)
    tree_split = None if used is None else {"harness": (used.user[""] / 1e9 / n, used.system[""] / 1e9 / n),
                                            "servers": (0.0, 0.0), "validators": (0.0, 0.0)}
    return {"episodes_per_s": n / elapsed, "cpu_per_episode": cpu / n, "load": os.getloadavg()[0],
            "cpu_split": {"harness": cpu / n, "servers": 0.0, "validators": 0.0},
            "fault_split": None,
            "success_rate": sum(bool(r.success) for r in records) / n, "tree_split": tree_split}


def report(base: dict[str, float], rows: dict[str, list[dict[str, Any]]]) -> None:
    print(f"\nin-process replay (EnvScaler-style), median of rounds: {1000 * base['cpu']:.2f} ms CPU per episode, "
          f"{1 / base['wall']:.1f} episodes/s\n")
    print("| transport | rows | load | CPU per episode (harness + servers + validators) | / in-process CPU "
          "| episodes/s | / in-process episodes/s | success | page faults per episode (harness + servers + validators) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for transport, got in rows.items():
        med = {k: statistics.median(r["cpu_split"][k] for r in got) for k in ("harness", "servers", "validators")}
        cpu = statistics.median(r["cpu_per_episode"] for r in got)
        rate = statistics.median(r["episodes_per_s"] for r in got)
        print(f"| {transport} | {len(got)} | {statistics.median(r['load'] for r in got):.1f} | "
              f"{1000 * cpu:.1f} ms ({1000 * med['harness']:.1f} + {1000 * med['servers']:.1f} + "
              f"{1000 * med['validators']:.1f}) | {cpu / base['cpu']:.2f}x | {rate:.1f} | "
              f"{rate * base['wall']:.2f}x | {100 * min(r['success_rate'] or 0 for r in got):.0f}% | {_faults(got)} |")
    _paired(rows)
    if "tree_user" in base:
        report_tree(base, rows)
    else:
        print("\n(whole-tree CPU not measured: needs root and a cgroup-v1 cpuacct controller)")
    print("\ngoals: CPU per episode <= the in-process replay's (/ in-process CPU <= 1.00x); episodes/s >= 1.5x the "
          "in-process replay's at concurrency 8 (a quiet machine's wall time; medians of three repeats)")


def _paired(rows: dict[str, list[dict[str, Any]]]) -> None:
    """The ratios with each round's transport rows against that round's in-process replay, measured minutes
    apart at most (a virtual machine's speed drifts more than that between rounds), median of the rounds."""
    for transport, got in rows.items():
        if not all("base" in r for r in got):
            continue
        cpu = statistics.median(r["cpu_per_episode"] / r["base"]["cpu"] for r in got)
        rate = statistics.median(r["episodes_per_s"] * r["base"]["wall"] for r in got)
        tree = [(sum(u + s for u, s in r["tree_split"].values()) / (r["base"]["tree_user"] + r["base"]["tree_system"]))
                for r in got if r.get("tree_split") and "tree_user" in r["base"]]
        shown = f", whole tree {statistics.median(tree):.2f}x" if len(tree) == len(got) else ""
        print(f"paired by round, {transport}: CPU {cpu:.2f}x the in-process replay's{shown}, episodes/s {rate:.2f}x "
              f"(each ratio of a round against that round's replay; median of {len(got)})")


def _faults(got: list[dict[str, Any]]) -> str:
    """Median page faults per episode by kind of process (not split with `--workers`)."""
    if not all(r.get("fault_split") for r in got):
        return "-"
    med = {k: statistics.median(r["fault_split"][k] for r in got) for k in ("harness", "servers", "validators")}
    return f"{sum(med.values()):.0f} ({med['harness']:.0f} + {med['servers']:.0f} + {med['validators']:.0f})"


def report_tree(base: dict[str, float], rows: dict[str, list[dict[str, Any]]]) -> None:
    """The whole tree's CPU per episode (cpuacct), user + system, by kind of process."""
    replay = base["tree_user"] + base["tree_system"]
    print(f"\nwhole tree (cpuacct cgroup), user + system ms per episode; in-process replay {1000 * replay:.2f} ms "
          f"({1000 * base['tree_user']:.2f} + {1000 * base['tree_system']:.2f})\n")
    print("| transport | whole tree | / in-process | harness | servers | validators |")
    print("|---|---|---|---|---|---|")
    for transport, got in rows.items():
        parts = {}
        for kind in ("harness", "servers", "validators"):
            parts[kind] = tuple(statistics.median(r["tree_split"][kind][j] for r in got) for j in (0, 1))
        total = statistics.median(sum(u + s for u, s in r["tree_split"].values()) for r in got)
        shown = " | ".join(f"{1000 * (u + s):.1f} ({1000 * u:.1f} + {1000 * s:.1f})" for u, s in parts.values())
        print(f"| {transport} | {1000 * total:.1f} ms | {total / replay:.2f}x | {shown} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="measured passes per transport")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--episodes", type=int, default=170, help="episodes per pass (about; trials fill it)")
    parser.add_argument("--baseline-rounds", type=int, default=3, help="rounds of the catalog per baseline")
    parser.add_argument("--env", action="append", help="environment ids (default: the whole catalog)")
    parser.add_argument("--workers", type=int, default=1, help="local worker processes (eval --workers N)")
    parser.add_argument("--cgroup", choices=("auto", "off"), default="auto",
                        help="whole-tree CPU from a cpuacct cgroup (root and cgroup v1; auto: when available)")
    args = parser.parse_args()
    tree = Tree.create("episode-cpu-bench") if args.cgroup == "auto" else None
    try:
        if tree is not None:
            tree.enter()
        base, rows = measure(args, tree)
    finally:
        if tree is not None:
            tree.remove()
    if not all(r["success_rate"] == 1 for got in rows.values() for r in got):
        raise SystemExit("error: an oracle episode did not succeed; the run measures nothing")
    report(base, rows)


if __name__ == "__main__":
    main()

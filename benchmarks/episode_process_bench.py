"""What an episode per process costs: eval episodes/s, a process per episode vs episodes sharing one, side by side.

    python benchmarks/episode_process_bench.py [--concurrency 8] [--episodes 96] [--rounds 2] [--env ID ...]
                                               [--transports pipe,http] [--isolation on|off|both]

`run_eval` with the oracle agent on the bundled catalog (every scenario with a reference solution), servers
started once per row and their start-up excluded, validators in the sandbox (as eval_bench.py measures it).
Each row is measured with `episode_process="shared"` (a server's episodes in its one process) and "fork" (a
process per episode, forked from the server's zygote: what untrusted environments get), interleaved round by
round so that a change of machine load hits both. Prints a Markdown table and the fork/shared ratios.

`--cycle N` adds what one episode's own process costs: N episodes opened, given one tool call, read and
closed one after the other on one server (pipe, OS layers on), per mode, interleaved in rounds of 10;
median milliseconds per episode.
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

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))

import eval_bench

from envscaler_mcp.catalog.store import list_env_ids


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    plans = eval_bench._plans(args.env or list_env_ids(), args.episodes)
    rows = []
    isolations = {"on": [True], "off": [False], "both": [False, True]}[args.isolation]
    for n in range(args.rounds):
        for transport in args.transports.split(","):
            for isolation in isolations:
                for mode in ("shared", "fork"):
                    [row] = anyio.run(eval_bench.harness, plans, transport, [args.concurrency], args.episodes,
                                      isolation, True, mode)
                    row.update(transport=transport, mode=mode, round=n + 1)
                    rows.append(row)
                    print(f"round {n + 1} {transport} layers {row['isolation']} {mode}: "
                          f"{row['episodes_per_s']:.1f} episodes/s (load {row['load']:.1f}, "
                          f"{row['infra_errors']} infra, success {row['success_rate']:.0%})", file=sys.stderr)
    return rows


async def _cycle(env_id: str, mode: str, n: int) -> list[float]:
    from envscaler_mcp.launch import launch_server

    [plan] = eval_bench._plans([env_id], 1)
    scenario = plan.full(plan.headers()[0])
    call = eval_bench._query_call(env_id)
    times = []
    async with launch_server(env_id, transport="pipe", episode_process=mode) as server:  # type: ignore[arg-type]
        for _ in range(n):
            t = time.perf_counter()
            async with server.episode(scenario.initial_state) as ep:
                await ep.call_tool(*call)
                await ep.final_state()
            times.append(time.perf_counter() - t)
    return times


def cycle(env_id: str, n: int) -> None:
    found: dict[str, list[float]] = {"shared": [], "fork": []}
    for _ in range(max(1, n // 10)):
        for mode in found:
            found[mode] += anyio.run(_cycle, env_id, mode, 10)
    shared, fork = (1000 * statistics.median(found[m]) for m in ("shared", "fork"))
    print(f"\none episode opened, one call, final state, closed ({env_id}, pipe, {len(found['fork'])} each, load "
          f"{os.getloadavg()[0]:.1f}): shared {shared:.1f} ms, fork {fork:.1f} ms, fork - shared {fork - shared:.1f} ms")


def table(rows: list[dict[str, Any]]) -> None:
    print("| transport | OS layers | episodes | shared: episodes/s | fork: episodes/s | fork / shared | "
          "load (1 min) | infra |")
    print("|---|---|---|---|---|---|---|---|")
    keys = sorted({(r["transport"], r["isolation"]) for r in rows}, key=lambda k: (k[0] != "pipe", k[1]))
    for transport, isolation in keys:
        picked = {mode: [r for r in rows if (r["transport"], r["isolation"], r["mode"]) == (transport, isolation, mode)]
                  for mode in ("shared", "fork")}
        rate = {mode: statistics.median(r["episodes_per_s"] for r in found) for mode, found in picked.items()}
        ratios = [f["episodes_per_s"] / s["episodes_per_s"] for s, f in zip(picked["shared"], picked["fork"],
                                                                          strict=True)]
        loads = [r["load"] for found in picked.values() for r in found]
        infra = sum(r["infra_errors"] for found in picked.values() for r in found)
        print(f"| {transport} | {isolation} | {picked['fork'][0]['episodes']} | {rate['shared']:.1f} | "
              f"{rate['fork']:.1f} | {statistics.median(ratios):.2f} (rounds: "
              f"{', '.join(f'{x:.2f}' for x in ratios)}) | {min(loads):.1f}-{max(loads):.1f} | {infra} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--episodes", type=int, default=96, help="episodes per row (about)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of every row, interleaved")
    parser.add_argument("--transports", default="pipe,http")
    parser.add_argument("--isolation", default="on", choices=["on", "off", "both"],
                        help="the OS layers around servers and validators (both: each row with them off and on)")
    parser.add_argument("--env", action="append", help="environment ids (default: the whole catalog)")
    parser.add_argument("--cycle", type=int, default=0, help="episodes of the open-call-close section (0: skip)")
    parser.add_argument("--cycle-env", default="ecommerce_orders")
    args = parser.parse_args()
    print(f"cpus {os.cpu_count()}, load at start {os.getloadavg()[0]:.1f}", file=sys.stderr)
    if args.rounds:
        table(measure(args))
    if args.cycle:
        cycle(args.cycle_env, args.cycle)


if __name__ == "__main__":
    main()

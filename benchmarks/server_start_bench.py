"""CPU per server start: a fresh process against a fork of the server zygote, side by side in one run.

For each transport (pipe, http) and each way of starting (fresh: ENVSCALER_SERVER_ZYGOTE=off; zygote: the
default), the script starts a bundled environment's server `--starts` times, opens one episode on it, calls no
tool, and stops it, alternating the two ways start by start so that the machine's load weighs on both alike.
It reports per start: the CPU time of the server processes (fresh: what this process waited for,
RUSAGE_CHILDREN; zygote: what the zygote waited for, its cutime + cstime in /proc), this process's own CPU
time, and wall time; and the zygote's own one-time start (its CPU time before the first fork).

`--episode-process fork` gives every episode a process of its own (what servers of imported environments
get); PYTHONPATH=<an exported tree> measures that tree's servers with the same script.

Usage: nice -n 10 python benchmarks/server_start_bench.py [--env clinic_appointments] [--starts 10]
       [--transports pipe,http] [--episode-process auto|shared|fork]
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

import anyio

from envscaler_mcp.launch import launch_server
from envscaler_mcp.launch.server_zygote import ZYGOTE_ENV, _Shared

_TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def zygote_cpu(children: bool) -> float:
    """The zygote's own CPU (utime + stime) or what it waited for (cutime + cstime), in seconds."""
    if _Shared.zygote is None:
        return 0.0
    fields = _stat(_Shared.zygote.pid)
    first = 13 if children else 11  # after the name: state is field 0; utime 11, stime 12, cutime 13, cstime 14
    return (int(fields[first]) + int(fields[first + 1])) / _TICK


def own_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def own() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def one_start(env: str, transport: str, episode_process: str) -> None:
    async with launch_server(env, transport=transport,  # type: ignore[arg-type]
                             episode_process=episode_process) as server:  # type: ignore[arg-type]
        async with server.episode():
            pass


def measure(env: str, transport: str, mode: str, episode_process: str = "auto") -> tuple[float, float, float]:
    """(server CPU, harness CPU, wall) of one start."""
    os.environ[ZYGOTE_ENV] = "off" if mode == "fresh" else "on"
    servers = own_children() if mode == "fresh" else zygote_cpu(children=True)
    harness, wall = own(), time.perf_counter()
    anyio.run(one_start, env, transport, episode_process)
    wall = time.perf_counter() - wall
    harness = own() - harness
    if mode == "fresh":
        return own_children() - servers, harness, wall
    deadline = time.monotonic() + 10  # the zygote reaps the server when it has ended: wait for its count
    while (spent := zygote_cpu(children=True) - servers) <= 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    return spent, harness, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="clinic_appointments")
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--transports", default="pipe,http")
    parser.add_argument("--episode-process", default="auto", choices=["auto", "shared", "fork"])
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}; {args.starts} starts of {args.env} per row "
          f"(--episode-process {args.episode_process})")
    print("| transport | start | server CPU / start | harness CPU / start | wall / start |")
    print("|---|---|---|---|---|")
    for transport in args.transports.split(","):
        measure(args.env, transport, "zygote", args.episode_process)  # the zygote's start, first imports: untimed
        measure(args.env, transport, "fresh", args.episode_process)
        totals = {mode: [0.0, 0.0, 0.0] for mode in ("fresh", "zygote")}
        for _ in range(args.starts):
            for mode, total in totals.items():
                for i, value in enumerate(measure(args.env, transport, mode, args.episode_process)):
                    total[i] += value
        for mode, (server, harness, wall) in totals.items():
            n = args.starts
            print(f"| {transport} | {mode} | {server / n * 1000:.0f} ms | {harness / n * 1000:.0f} ms | "
                  f"{wall / n * 1000:.0f} ms |")
        fresh, forked = totals["fresh"][0], totals["zygote"][0]
        print(f"| {transport} | ratio | {fresh / max(forked, 1e-9):.1f}x less CPU per start from the zygote | | |")
    print(f"the zygote's own start (once per harness process): {zygote_cpu(children=False) * 1000:.0f} ms of CPU")


if __name__ == "__main__":
    main()
